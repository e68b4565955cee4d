"""Each tree's in-bag rows, grouped by node: the forest's RF-Hybrid finish in memory.

Once a forest keeps every encoded row (:func:`rainforest.forest_rows.data_rows`), routing every row
of every tree from its root at each level (what a pass over the data must do) is most of the
work.  Here a chunk of trees is grown to the end instead.  Each tree gets its own copy of its
in-bag rows, grouped by node, each group in row order (like scikit-learn's sample index): a
level reads each node's rows in sequence (no random access into the kept rows) and moves each
row one step, into its child's group, by a stable partition, so a group stays in row order.

A copied row is one record of whole 64-bit words (:class:`InBagCopies`): its slots, its class,
and its bootstrap multiplicity (drawn once from the hash), or, with weights, the multiplicity
times the row's weight in a last word; a regressor's target takes a word of its own, before the
weight's.  Moving a row moves a few words.

Every count is summed in row order by one thread, as the pass kernel sums it: the trees are the
ones a pass per level grows, bit for bit, for any ``n_jobs``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from .bootstrap import multiplicity
from .count_bins import counted_at
from .counting import add_row
from .partition import cut_blocks, place
from .rowhash import hash_row
from .rows import step
from .target_parts import add_weighted_parts, split_target

TASK_ROWS = 1 << 14  # rows of a thread's task (at least) when a tree's rows are drawn or a group's rows are moved
TASKS_PER_THREAD = 4  # blocks per thread when large groups are cut (fewer leave threads idle at the end)


def in_bag_fraction(rate: float | None) -> float:
    """The expected share of rows a tree's bootstrap draws at least once (all of them without one)."""
    return 1.0 if rate is None else -math.expm1(-rate)


@dataclass
class InBagCopies:
    """The copies of a chunk of trees' in-bag rows: ``words[t, u]`` is row ``u`` of tree ``t``.

    ``items`` views the words as elements of the slots' type (widened to hold a class code):
    elements ``0 .. width - 1`` are the row's slots, element ``width`` its class, and element
    ``width + 1`` its multiplicity when unweighted; ``weights`` views them as float64, and with
    weights the last word is the multiplicity times the row's weight.  A regressor's records are
    always weighted, and their target (float64) is the word before the weight.  ``targets[t, u,
    target_at]`` is the row's class or target: ``targets`` is ``items`` or ``weights``, so its type
    chooses the counting rule (:func:`rainforest.counting.add_row`).

    ``moved`` and ``branch`` are :func:`partition_spans`' scratch, shared by the chunk's trees: the
    records and branches of groups being moved together, ``scratch_rows`` of them at a time (the
    in-bag rows of one tree or more; a larger group goes alone).  ``task_rows`` rows make one thread's
    task in :func:`gather_in_bag` and :func:`partition_spans`."""

    words: np.ndarray
    items: np.ndarray
    weights: np.ndarray
    targets: np.ndarray
    target_at: int
    width: int
    weighted: bool
    moved: np.ndarray
    branch: np.ndarray
    scratch_rows: int
    task_rows: int

    @staticmethod
    def layout(width: int, slot_type, n_classes: int, weighted: bool,
               regression: bool = False) -> tuple[np.dtype, int]:
        """The element type and the words of one record (a regressor's ``n_classes`` is ignored)."""
        if regression:  # the slots, then the target's word and the weight's
            item = np.dtype(slot_type)
            return item, -(-width * item.itemsize // 8) + 2
        item = np.promote_types(slot_type, np.uint8 if n_classes <= 256 else np.uint32)
        n_items = width + (1 if weighted else 2)
        return item, -(-n_items * item.itemsize // 8) + (1 if weighted else 0)

    @classmethod
    def record_bytes(cls, width: int, slot_type, n_classes: int, weighted: bool, regression: bool = False) -> int:
        return 8 * cls.layout(width, slot_type, n_classes, weighted, regression)[1]

    @staticmethod
    def scratch_bytes(rows: int, record: int, threads: int) -> int:
        """The memory :func:`partition_spans` may touch to move ``rows`` rows in one call: the
        shared scratch (a record and a branch per row) and the threads' own copies of the groups
        they move whole, each at most a block (``TASK_ROWS``, or a ``TASKS_PER_THREAD``-th of a
        thread's share of the call's rows) and all of them at most the call's rows."""
        return (rows + min(rows, max(threads * TASK_ROWS, rows // TASKS_PER_THREAD))) * (record + 4)

    @classmethod
    def allocate(cls, n_trees: int, n_rows: int, scratch_rows: int, width: int, slot_type, n_classes: int,
                 weighted: bool, regression: bool = False) -> "InBagCopies":
        item, n_words = cls.layout(width, slot_type, n_classes, weighted, regression)
        # Room for every row; pages past the rows in use stay untouched (and uncounted by the OS).
        words = np.empty((n_trees, n_rows, n_words), np.uint64)
        moved = np.empty((max(n_rows, scratch_rows), n_words), np.uint64)  # a group may exceed scratch_rows
        branch = np.empty(len(moved), np.int32)
        items, weights = words.view(item), words.view(np.float64)
        targets, target_at = (weights, n_words - 2) if regression else (items, width)
        return cls(words, items, weights, targets, target_at, width, weighted or regression, moved, branch,
                   scratch_rows, TASK_ROWS)


@numba.njit(cache=True, parallel=True, nogil=True)
def gather_in_bag(S, y, w, keys1, keys2, thresholds, items, weights, targets, target_at, copy_unit, n_in_bag,
                  block):
    """Copy tree ``t``'s in-bag rows of the kept rows ``S, y, w`` (row ``i``'s identity is ``i``), in
    row order, into the records of :class:`InBagCopies`: the root's group (``y[i]`` to
    ``targets[t, u, target_at]``; the multiplicity to the record's item ``width + 1`` if
    ``copy_unit``, else, times the weight, to its last word).

    Tree ``t`` (keys ``keys1[t], keys2[t]``) draws row ``i`` ``m`` times
    (:func:`rainforest.bootstrap.multiplicity`); rows with ``m > 0`` are copied, ``n_in_bag[t]`` of
    them, unless their weight is 0 (such a row counts as absent: :func:`rainforest.schema.present_rows`).  Threads take (tree, ``block`` rows) pairs, so one tree keeps every thread busy: each
    block's in-bag rows are counted first, and the prefix sums place every block's copies, in row
    order (the draw is computed twice rather than stored: no scratch of a byte per row and tree).
    """
    n = S.shape[0]
    width = S.shape[1]
    unit = w.shape[0] == 0
    last = weights.shape[2] - 1
    n_trees = keys1.shape[0]
    n_blocks = max(1, (n + block - 1) // block)
    at = np.zeros((n_trees, n_blocks + 1), np.int64)  # where each block's copies start
    for task in numba.prange(n_trees * n_blocks):
        t, blk = task // n_blocks, task % n_blocks
        s1, s2 = keys1[t], keys2[t]
        drawn = 0
        for i in range(blk * block, min(n, (blk + 1) * block)):
            if multiplicity(hash_row(i, s1, s2), thresholds) > 0 and (unit or w[i] != 0.0):
                drawn += 1
        at[t, blk + 1] = drawn
    for t in range(n_trees):
        for blk in range(n_blocks):
            at[t, blk + 1] += at[t, blk]
        n_in_bag[t] = at[t, n_blocks]
    for task in numba.prange(n_trees * n_blocks):
        t, blk = task // n_blocks, task % n_blocks
        s1, s2 = keys1[t], keys2[t]
        lo = blk * block
        copies = items[t, at[t, blk]:]  # indices from 0: no check for a negative index (see count_spans)
        copy_weights = weights[t, at[t, blk]:, last]
        copy_targets = targets[t, at[t, blk]:]
        u = 0
        for i in range(min(n, lo + block) - lo):
            m = multiplicity(hash_row(lo + i, s1, s2), thresholds)
            if m == 0 or not (unit or w[lo + i] != 0.0):  # not drawn, or of weight 0: absent
                continue
            for a in range(width):
                copies[u, a] = S[lo + i, a]
            copy_targets[u, target_at] = y[lo + i]
            if copy_unit:
                copies[u, width + 1] = m
            else:
                copy_weights[u] = m if unit else m * w[lo + i]
            u += 1


@numba.njit(cache=True, parallel=True, nogil=True)
def count_spans(items, weights, targets, target_at, width, unit, job_tree, starts, ends, job_of_attr, attrs,
                slot_off, job_base, n_channels, counts, grid, shift, missing, n_counted, base, table, table_start):
    """Count every job's rows into its AVC-group (the layout of :func:`rainforest.forest_kernels.count_forest`).

    Job ``j``'s rows are records ``starts[j]:ends[j]`` of tree ``job_tree[j]``'s copies: the
    multiplicity (times the weight unless ``unit``) goes to the row's class (or target,
    ``targets[t, u, target_at]``) and one to the row-count channel, at the counted slot
    (:func:`rainforest.count_bins.counted_at`) of each of the job's attributes (``attrs[q]`` with
    ``job_of_attr[q] == j``).  Threads take (job, attribute) pairs, each owning its cells, so every
    cell is summed in row order by one thread.  With ``grid``, a regressor's raw cells get the target's exact parts times
    the multiplicity, then the multiplicity and one (:mod:`rainforest.target_parts`).
    """
    parts = grid.shape[0] > 0
    # Unsigned cell indices and loops from 0 spare every access numba's check for a negative index
    # (a quarter of the time).
    n_classes = np.uint64(n_channels - 1)
    stride = np.uint64(n_channels)
    last = weights.shape[2] - 1
    for q in numba.prange(attrs.shape[0]):
        j = job_of_attr[q]
        t = job_tree[j]
        a = attrs[q]
        cells = counts[job_base[j] + slot_off[q] * n_channels:]
        rows = items[t, starts[j]:ends[j]]
        row_weights = weights[t, starts[j]:ends[j], last]
        row_targets = targets[t, starts[j]:ends[j]]
        for u in range(rows.shape[0]):
            m = float(rows[u, width + 1]) if unit else row_weights[u]
            cell = counted_at(rows[u, a], a, shift, missing, n_counted, base, table, table_start) * stride
            if parts:
                add_weighted_parts(cells, cell, split_target(np.float64(row_targets[u, target_at]), grid), m)
            else:
                add_row(cells, cell, row_targets[u, target_at], m, True, n_classes)


@numba.njit(cache=True, parallel=True, nogil=True)
def gather_spans(items, weights, targets, target_at, width, unit, job_tree, starts, ends, job_of_attr, attrs,
                 slot_off, job_cells, shift, missing, n_counted, base, table, table_start, candidate, out_at,
                 out_end, cell_out, value_out, class_out, weight_out):
    """The rows of each job's group (as :func:`count_spans` reads them) that fall in candidate cells
    (exact mode, :mod:`rainforest.forest_exact`): for job attribute ``q`` (job ``j = job_of_attr[q]``),
    a row whose counted slot is cell ``job_cells[j] + slot_off[q] + slot`` with a candidate number
    ``candidate[cell] >= 0`` gives an entry (that number, the row's slot, its class, its multiplicity
    times its weight), written in row order from ``out_at[q]`` on, never at ``out_end[q]`` or past
    it; ``out_at[q]`` ends past the last one found (the caller knows how many there are from the
    counts, and checks)."""
    last = weights.shape[2] - 1
    for q in numba.prange(attrs.shape[0]):
        j = job_of_attr[q]
        t = job_tree[j]
        a = attrs[q]
        rows = items[t, starts[j]:ends[j]]
        row_weights = weights[t, starts[j]:ends[j], last]
        row_targets = targets[t, starts[j]:ends[j]]
        first = job_cells[j] + slot_off[q]
        at = out_at[q]
        for u in range(rows.shape[0]):
            s = rows[u, a]
            cell = first + np.int64(counted_at(s, a, shift, missing, n_counted, base, table, table_start))
            if candidate[cell] >= 0:
                if at < out_end[q]:
                    cell_out[at] = candidate[cell]
                    value_out[at] = s
                    class_out[at] = row_targets[u, target_at]
                    weight_out[at] = float(rows[u, width + 1]) if unit else row_weights[u]
                at += 1
        out_at[q] = at


@numba.njit(cache=True, parallel=True, nogil=True)
def partition_spans(words, items, job_tree, job_node, n_branches, starts, ends, feature, first_child, slot_branch,
                    branch_offset, slot_cut, missing_branch, n_slots, going_on, moved, branch, child_start, block,
                    n_threads):
    """Move the rows of each split job one step down: job ``j`` (node ``job_node[j]`` of the routing
    arrays, ``n_branches[j]`` children) has its records ``starts[j]:ends[j]`` of tree ``job_tree[j]``
    reordered, stably, so that child ``b``'s rows are ``child_start[j, b]:child_start[j, b + 1]``
    (:func:`rainforest.rows.step` on the copied slots).  Rows of a child that does not go on
    growing (``going_on[j, b]`` false, a leaf) are dropped.

    A group is moved by one thread, through a copy of its own, unless it is a large share of the
    call's rows (a tree's first levels: one or two large groups): such a group is cut into blocks
    (at least ``block`` rows, about ``TASKS_PER_THREAD`` blocks per thread in all) that threads
    take in turn (:mod:`rainforest.partition`).  Each block routes its rows, counts them per
    branch, and copies them to the scratch ``moved`` (their branches to ``branch``);
    :func:`rainforest.partition.place` gives each block where its rows of each branch go, and the
    blocks then write them back: the same stable order.

    (Counting the children while moving their rows was tried: it was slower than
    :func:`count_spans` afterwards, whose threads each own one attribute's cells.)
    """
    n_jobs = job_tree.shape[0]
    spans = ends - starts
    block = max(block, -(-spans.sum() // (TASKS_PER_THREAD * n_threads)))
    first_task, task_job = cut_blocks(spans, block)  # a group of at most ``block`` rows is one task
    n_tasks = first_task[n_jobs]
    scratch_at = np.zeros(n_jobs + 1, np.int64)  # only cut groups use the shared scratch
    for j in range(n_jobs):
        scratch_at[j + 1] = scratch_at[j] + (spans[j] if spans[j] > block else 0)
    sizes = np.zeros((n_tasks, max(1, n_branches.max())), np.int64)  # rows per (block, branch), then where they go
    for task in numba.prange(n_tasks):
        j = task_job[task]
        t = job_tree[j]
        if spans[j] <= block:  # the whole group, through a copy of its own (the call's rows bound them all)
            lo, hi = starts[j], ends[j]
            own = words[t, lo:hi].copy()
            own_branch = np.empty(hi - lo, np.int32)
            _route_block(items, t, job_node[j], j, lo, hi, own_branch, 0, feature, first_child, slot_branch,
                         branch_offset, slot_cut, missing_branch, n_slots, going_on, sizes[task])
            place(lo, n_branches[j], sizes[task:task + 1], child_start[j])
            _scatter_block(words, t, own, own_branch, 0, hi - lo, sizes[task])
        else:
            lo = starts[j] + (task - first_task[j]) * block
            hi = min(ends[j], lo + block)
            p = scratch_at[j] + lo - starts[j]
            _copy_rows(moved, p, words[t], lo, hi)
            _route_block(items, t, job_node[j], j, lo, hi, branch, p, feature, first_child, slot_branch,
                         branch_offset, slot_cut, missing_branch, n_slots, going_on, sizes[task])
    for j in range(n_jobs):
        if spans[j] > block:
            place(starts[j], n_branches[j], sizes[first_task[j]:first_task[j + 1]], child_start[j])
    for task in numba.prange(n_tasks):
        j = task_job[task]
        if spans[j] > block:
            lo = starts[j] + (task - first_task[j]) * block
            p = scratch_at[j] + lo - starts[j]
            _scatter_block(words, job_tree[j], moved, branch, p, p + min(ends[j], lo + block) - lo, sizes[task])


@numba.njit(cache=True, nogil=True, inline="always")
def _route_block(items, t, k, j, lo, hi, branch, p, feature, first_child, slot_branch, branch_offset, slot_cut,
                 missing_branch, n_slots, going_on, sizes):
    """Route tree ``t``'s rows ``lo:hi`` (of node ``k``, job ``j``) one step: their branches to
    ``branch`` from ``p`` on (-1: dropped), and their counts per branch to ``sizes``."""
    rows = items[t]
    for u in range(lo, hi):
        b = step(rows, u, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch,
                 n_slots) - first_child[k]
        if going_on[j, b]:
            sizes[b] += 1
        else:
            b = -1
        branch[p] = b
        p += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_rows(dst, at, src, lo, hi):
    """``dst[at:at + hi - lo] = src[lo:hi]``, as one flat loop from 0 (compiled to a memory copy:
    numba's 2-d slice assignment, or an index that may be negative, copies several times slower)."""
    n_words = src.shape[1]
    d = dst.reshape(-1)[at * n_words:(at + hi - lo) * n_words]
    s = src.reshape(-1)[lo * n_words:hi * n_words]
    for i in range(s.shape[0]):
        d[i] = s[i]


@numba.njit(cache=True, nogil=True, inline="always")
def _scatter_block(words, t, moved, branch, p0, p1, at):
    """Write the copied rows ``moved[p0:p1]`` back to tree ``t``'s records, each branch's from ``at[b]`` on."""
    n_words = words.shape[2]
    # The loop with its record size a constant copies twice as fast; records are mostly 1 to 4 words.
    if n_words == 1:
        _scatter_rows(words[t].reshape(-1), moved.reshape(-1), branch, p0, p1, at, 1)
    elif n_words == 2:
        _scatter_rows(words[t].reshape(-1), moved.reshape(-1), branch, p0, p1, at, 2)
    elif n_words == 3:
        _scatter_rows(words[t].reshape(-1), moved.reshape(-1), branch, p0, p1, at, 3)
    elif n_words == 4:
        _scatter_rows(words[t].reshape(-1), moved.reshape(-1), branch, p0, p1, at, 4)
    else:
        _scatter_rows(words[t].reshape(-1), moved.reshape(-1), branch, p0, p1, at, n_words)


@numba.njit(cache=True, nogil=True, inline="always")
def _scatter_rows(dst, src, branch, p0, p1, at, n_words):
    w = np.uint64(n_words)  # unsigned indices: no check for a negative index
    for p in range(p0, p1):
        b = branch[p]
        if b < 0:
            continue
        v = at[b]
        at[b] = v + 1
        d, s = np.uint64(v) * w, np.uint64(p) * w
        for x in range(n_words):
            dst[d + np.uint64(x)] = src[s + np.uint64(x)]
