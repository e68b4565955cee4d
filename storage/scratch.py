"""Scratch folders on local disk: made with their owner's process and machine in the name, so a
folder left by a process killed outright is removed by the next one made beside it.

The spill folder (:mod:`rainforest.spill`) and a SQL source's local copy of its rows
(:mod:`rainforest.storage.row_copy`) are both made here.
"""
from __future__ import annotations

import glob
import hashlib
import os
import secrets
import shutil
import socket
import tempfile

PREFIX = "rainforest-spill-"


def host_tag() -> str:
    """A short tag of this machine: a folder shared by several (NFS) is judged only by its own."""
    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


def pid_alive(pid: int) -> bool:
    """Whether a process of that id runs on this machine (True when unsure)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def remove_stale(parent: str | None) -> list[str]:
    """Remove the scratch folders in ``parent`` (tempfile's default when None) whose owner process,
    on this machine, is gone; return them. Folders of other machines and users stay."""
    parent = tempfile.gettempdir() if parent is None else parent
    removed = []
    for root in glob.glob(os.path.join(glob.escape(parent), f"{PREFIX}*-*-*")):
        pid, host = os.path.basename(root)[len(PREFIX):].split("-")[:2]
        try:
            mine = os.stat(root).st_uid == os.getuid()
        except (OSError, AttributeError):  # gone meanwhile; no uids (Windows)
            continue
        if pid.isdigit() and host == host_tag() and mine and not pid_alive(int(pid)):
            shutil.rmtree(root, ignore_errors=True)
            removed.append(root)
    return removed


def _scratch_name(parent: str | None) -> str:
    """A fresh path for a scratch folder in ``parent`` (tempfile's default when None), named for this
    process and machine, after removing the stale folders of dead processes beside it."""
    remove_stale(parent)
    base = tempfile.gettempdir() if parent is None else parent
    return os.path.join(base, f"{PREFIX}{os.getpid()}-{host_tag()}-{secrets.token_hex(6)}")


def scratch_folder(parent: str | None) -> str:
    """A new, empty, owner-only folder at :func:`_scratch_name`.  Its name is known before it is made,
    so an interrupt (SIGTERM becomes one) landing while it is made removes it: ``mkdtemp``'s name
    is lost with its return, and so was the folder."""
    path = _scratch_name(parent)
    try:
        os.mkdir(path, 0o700)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


def swap_in(new: str, path: str) -> None:
    """Put the scratch file ``new`` where ``path`` is, ``path``'s old contents discarded.

    The old file is removed before the rename, so the rename replaces nothing: ext4 (``auto_da_alloc``)
    starts writing a file's data to disk at once when a rename replaces another, the safety a
    document needs and a scratch file read back within seconds does not; a removed file's dirty pages
    are never written at all."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    os.rename(new, path)
