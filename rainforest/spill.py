"""RF-Write's spill folder: encoded rows written once per level, partitioned by frontier node.

When a level's AVC-groups need several passes, the first of them also writes
every row still growing, as slots (:mod:`rainforest.rows`), to one Parquet
file per group of nodes counted together; the level's other passes, and the
next levels, read only the partitions holding their nodes.  The folder is a
fresh temporary directory, removed when growth ends, fails or is interrupted.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Iterator

import numpy as np
import pyarrow.parquet as pq

from .rows import RowBlock


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
        self.root = tempfile.mkdtemp(prefix="rainforest-spill-", dir=parent)
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

