"""Exact splits for a forest's trees in bounded memory: wide numeric attributes counted in bins, the
rows of the few candidate bins gathered, the bins refined (issue 13, item 4).

A forest with ``max_bins=None`` counted one slot per distinct value, so a node's AVC-group followed
the data's distinct values (10M rows: a BudgetError).  It now counts as the tree does
(:mod:`rainforest.count_bins`: wide attributes in bins of ranks, keyed ones in their tables' bins)
and finds each job's exact split as :mod:`rainforest.exact_search` finds a node's:

1. each job (tree, node) that searches a binned attribute has its candidate bins marked over its
   own layout, its best split over the bins the target (:func:`mark_candidates`);
2. the rows of candidate cells are gathered where the level counted them: from each tree's copies
   of its in-bag rows (:func:`rainforest.in_bag.gather_spans`), or by a read of the rows kept in
   memory, the spill folder, the workers' store or the data, routed as the count routed them
   (:class:`rainforest.forest_passes.ForestGather`); the gathering's entries are planned from the
   counts (a candidate cell's rows are its row-count channel) to fit a quarter of the budget, a
   read per part, a job too large alone an attribute a read, an attribute too large alone in runs
   of its bins (:func:`_attribute_split`);
3. each (cell, value) is summed in row order, as a slot per value holds it, and the refined groups
   are searched (:func:`rainforest.exact_gather.exact_splits`), jobs with the same attributes in
   the same order (one layout) together.

Bootstrap multiplicities are whole numbers, so bins leave every sum as it was: the trees are those
one slot per value grows, JSON for JSON.
"""
from __future__ import annotations

import numba
import numpy as np

from .count_bins import CountedSlots, counted_slots
from .criteria import node_totals
from .exact_bins import ValueCounts, boundary_mask, candidate_runs
from .exact_gather import better_split, exact_splits
from .plan import bins_allowed, pack_jobs
from .split_bounds import candidate_bins, tolerance


def entry_bytes(n_channels: int) -> int:
    """Bytes a gathered entry holds at the gathering's peak, while its node is refined: the entry (cell
    number, slot, class, weight: 24) and its place in the sort (8) go, its summed row stays (number,
    slot and ``n_channels`` counts), with its cell and job (16) and its refined slot
    (:func:`rainforest.exact_bins.refine`: counts, low, high, origin and the slot's position, 32 + 8
    a channel) beside them."""
    return max(24 + 8, 12 + 16 + 32 + 8 * n_channels) + 12 + 8 * n_channels


def forest_counted_slots(columns, source, params, avc_budget: int, max_features: int) -> CountedSlots:
    """What a forest's AVC-groups count: exact mode's wide attributes in bins (the tree's rule,
    :func:`rainforest.plan.counted_slots_for`) where the rows are read again cheaply (kept, spilled,
    or kept by the workers), or where one node's AVC-group over one slot per value would not fit
    ``avc_budget``; else one slot per value, as before."""
    schema = columns.column_schema
    if not bins_allowed(columns.schema, columns.class_weight, source):
        return counted_slots(schema, None)
    binned = counted_slots(schema, params.exact_bins)
    if not binned.binned.any() or params.hybrid or params.write:
        return binned
    dense = counted_slots(schema, None)
    widest = np.sort(dense.n_counted.astype(np.int64) + 1)[-max_features:].sum()
    return dense if widest * (columns.schema.label.n_channels + 1) * 8 <= avc_budget else binned


@numba.njit(cache=True, nogil=True)
def sum_entries(number, value, cls, weight, n_cells, n_classes, out_number, out_value, out_counts):
    """Sum the entries into one row per (candidate cell, value), in that order: the class weights,
    then the row count; returns how many rows.  A cell's entries are summed in the order they were
    gathered (a counting sort by cell, then a stable sort by value within each cell): the order in
    which the counts summed them."""
    start = np.zeros(n_cells + 1, np.int64)
    for e in range(number.shape[0]):
        start[number[e] + 1] += 1
    for c in range(n_cells):
        start[c + 1] += start[c]
    at = start[:-1].copy()
    order = np.empty(number.shape[0], np.int64)
    for e in range(number.shape[0]):
        order[at[number[e]]] = e
        at[number[e]] += 1
    g = -1
    for c in range(n_cells):
        seg = order[start[c]:start[c + 1]]
        if seg.shape[0] > 32:
            seg = seg[np.argsort(value[seg], kind="mergesort")]
        else:  # a stable insertion sort, in place: most cells hold a few rows
            for r in range(1, seg.shape[0]):
                e = seg[r]
                k = r
                while k > 0 and value[seg[k - 1]] > value[e]:
                    seg[k] = seg[k - 1]
                    k -= 1
                seg[k] = e
        for e in seg:
            if g < 0 or out_number[g] != c or out_value[g] != value[e]:
                g += 1
                out_number[g] = c
                out_value[g] = value[e]
            out_counts[g, cls[e]] += weight[e]
            out_counts[g, n_classes] += 1.0
    return g + 1


def summed(entries: tuple, n_cells: int, n_channels: int) -> tuple:
    """``(cell number, value, counts)`` of every distinct (candidate cell, value) of the entries, in order."""
    number, value, cls, weight = entries
    out_number, out_value = np.empty(len(number), np.int32), np.empty(len(number), np.int64)
    out_counts = np.zeros((len(number), n_channels))
    n = sum_entries(number, value, cls, weight, n_cells, n_channels - 1, out_number, out_value, out_counts)
    return out_number[:n], out_value[:n], out_counts[:n]


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The positions of the ranges ``starts[i]:ends[i]``, one after another."""
    lengths = ends - starts
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))


@numba.njit(cache=True, parallel=True, nogil=True)
def mark_candidates(counts, todo, job_base, job_cells, attr_start, offsets, kinds, binned, n_channels, criterion,
                    targets, vmin, vmax, out):
    """:func:`rainforest.exact_bins.candidate_mask` of each job of ``todo`` over its own layout (the
    search's ``offsets``, a job's attributes' ``kinds`` and ``binned`` flags), the boundary search's
    score ``targets[j]`` its target, the bins beside a boundary that may win marked too (``vmin`` /
    ``vmax``: -inf / inf, the bins' values are not known): flags in ``out`` from ``job_cells[j]`` on."""
    n_classes = n_channels - 1
    for i in numba.prange(todo.shape[0]):
        j = todo[i]
        first, last = attr_start[j], attr_start[j + 1]
        offs = offsets[first + j:last + j + 1]
        size = offs[last - first]
        block = counts[job_base[j]:job_base[j] + size * n_channels].reshape((size, n_channels))
        total, n_total, wn, parent_imp = node_totals(block, offs, 0, n_classes, True, criterion)
        target = targets[j]
        tol = tolerance(target) if target != -np.inf else 0.0
        for q in range(last - first):
            if kinds[first + q] != 0 or not binned[first + q]:
                continue
            lo = offs[q]
            m = offs[q + 1] - lo - 1
            candidate_bins(block, vmin[:m], vmax[:m], lo, m, n_classes, True, total, wn, parent_imp, criterion,
                           target, tol, True, out[job_cells[j] + lo:job_cells[j] + lo + m])


def exact_jobs(grower, jobs, counts: np.ndarray, score: np.ndarray, counter, level: int) -> tuple[dict, int]:
    """The exact splits of the pack's jobs that search a binned attribute (``score``: each job's best
    over the bins, -inf where none is valid): per job index ``None`` (no valid split) or
    :func:`rainforest.exact_gather.exact_splits`' tuple (the attribute's position among the job's, its
    slots as the rows hold them); and the passes over the data the gathering made."""
    g = grower
    counted = g.columns.counted
    ch, nc = g.n_channels, g.label_channels
    n_jobs = len(jobs.tree)
    cols = jobs.attrs.reshape(n_jobs, -1)  # every job searches max_features attributes
    todo = np.flatnonzero(counted.binned[cols].any(axis=1))
    if not len(todo):
        return {}, 0
    job_cells = jobs.job_base // ch
    candidate = np.zeros(jobs.size // ch, np.bool_)
    widest = int(jobs.job_slots.max())
    mark_candidates(counts, todo, jobs.job_base, job_cells, jobs.attr_start, jobs.offsets,
                    g.columns.kinds[jobs.attrs], counted.binned[jobs.attrs], ch, g.crit, score,
                    np.full(widest, -np.inf), np.full(widest, np.inf), candidate)
    # jobs of one group share a layout (the same attributes, in order) and a leaf weight: refined together
    min_weight = g.min_weight_leaf[jobs.tree]
    _, group_of = np.unique(np.column_stack([cols[todo], min_weight[todo].view(np.int64)]), axis=0,
                            return_inverse=True)
    job_group = np.full(n_jobs, -1, np.int64)
    job_group[todo] = np.asarray(group_of).ravel()
    rows = np.zeros(n_jobs, np.int64)  # each job's entries: its candidate cells' rows (the row-count channel)
    held = np.flatnonzero(candidate)
    np.add.at(rows, np.searchsorted(job_cells, held, side="right") - 1,
              np.rint(counts[held * ch + nc]).astype(np.int64))
    found, passes, room = {}, 0, g.budget // 4
    for lo, hi in pack_jobs(rows[todo] * entry_bytes(ch), room):  # each part one gathering read
        part = todo[lo:hi]
        if len(part) == 1 and rows[part[0]] * entry_bytes(ch) > room:  # one attribute a read
            j = int(part[0])
            found[j], p = _attribute_at_a_time(g, jobs, counts, candidate, j, score[j], counter, level)
            passes += p
            continue
        cells = held
        if lo > 0 or hi < len(todo):
            cells = held[np.isin(np.searchsorted(job_cells, held, side="right") - 1, part)]
        cell, value, cell_counts, from_data = _gathered(g, jobs, counts, cells, counter, level)
        passes += from_data
        job = np.searchsorted(job_cells, cell, side="right") - 1
        job_start = np.searchsorted(job, np.arange(n_jobs + 1))  # a job's cells, in order
        part_group = job_group[part]
        position = np.full(n_jobs, -1, np.int64)
        for gi in np.unique(part_group):
            J = part[part_group == gi]
            position[J] = np.arange(len(J))
            v = ranges(job_start[J], job_start[J + 1])
            values = ValueCounts(position[job[v]], cell[v] - job_cells[job[v]], value[v], cell_counts[v])
            avc, offs, attrs = _group_avc(jobs, counts, J, ch)
            cand = candidate[job_cells[J][:, None] + np.arange(offs[-1])]
            splits = exact_splits(avc, cand, values, offs, g.columns.kinds[attrs], counted.binned[attrs], nc, True,
                                  g.crit, g.params, float(min_weight[J[0]]), 0)
            found.update(zip(J.tolist(), splits))
    return found, passes


def _gathered(g, jobs, counts: np.ndarray, cells: np.ndarray, counter, level: int) -> tuple:
    """The candidate cells ``cells``' rows gathered by one read and summed: ``(cell, value, counts)`` of
    every distinct (cell, value), in order, and whether the read was a pass over the data."""
    ch = g.n_channels
    if not len(cells):  # no candidate bin (jobs, or a categorical attribute): nothing to read
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, ch)), False
    job_cells = jobs.job_base // ch
    expected = np.zeros(len(jobs.tree), np.int64)  # each job's entries: its cells' rows (the row-count channel)
    np.add.at(expected, np.searchsorted(job_cells, cells, side="right") - 1,
              np.rint(counts[cells * ch + ch - 1]).astype(np.int64))
    number = np.full(jobs.size // ch, -1, np.int32)  # each candidate cell's number, in cell order
    number[cells] = np.arange(len(cells), dtype=np.int32)
    entries, from_data = counter.gather(jobs, number, counts, expected, level)
    del number
    g.stats.candidate_reads += 1
    g.stats.candidate_rows += len(entries[0])
    which, value, cell_counts = summed(entries, len(cells), ch)
    del entries
    return cells[which], value, cell_counts, from_data


def _attribute_at_a_time(g, jobs, counts: np.ndarray, candidate: np.ndarray, j: int, target: float, counter,
                         level: int) -> tuple:
    """Job ``j``'s exact split when its candidate rows exceed the gathering's room: each attribute's
    gathered and searched on its own (:func:`_attribute_split`), the best kept by the search's rule
    (the higher score; on a tie the attribute searched first).  Whole-number weights make a node's
    totals the same from any attribute's slots, so each attribute scores as in the search over all of
    them.  An attribute whose best does not reach ``target`` (the best boundary split of them all,
    which the winner reaches) cannot win: its boundary's bins were not gathered, and it is passed over."""
    best, passes = None, 0
    for q in range(int(jobs.attr_start[j + 1] - jobs.attr_start[j])):
        split, p = _attribute_split(g, jobs, counts, candidate, j, q, target, counter, level)
        passes += p
        if split is not None and (best is None or split[0] > best[0]):
            best = (split[0], q) + tuple(split[2:])
    return best, passes


def _attribute_split(g, jobs, counts: np.ndarray, candidate: np.ndarray, j: int, q: int, target: float, counter,
                     level: int) -> tuple:
    """The exact split of job ``j`` over its ``q``-th attribute alone.  Where that attribute's candidate
    rows exceed the room too (a node its attributes split only weakly makes most bins candidates),
    its candidate bins are gathered in *runs* that fit (:func:`rainforest.exact_bins.candidate_runs`,
    as the tree's :func:`rainforest.exact_search.node_runs`): the bins beside every boundary within
    tolerance of ``target`` are refined in every run, so any split that may win has both its
    neighbours' values wherever it is searched, and the other candidate bins are refined one run at a
    time, whole in the others (a whole bin hides only the splits inside it, which its own run holds).
    The best over the runs is the best of the attribute: scores are the same whole-number sums in
    every run, and a tie goes to the split the scan over all of them meets first
    (:func:`rainforest.exact_gather.better_split`)."""
    ch, nc, counted = g.n_channels, g.label_channels, g.columns.counted
    at = int(jobs.attr_start[j]) + q
    a, lo = int(jobs.attrs[at]), int(jobs.job_base[j] // ch + jobs.slot_off[at])
    size = int(g.columns.counted_sizes[a])
    block = counts[lo * ch:(lo + size) * ch].reshape(size, ch)
    cand = candidate[lo:lo + size]
    cost = np.rint(block[:, ch - 1]).astype(np.int64) * cand * entry_bytes(ch)
    room = g.budget // 4
    runs = [cand]
    if int(cost.sum()) > room:
        offsets, kinds = np.array([0, size]), g.columns.kinds[[a]]
        near = boundary_mask(block[None], offsets, kinds, nc, True, g.crit, np.array([target]))[0]
        runs = candidate_runs(cand, near, cost, room)
        g.stats.candidate_runs += len(runs)
    best, passes = None, 0
    for run in runs:
        cell, value, cell_counts, from_data = _gathered(g, jobs, counts, lo + np.flatnonzero(run), counter, level)
        passes += from_data
        values = ValueCounts(np.zeros(len(cell), np.int64), cell - lo, value, cell_counts)
        split = exact_splits(block[None], run[None], values, np.array([0, size]), g.columns.kinds[[a]],
                             counted.binned[[a]], nc, True, g.crit, g.params, float(g.min_weight_leaf[jobs.tree[j]]),
                             0, np.array([target]))[0]
        if better_split(split, best, [block[size - 1, ch - 1] > 0]):
            best = split
    return best, passes


def _group_avc(jobs, counts: np.ndarray, J: np.ndarray, ch: int) -> tuple:
    """The AVC-groups of jobs ``J`` (one layout: the same attributes) as ``(k, n_slots, channels)``, the
    layout's slot offsets (then its size) and the attributes."""
    j0 = int(J[0])
    offs = jobs.offsets[jobs.attr_start[j0] + j0:jobs.attr_start[j0 + 1] + j0 + 1]
    n_slots = int(offs[-1])
    avc = counts[jobs.job_base[J][:, None] + np.arange(n_slots * ch)].reshape(len(J), n_slots, ch)
    return avc, offs, jobs.attrs[jobs.attr_start[j0]:jobs.attr_start[j0 + 1]]


__all__ = ["exact_jobs", "forest_counted_slots", "summed"]
