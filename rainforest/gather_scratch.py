"""One read gathering the candidate values of several reads' worth of nodes (issue 13, item 2).

A level's gathering is planned in *groups* (nodes whose gathering fits the room together) and
*runs* (one node's candidate bins, where they exceed the room alone; :mod:`rainforest.exact_search`).
Read one by one, each is a read of the level's rows: at 100M Agrawal rows, 25 reads of a 4 GB
spill for 10 levels.  Here one read serves them all: each block's picked rows (candidate cell,
value, class, weight: 13 bytes a row with value keys) are appended, as they stream by, to the
scratch files of every group their cell belongs to, and each group is then summed from its files
alone, so memory holds one group at a time, as before.  Every cell sees the same blocks and the
same rows as its own read would, so each group's values, and the tree, are the ones the reads
one by one give.

Only for rows this process reads itself (kept in memory, or spilled): on a Dask worker's store
the files would be the worker's, and under ``algorithm="read"`` each group stays a pass of its
own over the source, as before.
"""
from __future__ import annotations

import os
import shutil
from typing import Iterator

import numpy as np

from rainforest.storage.scratch import scratch_folder

from .exact_gather import ValuePass, ValueState, numbered_from_zero, value_pass
from .gather_kernels import dense_cells

_ARRAYS = ("cell", "slot", "class", "weight")  # a picked row's arrays, as ValuePass._add makes them


class CellGroups:
    """Which groups each candidate cell belongs to (a near-winning boundary's bins are in every run of
    their node), as ``group[start[c]:start[c + 1]]`` for cell ``c``."""

    def __init__(self, task: ValuePass, entries: list):
        number = task.cells.number
        cell = np.concatenate([number[idx][rows] for idx, rows in entries]).astype(np.int64)
        group = np.concatenate([np.full(int(rows.sum()), g, np.int64) for g, (_, rows) in enumerate(entries)])
        order = np.argsort(cell, kind="stable")
        self.group = group[order]
        self.start = np.zeros(len(task.cells.high) + 1, np.int64)
        np.cumsum(np.bincount(cell, minlength=len(task.cells.high)), out=self.start[1:])
        self.n_groups = len(entries)

    def rows_by_group(self, cell: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """``(group, rows)`` for every group some of the rows (of cells ``cell``) belong to: the
        positions of its rows, ascending."""
        cell = np.asarray(cell, np.int64)
        n_of = self.start[cell + 1] - self.start[cell]
        row = np.repeat(np.arange(len(cell)), n_of)
        nth = np.arange(len(row)) - np.repeat(np.cumsum(n_of) - n_of, n_of)
        group = self.group[self.start[cell][row] + nth]
        order = np.argsort(group, kind="stable")  # each group's rows stay in row order
        bounds = np.searchsorted(group[order], np.arange(self.n_groups + 1))
        for g in np.flatnonzero(np.diff(bounds)):
            yield int(g), row[order[bounds[g]:bounds[g + 1]]]


class ScatteredPicks:
    """Stands where a read's state keeps its picked rows (``ValueState.pending``): each block's picked
    arrays (cell, slot, class, weight) appended to the files in ``folder`` of every group their
    cell belongs to (``groups``), in row order within a group."""

    def __init__(self, folder: str, groups: CellGroups):
        self.folder, self.groups = folder, groups
        self.rows = np.zeros(groups.n_groups, np.int64)
        self.types: tuple | None = None
        self._files: dict = {}
        self.bytes_written = 0

    def append(self, arrays: tuple) -> None:
        if self.types is None:
            self.types = tuple(a.dtype for a in arrays)
        for g, take in self.groups.rows_by_group(arrays[0]):
            for f, a in zip(self._open(g), arrays):
                if len(a):
                    part = a[take]
                    f.write(part.data)
                    self.bytes_written += part.nbytes
            self.rows[g] += len(take)

    def _open(self, g: int) -> list:
        files = self._files.get(g)
        if files is None:
            files = self._files[g] = [open(self._path(g, name), "wb") for name in _ARRAYS]
        return files

    def _path(self, g: int, name: str) -> str:
        return os.path.join(self.folder, f"group-{g}.{name}")

    def close(self) -> None:
        for files in self._files.values():
            for f in files:
                f.close()

    def load(self, g: int) -> list:
        """Group ``g``'s picked rows, as ``ValueState.pending`` holds them (one block)."""
        if not self.rows[g]:
            return []
        arrays = tuple(np.fromfile(self._path(g, name), dtype) for name, dtype in zip(_ARRAYS, self.types))
        for name in _ARRAYS:
            os.remove(self._path(g, name))  # read once: its pages go now, not with the folder
        return [arrays]


class ScatteredCells:
    """Stands where a read's state keeps the cells each block summed already (``ValueState.summed``):
    ``(cell, slot, counts)`` per block, to every group of each cell, held in memory (a cell of one
    slot in a block, as a heavy value's bin: at most one a candidate cell and block)."""

    def __init__(self, groups: CellGroups):
        self.groups = groups
        self.parts: list[list] = [[] for _ in range(groups.n_groups)]

    def append(self, cells: tuple) -> None:
        cell, slot, counts = cells
        for g, take in self.groups.rows_by_group(cell):
            self.parts[g].append((cell[take], slot[take], counts[take]))


def gather_scattered(supply, make_task, entries: list, shape: tuple, dense: np.ndarray, chunk: list,
                     from_memory: bool, level: int, n_tree_nodes: int, parent: str | None, consume) -> int:
    """The values of each of ``entries`` (``(idx, rows)``: chunk positions, and their rows of flags over
    the AVC-group slots, the candidate cells the entry gathers: the runs of a node share the bins
    beside its near-winning boundaries; ``shape``: the chunk's flags') from one read of the chunk's
    rows (``supply.count`` of a :class:`rainforest.exact_gather.ValuePass` over all of them), handed
    entry by entry to ``consume(entry, values, picked)``, ``values`` numbered as
    :func:`rainforest.exact_gather.exact_splits` takes them; no entry's values are held here while
    the next is summed.  Returns the bytes the scratch files took.  The scratch folder (under
    ``parent``) is removed after the last entry, an error or an interrupt."""
    union = np.zeros(shape, np.bool_)
    for idx, rows in entries:
        union[idx] |= rows
    reading = np.flatnonzero(union.any(axis=1))
    task = value_pass(make_task, union, dense, chunk, reading, n_tree_nodes)
    groups = CellGroups(task, entries)
    folder = scratch_folder(parent)
    try:
        picks, cells = ScatteredPicks(folder, groups), ScatteredCells(groups)
        task.sinks = (picks, cells)
        try:
            state, _ = supply.count(task, f"values of {int(union.sum())} candidate bin(s), {len(entries)} groups",
                                    from_memory, [chunk[k] for k in reading], level)
        finally:
            picks.close()
        if state.dense is not None:  # the dense cells' ranks, summed in place: each to its group
            cells.append(dense_cells(state.dense, task.cells.dense_at, task.cells.first, task.cells.span))
        del state
        for g, (idx, _) in enumerate(entries):
            consume(g, numbered_from_zero(_summed(task, picks, cells, g, union.shape[1]), idx, len(chunk)),
                    int(picks.rows[g]))
        return picks.bytes_written
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _summed(task: ValuePass, picks: ScatteredPicks, cells: ScatteredCells, g: int, n_slots: int):
    """Group ``g``'s values, summed from its files and its cells summed already."""
    one = ValueState.empty(task.level.n_channels, task.level.weighted, task.cells)
    one.pending, one.summed, one.picked = picks.load(g), cells.parts[g], int(picks.rows[g])
    cells.parts[g] = []
    return one.value_counts(n_slots)
