"""The level loop of a forest's growth (:func:`rainforest.grow.run_levels`, the one loop every learner's
growth runs), with jobs (tree, node): :class:`ForestLevels` plans a level's jobs into packs, has each
pack counted by a counter, searches and splits it; the counters are :class:`PassCounter` (a pass over
the data, the spill folder, the rows kept in memory or the Dask workers' store) and
:class:`InBagGroups` (the per-tree copies of in-bag rows grouped by node, :mod:`rainforest.in_bag`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from .forest_passes import Entries
from .in_bag import InBagCopies, count_spans, gather_in_bag, gather_spans, partition_spans
from .nodes import joined_routing
from .plan import pack_jobs
from .target_parts import moments_of_parts


@dataclass
class ForestLevel:
    """One level's plan: its jobs' attributes (``cols``, a row a job), the packs of jobs counted together
    (``chunks``: ranges of the frontier), the passes over the data made, and the next frontier."""

    number: int
    cols: np.ndarray
    chunks: list
    passes: int = 0
    next_frontier: list = field(default_factory=list)


class ForestLevels:
    """A forest's levels as :func:`rainforest.grow.run_levels` drives them: the frontier of jobs
    (tree, node), each level's packs counted by ``counter()`` (a counter a level: a pass's routing
    is the trees as they stand), searched and split by the grower."""

    def __init__(self, grower, frontier: np.ndarray, counter):
        self.grower, self.frontier, self.new_counter = grower, frontier, counter
        self.level = 0
        self.counter = None

    def plan_level(self) -> ForestLevel:
        cols, packs = self.grower.plan(self.frontier)
        self.counter = self.new_counter()
        return ForestLevel(self.level, cols, packs)

    def count_and_search(self, level: ForestLevel, ci: int) -> tuple:
        """Count pack ``ci`` of ``level``: ``(jobs, counts)``, the search's AVC-groups."""
        g = self.grower
        lo, hi = level.chunks[ci]
        jobs = g.layout(self.frontier[lo:hi], level.cols[lo:hi])
        counts, from_data = self.counter.count(g.counted_layout(jobs), level.number)
        if len(g.grid):
            counts = moments_of_parts(counts.reshape(-1, g.count_channels)).reshape(-1)
        level.passes += from_data
        return jobs, counts

    def split(self, level: ForestLevel, jobs, counts) -> None:
        grown, passes = self.grower.split_jobs(jobs, counts, level.next_frontier, self.counter, level.number)
        level.passes += passes
        self.counter.split(jobs, grown)

    def end_level(self, level: ForestLevel) -> None:
        self.grower.note(level.number, level.passes, len(self.frontier))
        self.frontier = np.array(level.next_frontier, np.int64).reshape(-1, 2)  # tree order, then node order
        self.level += 1

    def result(self) -> None:
        return None


class PassCounter:
    """Counts a level's jobs in passes over the data (or over every kept row, from the roots)."""

    def __init__(self, grower):
        self.grower = grower
        self.routing, self.base = joined_routing(grower.trees, grower.columns.n_slots)

    def count(self, jobs, level: int) -> tuple[np.ndarray, bool]:
        return self.grower.count_jobs(jobs, self.routing, self.base, level)

    def gather(self, jobs, candidate: np.ndarray, counts: np.ndarray, entries: np.ndarray,
               level: int) -> tuple[tuple, bool]:
        """The entries of the candidate cells' rows (:mod:`rainforest.forest_exact`; ``entries``: how many
        each job has), by a read routed as the count."""
        return self.grower.gather_jobs(jobs, candidate, entries, self.routing, self.base, level)

    def split(self, jobs, grown: list) -> None:
        pass  # the next level's pass routes the rows again


class InBagGroups:
    """A chunk of trees' copies of their in-bag rows, grouped by node (:mod:`rainforest.in_bag`):
    counts jobs from them, and moves split jobs' rows into their children's groups."""

    def __init__(self, grower, chunk: np.ndarray, copies: InBagCopies):
        self.grower = grower
        self.chunk = chunk
        self.local = np.full(len(grower.trees), -1, np.int64)  # tree -> its place in the copies
        self.local[chunk] = np.arange(len(chunk))
        kept = grower.kept
        self.copies = copies
        n_in_bag = np.zeros(len(chunk), np.int64)
        c = self.copies
        gather_in_bag(kept.S, kept.y, kept.w, grower.keys1[chunk], grower.keys2[chunk], grower.thresholds, c.items,
                      c.weights, c.targets, c.target_at, not c.weighted, n_in_bag, c.task_rows)
        self.span = {(int(t), 0): (0, int(n)) for t, n in zip(chunk, n_in_bag)}  # the roots' groups

    def _spans(self, jobs) -> None:
        """Take the jobs' groups (their first and past-the-last rows) for this level."""
        lo_hi = np.array([self.span.pop((int(t), int(k))) for t, k in zip(jobs.tree, jobs.node)], np.int64)
        self.starts, self.ends = lo_hi[:, 0].copy(), lo_hi[:, 1].copy()

    def count(self, jobs, level: int) -> tuple[np.ndarray, bool]:
        """The AVC-groups of ``jobs`` from their groups of rows (no pass)."""
        self._spans(jobs)
        counts = np.zeros(jobs.size)
        c = self.copies
        count_spans(c.items, c.weights, c.targets, c.target_at, c.width, not c.weighted, self.local[jobs.tree],
                    self.starts, self.ends, jobs.job_of_attr, jobs.attrs, jobs.slot_off, jobs.job_base,
                    self.grower.count_channels, counts, self.grower.grid,
                    *self.grower.columns.counted.kernel_args_or_none())
        return counts, False

    def gather(self, jobs, candidate: np.ndarray, counts: np.ndarray, entries: np.ndarray,
               level: int) -> tuple[tuple, bool]:
        """The entries of the candidate cells' rows (:mod:`rainforest.forest_exact`) from the jobs' groups:
        each job attribute's as many as its candidate cells' row counts say, in row order."""
        c, ch = self.copies, self.grower.n_channels
        job_cells = jobs.job_base // ch
        attr_cells = np.append(job_cells[jobs.job_of_attr] + jobs.slot_off, jobs.size // ch)  # where each starts
        cell_attr = np.repeat(np.arange(len(jobs.attrs)), np.diff(attr_cells))
        rows = np.rint(counts[ch - 1::ch]) * (candidate >= 0)  # each cell's gathered rows
        out_at = np.zeros(len(jobs.attrs) + 1, np.int64)
        np.cumsum(np.bincount(cell_attr, rows, minlength=len(jobs.attrs)).astype(np.int64), out=out_at[1:])
        ends = out_at[1:].copy()
        out = Entries.allocate(int(out_at[-1]))
        at = out_at[:-1].copy()
        gather_spans(c.items, c.weights, c.targets, c.target_at, c.width, not c.weighted, self.local[jobs.tree],
                     self.starts, self.ends, jobs.job_of_attr, jobs.attrs, jobs.slot_off, job_cells,
                     *self.grower.columns.counted.kernel_args(), candidate, at, ends, *out)
        if not np.array_equal(at, ends):
            raise AssertionError("gathered rows differ from the counts of their candidate bins")
        return out, False

    def split(self, jobs, grown: list) -> None:
        """Move the rows of the split jobs ``grown`` (as :meth:`rainforest.forest_grow.ForestGrower.split_jobs` returns them) into
        their children's groups; rows of children that are leaves are dropped."""
        if not grown:
            return
        g = self.grower
        routing, base = joined_routing([g.trees[t] for t in self.chunk], g.columns.n_slots)
        j = np.array([x[0] for x in grown], np.int64)
        nb = np.array([x[1] for x in grown], np.int64)
        going_on = np.zeros((len(j), int(nb.max())), np.bool_)
        for r, (_, _, branches) in enumerate(grown):
            going_on[r, branches] = True
        tree = self.local[jobs.tree[j]]
        node = base[tree] + jobs.node[j]
        starts, ends = self.starts[j], self.ends[j]
        child_start = np.empty((len(j), int(nb.max()) + 1), np.int64)
        c = self.copies
        for lo, hi in pack_jobs(ends - starts, c.scratch_rows):  # groups moved together within the scratch
            partition_spans(c.words, c.items, tree[lo:hi], node[lo:hi], nb[lo:hi], starts[lo:hi], ends[lo:hi],
                            *routing, going_on[lo:hi], c.moved, c.branch, child_start[lo:hi], c.task_rows,
                            numba.get_num_threads())
        for r, (x, _, branches) in enumerate(grown):
            t = int(jobs.tree[x])
            first = g.trees[t].first_child[int(jobs.node[x])]
            for b in branches:
                self.span[(t, first + b)] = (int(child_start[r, b]), int(child_start[r, b + 1]))
