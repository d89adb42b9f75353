"""Owners' secrets (an API connection's auth header) kept encrypted in the database (Fernet: AES-128-CBC with
HMAC-SHA256), under a key that is never stored there: `$YGG_SECRET_KEY_FILE`, or `secret.key` in Ygg's data dir
(made on first use, mode 0600). A backup of the database alone holds no usable secret; losing the key file
loses the secrets (the connections are set up again), never anything else."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken


def key_path() -> Path:
    env = os.environ.get("YGG_SECRET_KEY_FILE")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("ygg")) / "secret.key"


class Vault:
    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else key_path()
        self._fernet: Fernet | None = None

    def _key(self) -> Fernet:
        if self._fernet is None:
            if not self.path.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(Fernet.generate_key())
            self._fernet = Fernet(self.path.read_bytes().strip())
        return self._fernet

    def seal(self, secret: str) -> str:
        return self._key().encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str | None:
        """The secret, or None when it was sealed under another key (the key file was replaced)."""
        try:
            return self._key().decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None


_VAULTS: dict[Path, Vault] = {}


def default() -> Vault:
    """The vault of this process's key file (`key_path`)."""
    path = key_path()
    return _VAULTS.setdefault(path, Vault(path))
