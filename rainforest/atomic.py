"""Files written whole or not at all: a temporary file in the target's folder, renamed into place.

Every output of the project (models, predictions, plots, exports) goes through here, so a
failure or an interrupt never leaves a half-written file, nor the temporary one.
"""
from __future__ import annotations

import contextlib
import os
import tempfile


def check_writable(path, what: str = "") -> str:
    """Fail, naming the file (as ``what``, e.g. "model") and the folder, when ``path`` cannot be
    written: its folder does not exist, or it is a folder itself. Returns ``path`` as a string."""
    path = os.fspath(path)
    name = f"the {what} {path!r}" if what else repr(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {name}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write {name}: it is a folder")
    return path


@contextlib.contextmanager
def atomic_path(path, suffix: str = ".tmp"):
    """Yield a temporary path beside ``path``; on a clean exit it replaces ``path``, otherwise it
    is removed. Fails at once (:func:`check_writable`) when ``path`` cannot be written."""
    path = check_writable(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_atomic(path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            with open(tmp, "wb") as f:
                f.write(data)
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(data)
