"""Files written whole or not at all: a temporary file in the target's folder, renamed into place.

Every output of the project (models, predictions, plots, exports) goes through here, so a
failure or an interrupt never leaves a half-written file, nor the temporary one. The file gets
the mode a plain ``open`` would give it (``0666`` less the umask), not the temporary file's
``0600``. A temporary file carries its writer's process id in its name, so one left by a
process that was killed outright (SIGKILL, a crash) is removed by the next write to the same
target.
"""
from __future__ import annotations

import contextlib
import glob
import os
import tempfile

from rainforest.signals import raise_pending
from rainforest.storage.scratch import pid_alive


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: read by setting (briefly, not thread-safe)
    os.umask(mask)
    return mask


def _temp_prefix(path: str) -> str:
    return f".{os.path.basename(path)}.{os.getpid()}-"


def _remove_stale_temporaries(path: str) -> None:
    """Remove the temporary files of ``path`` whose writer is gone."""
    folder, base = os.path.split(os.path.abspath(path))
    for tmp in glob.glob(os.path.join(glob.escape(folder), f".{glob.escape(base)}.*-*")):
        pid = os.path.basename(tmp)[len(base) + 2:].split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def check_writable(path, what: str = "") -> str:
    """Fail, naming the file (as ``what``, e.g. "model") and the folder, when ``path`` cannot be
    written: its folder does not exist or cannot be written, or it is a folder itself. Returns
    ``path`` as a string. The folder is tried by creating (and removing) a file in it, so the
    answer holds for any user and any file system."""
    path = os.fspath(path)
    name = f"the {what} {path!r}" if what else repr(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {name}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write {name}: it is a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".probe", dir=folder)
    except OSError as exc:
        raise PermissionError(f"cannot write {name}: the folder {folder!r} is not writable "
                              f"({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)
    return path


@contextlib.contextmanager
def atomic_path(path, suffix: str = ".tmp"):
    """Yield a temporary path beside ``path``; on a clean exit it replaces ``path``, with the mode
    the umask gives new files; otherwise it is removed. Fails at once (:func:`check_writable`),
    naming ``path``, when ``path`` cannot be written."""
    path = check_writable(path)
    _remove_stale_temporaries(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=suffix, dir=folder)
    except OSError as exc:
        raise PermissionError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        yield tmp
        raise_pending()  # a stop request a finaliser swallowed: no file takes the name
        os.chmod(tmp, 0o666 & ~_umask())
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
