"""What one process holds for the fits that ran passes in it: the bookkeeping that a Dask worker's
row store (:mod:`rainforest.storage.dask_store`) and its kept batches
(:mod:`rainforest.storage.partition_cache`) share.  Items and files are keyed by ``(fit id, ...)``;
a fit's release removes them, and its folder, and marks it closed, so a late task of it keeps
nothing."""
from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field


@dataclass
class Holdings:
    """Per process: ``items`` (key -> what is kept in memory), ``files`` (key -> a file on this machine's
    disk), the bytes of each fit in memory (``in_memory``) and on disk (``on_disk``), each fit's
    folder (``folders``), the fits released (``closed``), and the lock guarding them all."""

    items: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    in_memory: dict = field(default_factory=dict)
    on_disk: dict = field(default_factory=dict)
    folders: dict = field(default_factory=dict)
    closed: set = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def drop(self, fit_id: str) -> int:
        """Release this process's items and files of ``fit_id``; returns the bytes freed."""
        with self.lock:
            self.closed.add(fit_id)
            for key in [k for k in self.items if k[0] == fit_id]:
                del self.items[key]
            for key in [k for k in self.files if k[0] == fit_id]:
                del self.files[key]
            folder = self.folders.pop(fit_id, None)
            freed = self.in_memory.pop(fit_id, 0) + self.on_disk.pop(fit_id, 0)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        return freed

    def held(self) -> dict:
        """Bytes held per fit id, in memory and (key ``"disk"``) in files: what a test asks the workers
        with ``client.run``."""
        with self.lock:
            out = {k: v for k, v in self.in_memory.items() if v}
            disk = {k: v for k, v in self.on_disk.items() if v}
            if disk:
                out["disk"] = disk
            return out
