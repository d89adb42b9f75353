"""Where a skill is imported from, read on the importer's side (the TUI, the CLI): a folder on disk, or a URL
(of its SKILL.md, or of a .zip of its folder). What is read is sent as the folder's files (`import_skill`), and
the server checks the format; the server itself fetches nothing for an import."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import httpx

from .format import FILE_LIMIT, TOTAL_LIMIT, SkillError, read_folder


async def read_source(source: str, client: httpx.AsyncClient | None = None) -> tuple[str, dict[str, str]]:
    """(the folder's name, its files) of a skill at a path or URL; SkillError when it cannot be read."""
    source = source.strip()
    if urlsplit(source).scheme in ("http", "https"):
        return await _from_url(source, client)
    path = Path(source).expanduser()
    if path.is_file() and path.name == "SKILL.md":
        path = path.parent
    if not path.is_dir():
        raise SkillError(f"{source} is neither a skill's folder nor an http(s) URL")
    return path.resolve().name, read_folder(path)


async def _from_url(url: str, client: httpx.AsyncClient | None) -> tuple[str, dict[str, str]]:
    own = client is None
    client = client or httpx.AsyncClient(timeout=15.0, follow_redirects=True)
    try:
        r = await client.get(url)
    except httpx.HTTPError as e:
        raise SkillError(f"could not fetch {url}: {type(e).__name__}") from None
    finally:
        if own:
            await client.aclose()
    if r.status_code >= 400:
        raise SkillError(f"{url} answered {r.status_code}")
    if len(r.content) > TOTAL_LIMIT:
        raise SkillError(f"{url} is larger than a skill may be")
    parts = PurePosixPath(urlsplit(url).path)
    if parts.suffix == ".zip" or r.content[:4] == b"PK\x03\x04":
        return _from_zip(r.content, parts.stem)
    folder = parts.parent.name if parts.name == "SKILL.md" else parts.stem
    return folder, {"SKILL.md": r.text}


def _from_zip(data: bytes, stem: str) -> tuple[str, dict[str, str]]:
    """A zipped folder: SKILL.md at its top, or in the one folder at its top (named as the skill)."""
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise SkillError("the archive is not a valid zip") from None
    names = [n for n in z.namelist() if not n.endswith("/")]
    tops = {n.split("/", 1)[0] for n in names}
    prefix, folder = ("", stem) if "SKILL.md" in names else (f"{next(iter(tops))}/", next(iter(tops))) \
        if len(tops) == 1 else ("", stem)
    files = {}
    for n in names:
        if not n.startswith(prefix):
            continue
        info = z.getinfo(n)
        if info.file_size > FILE_LIMIT:
            raise SkillError(f"{n} is larger than {FILE_LIMIT // 1024} KiB")
        try:
            files[n[len(prefix):]] = z.read(n).decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError(f"{n} is not text (UTF-8); Ygg keeps text files only") from None
    return folder, files
