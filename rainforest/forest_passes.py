"""The forest's growth passes (:class:`rainforest.storage.PassTask`): counting a pass's jobs,
and keeping every encoded row (RF-Hybrid)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .forest_kernels import count_forest, gather_forest
from .forest_rows import Columns
from .rows import KeptRows, RowBlock
from .storage.arrow_numpy import read_only
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
        count_forest(S, y, read_only(w), np.int64(first_row), self.depth, self.trees, self.keys1, self.keys2,
                     self.thresholds, self.roots, *self.routing, self.job_of_node, self.attr_start, self.attrs,
                     self.slot_off, self.job_base, self.n_channels, state.counts, self.grid,
                     *self.columns.counted.kernel_args_or_none())
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


@dataclass
class Entries:
    """Rows gathered from candidate cells (exact mode, :mod:`rainforest.forest_exact`): per entry its
    cell's candidate number, the row's slot, class code and weight as counted; ``parts`` in the
    order they were read (a pass's blocks, or a worker's pieces in order), or one ``buffer`` with
    each tree's entries from ``tree_at[t]`` on (a pass folded in one state, each tree's count known
    beforehand)."""

    parts: list = field(default_factory=list)
    buffer: tuple | None = None
    tree_at: np.ndarray | None = None
    tree_end: np.ndarray | None = None  # where each tree's entries end in the buffer

    def joined(self) -> tuple:
        """``(cell number, slot, class, weight)``, every part's in order."""
        if self.buffer is not None:
            return self.buffer
        if not self.parts:
            return self.allocate(0)
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(4))

    @staticmethod
    def allocate(n: int) -> tuple:
        return np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int32), np.empty(n)


@dataclass
class ForestGather:
    """A :class:`rainforest.storage.PassTask` gathering the rows of a pass's candidate cells: routed
    as ``counting`` (the pass that counted the jobs) routes them, the entries of
    :func:`rainforest.forest_kernels.gather_forest`.  With ``totals`` (each tree's entries, known from
    the counts; for a pass folded in one state) they are written at once into one buffer; else each
    block's are counted, then written."""

    counting: ForestPass
    job_cells: np.ndarray  # each job's first cell in the flat layout (job_base // channels)
    candidate: np.ndarray  # per cell: its candidate number (int32), -1: not gathered
    totals: np.ndarray | None = None  # per tree of counting.trees

    @property
    def store(self):
        return self.counting.store

    @property
    def order_free(self) -> bool:
        return False  # entries keep the order of their rows

    def new_state(self) -> Entries:
        if self.totals is None:
            return Entries()
        return Entries(buffer=Entries.allocate(int(self.totals.sum())),
                       tree_at=np.concatenate([[0], np.cumsum(self.totals)[:-1]]).astype(np.int64),
                       tree_end=np.cumsum(self.totals).astype(np.int64))

    def update(self, state: Entries, batch: pa.RecordBatch, first_row: int) -> Entries:
        S, y, w = self.counting.columns.encode(batch)
        return self.count(state, S, y, w, first_row)

    def encode(self, batch: pa.RecordBatch, first_row: int) -> ForestPiece:
        return self.counting.encode(batch, first_row)

    def count_piece(self, state: Entries, piece: ForestPiece) -> Entries:
        return self.count(state, piece.rows.S, piece.rows.y, piece.rows.w, piece.first_row)

    def count(self, state: Entries, S, y, w, first_row: int) -> Entries:
        c = self.counting
        args = (S, y, w, np.int64(first_row), c.depth, c.trees, c.keys1, c.keys2, c.thresholds, c.roots, *c.routing,
                c.job_of_node, c.attr_start, c.attrs, c.slot_off, self.job_cells, *c.columns.counted.kernel_args(),
                self.candidate)
        if state.buffer is not None:
            gather_forest(*args, state.tree_at, state.tree_end, True, *state.buffer)
            return state
        tree_at = np.zeros(len(c.trees), np.int64)
        gather_forest(*args, tree_at, tree_at, False, *Entries.allocate(0))  # how many entries each tree has
        n = int(tree_at.sum())
        if n:
            out = Entries.allocate(n)
            tree_end = np.cumsum(tree_at)
            tree_at = tree_end - tree_at
            gather_forest(*args, tree_at, tree_end, True, *out)
            state.parts.append(out)
        return state

    def merge(self, a: Entries, b: Entries) -> Entries:
        if a.buffer is not None or b.buffer is not None:  # totals are given only where one state folds the read
            raise AssertionError("a gathering written at once cannot merge states")
        a.parts += b.parts
        return a
