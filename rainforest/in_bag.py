"""Each tree's in-bag rows, grouped by node: the forest's RF-Hybrid finish in memory.

Once a forest keeps every encoded row (:class:`rainforest.forest.KeptRows`), routing every row
of every tree from its root at each level (what a pass over the data must do) is most of the
work.  Here a chunk of trees is grown to the end instead.  Each tree gets its own copy of its
in-bag rows, grouped by node, each group in row order (like scikit-learn's sample index): a
level reads each node's rows in sequence (no random access into the kept rows) and moves each
row one step, into its child's group, by a stable partition, so a group stays in row order.

A copied row is one record of whole 64-bit words (:class:`InBagCopies`): its slots, its class,
and its bootstrap multiplicity (drawn once from the hash), or, with weights, the multiplicity
times the row's weight in a last word.  Moving a row moves a few words.

Every count is summed in row order by one thread, as the pass kernel sums it: the trees are the
ones a pass per level grows, bit for bit, for any ``n_jobs``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from .bootstrap import hash_row, multiplicity
from .rows import step


def in_bag_fraction(rate: float | None) -> float:
    """The expected share of rows a tree's bootstrap draws at least once (all of them without one)."""
    return 1.0 if rate is None else -math.expm1(-rate)


@dataclass
class InBagCopies:
    """The copies of a chunk of trees' in-bag rows: ``words[t, u]`` is row ``u`` of tree ``t``.

    ``items`` views the words as elements of the slots' type (widened to hold a class code):
    elements ``0 .. width - 1`` are the row's slots, element ``width`` its class, and element
    ``width + 1`` its multiplicity when unweighted; ``weights`` views them as float64, and with
    weights the last word is the multiplicity times the row's weight."""

    words: np.ndarray
    items: np.ndarray
    weights: np.ndarray
    width: int
    weighted: bool

    @staticmethod
    def layout(width: int, slot_type, n_classes: int, weighted: bool) -> tuple[np.dtype, int]:
        """The element type and the words of one record."""
        item = np.promote_types(slot_type, np.uint8 if n_classes <= 256 else np.uint32)
        n_items = width + (1 if weighted else 2)
        return item, -(-n_items * item.itemsize // 8) + (1 if weighted else 0)

    @classmethod
    def record_bytes(cls, width: int, slot_type, n_classes: int, weighted: bool) -> int:
        return 8 * cls.layout(width, slot_type, n_classes, weighted)[1]

    @classmethod
    def allocate(cls, n_trees: int, n_rows: int, width: int, slot_type, n_classes: int,
                 weighted: bool) -> "InBagCopies":
        item, n_words = cls.layout(width, slot_type, n_classes, weighted)
        words = np.empty((n_trees, n_rows, n_words), np.uint64)  # pages past the in-bag rows stay untouched
        return cls(words, words.view(item), words.view(np.float64), width, weighted)


@numba.njit(cache=True, parallel=True, nogil=True)
def gather_in_bag(S, y, w, keys1, keys2, thresholds, items, weights, n_in_bag):
    """Copy tree ``t``'s in-bag rows of the kept rows ``S, y, w`` (row ``i``'s identity is ``i``), in
    row order, into the records of :class:`InBagCopies`: the root's group.

    Tree ``t`` (keys ``keys1[t], keys2[t]``) draws row ``i`` ``m`` times
    (:func:`rainforest.bootstrap.multiplicity`); rows with ``m > 0`` are copied, ``n_in_bag[t]`` of
    them.  Threads own whole trees.
    """
    n = S.shape[0]
    width = S.shape[1]
    unit = w.shape[0] == 0
    last = weights.shape[2] - 1
    for t in numba.prange(keys1.shape[0]):
        s1 = keys1[t]
        s2 = keys2[t]
        u = 0
        for i in range(n):
            m = multiplicity(hash_row(i, s1, s2), thresholds)
            if m == 0:
                continue
            for a in range(width):
                items[t, u, a] = S[i, a]
            items[t, u, width] = y[i]
            if unit:
                items[t, u, width + 1] = m
            else:
                weights[t, u, last] = m * w[i]
            u += 1
        n_in_bag[t] = u


@numba.njit(cache=True, parallel=True, nogil=True)
def count_spans(items, weights, width, unit, job_tree, starts, ends, job_of_attr, attrs, slot_off, job_base,
                n_channels, counts):
    """Count every job's rows into its AVC-group (the layout of :func:`rainforest.forest.count_forest`).

    Job ``j``'s rows are records ``starts[j]:ends[j]`` of tree ``job_tree[j]``'s copies: the
    multiplicity (times the weight unless ``unit``) goes to the row's class and one to the row-count
    channel, at the slot of each of the job's attributes (``attrs[q]`` with ``job_of_attr[q] == j``).
    Threads take (job, attribute) pairs, each owning its cells, so every cell is summed in row
    order by one thread.
    """
    n_classes = n_channels - 1
    last = weights.shape[2] - 1
    for q in numba.prange(attrs.shape[0]):
        j = job_of_attr[q]
        t = job_tree[j]
        a = attrs[q]
        base = job_base[j] + slot_off[q] * n_channels
        for u in range(starts[j], ends[j]):
            cell = base + items[t, u, a] * n_channels
            counts[cell + items[t, u, width]] += float(items[t, u, width + 1]) if unit else weights[t, u, last]
            counts[cell + n_classes] += 1.0


@numba.njit(cache=True, parallel=True, nogil=True)
def partition_spans(words, items, job_tree, job_node, n_branches, starts, ends, feature, first_child, slot_branch,
                    branch_offset, slot_cut, missing_branch, n_slots, going_on, child_start):
    """Move the rows of each split job one step down: job ``j`` (node ``job_node[j]`` of the routing
    arrays, ``n_branches[j]`` children) has its records ``starts[j]:ends[j]`` of tree ``job_tree[j]``
    reordered, stably, so that child ``b``'s rows are ``child_start[j, b]:child_start[j, b + 1]``
    (:func:`rainforest.rows.step` on the copied slots).  Rows of a child that does not go on
    growing (``going_on[j, b]`` false, a leaf) are dropped.

    (Counting the children while moving their rows was tried: it was slower than
    :func:`count_spans` afterwards, whose threads each own one attribute's cells.)
    """
    n_words = words.shape[2]
    for j in numba.prange(job_tree.shape[0]):
        t = job_tree[j]
        k = job_node[j]
        lo = starts[j]
        hi = ends[j]
        nb = n_branches[j]
        rows = items[t]
        branch = np.empty(hi - lo, np.int32)
        sizes = np.zeros(nb + 1, np.int64)
        for u in range(lo, hi):
            b = step(rows, u, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch,
                     n_slots) - first_child[k]
            if going_on[j, b]:
                sizes[b + 1] += 1
            else:
                b = -1
            branch[u - lo] = b
        sizes[0] = lo
        for b in range(nb):
            sizes[b + 1] += sizes[b]
        child_start[j, :nb + 1] = sizes
        moved = words[t, lo:hi].copy()
        for u in range(hi - lo):
            b = branch[u]
            if b < 0:
                continue
            v = sizes[b]
            sizes[b] += 1
            for x in range(n_words):
                words[t, v, x] = moved[u, x]
