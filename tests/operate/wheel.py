"""Build the wheel once per test session (it takes seconds): tests that look inside it or install it share it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_built: list[Path] = []


def built_wheel(tmp: Path) -> Path:
    if _built and _built[0].exists():
        return _built[0]
    out = tmp / "dist"
    scratch = ROOT / "build"  # setuptools builds here: removed after, unless it was there before
    existed = scratch.exists()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    if not existed:
        shutil.rmtree(scratch, ignore_errors=True)
    (wheel,) = out.glob("ygg-*.whl")
    _built[:] = [wheel]
    return wheel
