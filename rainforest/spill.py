"""RF-Write's spill folder: encoded rows written once per level, partitioned by frontier node.

When a level's AVC-groups need several passes, the first of them also writes
every row still growing, as slots (:mod:`rainforest.rows`), to one Parquet
file per group of nodes counted together; the level's other passes, and the
next levels, read only the partitions holding their nodes.  The folder is a
fresh temporary directory, removed when growth ends, fails or is interrupted (Ctrl-C,
and SIGTERM or SIGHUP, which raise an interrupt while the folder lives, see
:mod:`rainforest.signals`).  Its name carries its owner's process id and machine, so a
folder left by a process killed outright is removed by the next spill made beside it.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import socket
import tempfile
from typing import Iterator

import numpy as np
import pyarrow.parquet as pq

from .atomic import pid_alive
from .rows import RowBlock
from .signals import termination_as_interrupt

PREFIX = "rainforest-spill-"


def _host() -> str:
    """A short tag of this machine: a spill folder shared by several (NFS) is judged only by its own."""
    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


def remove_stale(parent: str | None) -> list[str]:
    """Remove the spill folders in ``parent`` (tempfile's default when None) whose owner process,
    on this machine, is gone; return them. Folders of other machines and users stay."""
    parent = tempfile.gettempdir() if parent is None else parent
    removed = []
    for root in glob.glob(os.path.join(glob.escape(parent), f"{PREFIX}*-*-*")):
        pid, host = os.path.basename(root)[len(PREFIX):].split("-")[:2]
        try:
            mine = os.stat(root).st_uid == os.getuid()
        except (OSError, AttributeError):  # gone meanwhile; no uids (Windows)
            continue
        if pid.isdigit() and host == _host() and mine and not pid_alive(int(pid)):
            shutil.rmtree(root, ignore_errors=True)
            removed.append(root)
    return removed


class Spill:
    """A temporary folder of partitions ``gen-G/part-P.parquet`` (the latest generation ``G``).

    Parameters
    ----------
    parent : str or None
        Where the folder is made (``tempfile``'s default when None).
    n_attributes : int
        Slot columns per row.
    """

    def __init__(self, parent: str | None, n_attributes: int):
        remove_stale(parent)
        self._signals = contextlib.ExitStack()  # closed by remove(): the handlers live as long as the folder
        self._signals.enter_context(termination_as_interrupt(only_default=True))
        self.root = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{_host()}-", dir=parent)
        self.n_attributes = n_attributes
        self.generation = -1
        self.parts: set[int] = set()  # partitions of the current generation
        self._writers: dict[int, pq.ParquetWriter] = {}
        self._next: str | None = None
        self.bytes_written = 0
        self.reads = 0

    def _file(self, generation: int, part: int) -> str:
        return os.path.join(self.root, f"gen-{generation}", f"part-{part}.parquet")

    def writer(self, part_of_node: np.ndarray):
        """A callable writing each row of a block to partition ``part_of_node[node]`` (rows whose
        node maps to -1 are dropped) of a new generation; :meth:`commit` makes it current."""
        self._next = os.path.join(self.root, f"gen-{self.generation + 1}")
        os.makedirs(self._next)

        def write(rows: RowBlock) -> None:
            part = part_of_node[rows.node]
            for p in np.unique(part):
                if p < 0:
                    continue
                mine = part == p
                batch = (rows if mine.all() else rows.take(mine)).to_arrow()  # one partition: no copy
                w = self._writers.get(int(p))
                if w is None:
                    w = pq.ParquetWriter(self._file(self.generation + 1, int(p)), batch.schema, compression="lz4")
                    self._writers[int(p)] = w
                w.write_batch(batch)
        return write

    def commit(self) -> None:
        """Close the new generation's files, make it current and delete the previous one."""
        for w in self._writers.values():
            w.close()
        old = os.path.join(self.root, f"gen-{self.generation}")
        self.generation += 1
        self.parts = set(self._writers)
        self._writers = {}
        self._next = None
        self.bytes_written += sum(os.path.getsize(self._file(self.generation, p)) for p in self.parts)
        if os.path.isdir(old):
            shutil.rmtree(old)

    def read(self, parts, batch_size: int) -> Iterator[RowBlock]:
        """The rows of the given partitions of the current generation, in row order per partition."""
        self.reads += 1
        for p in sorted(parts):
            if p not in self.parts:
                continue  # no growing row reached this partition's nodes
            f = pq.ParquetFile(self._file(self.generation, p))
            for batch in f.iter_batches(batch_size=batch_size):
                yield RowBlock.from_arrow(batch, self.n_attributes)

    def rows_in(self, parts) -> int:
        return sum(pq.ParquetFile(self._file(self.generation, p)).metadata.num_rows
                   for p in parts if p in self.parts)

    def remove(self) -> None:
        for w in self._writers.values():
            try:
                w.close()
            except Exception:  # already failing; the folder goes anyway
                pass
        self._writers = {}
        shutil.rmtree(self.root, ignore_errors=True)
        self._signals.close()

