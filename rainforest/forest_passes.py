"""The forest's growth passes (:class:`rainforest.storage.PassTask`): counting a pass's jobs,
and keeping every encoded row (RF-Hybrid)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .forest_kernels import count_forest
from .forest_rows import Columns
from .rows import KeptRows, RowBlock
from .target_parts import NO_GRID


@dataclass
class ForestCounts:
    """What a growth pass returns: the AVC-groups of its jobs, one flat array."""

    counts: np.ndarray


@dataclass
class ForestPiece:
    """Encoded rows a Dask worker keeps for the forest's later passes (:mod:`rainforest.storage.dask_store`):
    a block, and the position of its first row, from which each row's bootstrap multiplicities are drawn."""

    rows: RowBlock
    first_row: int

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes


_NO_NODES = np.empty(0, np.int32)  # a forest's rows stand at no node: every pass routes them from the roots


@dataclass
class ForestPass:
    """A :class:`rainforest.storage.PassTask` counting the AVC-groups of the jobs (tree, node) of one pass.

    ``routing`` holds the forest's concatenated :func:`rainforest.rows.step` arrays; ``depth`` is the
    level of the pass's jobs."""

    columns: Columns
    depth: int
    trees: np.ndarray
    keys1: np.ndarray
    keys2: np.ndarray
    thresholds: np.ndarray
    roots: np.ndarray
    routing: tuple
    job_of_node: np.ndarray
    attr_start: np.ndarray
    attrs: np.ndarray
    slot_off: np.ndarray
    job_base: np.ndarray
    n_channels: int
    size: int
    spill: object = None  # the row store on disk: receives every encoded block of the pass, in row order
    grid: np.ndarray = field(default_factory=lambda: NO_GRID)  # a regressor's exact parts (target_parts.py)
    # a Dask cluster's row store (storage.dask_store.PartitionStore): the first pass encodes each partition
    # where it is read and the workers keep it (encode, count_piece); later passes count what they keep
    store: object = None

    @property
    def order_free(self) -> bool:
        """Whether states merged in any order give the same counts: a regressor's exact parts do."""
        return len(self.grid) > 0

    def new_state(self) -> ForestCounts:
        return ForestCounts(np.zeros(self.size))

    def update(self, state: ForestCounts, batch: pa.RecordBatch, first_row: int) -> ForestCounts:
        S, y, w = self.columns.encode(batch)
        if self.spill is not None:  # every row, kept in row order: its position is its identity
            self.spill(RowBlock(S, y, w, np.zeros(len(y), np.int32)))
        return self.count(state, S, y, w, first_row)

    def encode(self, batch: pa.RecordBatch, first_row: int) -> ForestPiece:
        """A batch encoded as a worker keeps it (the row store's protocol, with :meth:`count_piece`)."""
        S, y, w = self.columns.encode(batch)
        return ForestPiece(RowBlock(S, y, w, _NO_NODES), first_row)

    def count_piece(self, state: ForestCounts, piece: ForestPiece) -> ForestCounts:
        return self.count(state, piece.rows.S, piece.rows.y, piece.rows.w, piece.first_row)

    def count(self, state: ForestCounts, S, y, w, first_row: int) -> ForestCounts:
        count_forest(S, y, w, np.int64(first_row), self.depth, self.trees, self.keys1, self.keys2, self.thresholds,
                     self.roots, *self.routing, self.job_of_node, self.attr_start, self.attrs, self.slot_off,
                     self.job_base, self.n_channels, state.counts, self.grid)
        return state

    def merge(self, a: ForestCounts, b: ForestCounts) -> ForestCounts:
        a.counts += b.counts
        return a


@dataclass
class KeepPass:
    """A :class:`rainforest.storage.PassTask` that keeps every encoded row (the forest's RF-Hybrid) and counts
    nothing: the trees then grow from memory (:mod:`rainforest.in_bag`)."""

    columns: Columns
    kept: KeptRows  # one group, the root (forest_rows.data_rows)

    def new_state(self) -> int:
        return 0

    def update(self, state: int, batch: pa.RecordBatch, first_row: int) -> int:
        S, y, w = self.columns.encode(batch)
        if first_row != self.kept.size:  # a group is filled in row order
            raise RuntimeError("rows kept out of order")
        self.kept.add(RowBlock(S, y, w, np.zeros(len(y), np.int32)))
        return state + len(y)

    def merge(self, a: int, b: int) -> int:
        return a + b
