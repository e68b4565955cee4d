"""The random forest's kernels: counting a pass's jobs (tree, node) over streamed rows with
bootstrap multiplicities recomputed from the row hash, searching every job's split, and the
children of every split job (:mod:`rainforest.forest_grow` runs them)."""
from __future__ import annotations

import numba
import numpy as np

from .bootstrap import multiplicity
from .count_bins import counted_at
from .counting import add_row
from .criteria import impurity, search_node
from .split_scores import weight_of
from .target_parts import add_weighted_parts, split_target
from .rowhash import hash_row
from .rows import step
from .rules import branch_totals, impurity_decrease

ROW_BLOCK = 4096  # rows a thread routes together through one tree (independent steps overlap)


@numba.njit(cache=True, nogil=True, inline="always")
def block_scratch(block):
    """A thread's scratch for :func:`in_bag_at_depth` over blocks of ``block`` rows: hashes, rows,
    multiplicities, nodes."""
    return np.empty(block, np.int64), np.empty(block, np.uint64), np.empty(block, np.int64), np.empty(block, np.uint64)


@numba.njit(cache=True, nogil=True, inline="always")
def in_bag_at_depth(first_row, c0, c1, s1, s2, thresholds, root, depth, S, feature, first_child, slot_branch,
                    branch_offset, slot_cut, missing_branch, n_slots, h, rows, mult, node):
    """The in-bag rows among ``c0:c1`` of a block (identities from ``first_row``) of the tree keyed
    ``(s1, s2)``, moved ``depth`` routing steps from ``root`` (a row that meets a leaf first stays
    there): ``rows[:m]``, their multiplicities ``mult[:m]`` and nodes ``node[:m]``; returns ``m``.
    Rows of a block go down one level at a time, so the independent steps of different rows overlap.
    (Its callers look up each row's job themselves: dropping the others here, in a further loop,
    would add a copy to the forest's hottest kernel.)"""
    for i in range(c0, c1):
        h[i - c0] = hash_row(first_row + i, s1, s2)
    m_in = 0
    for r in range(c1 - c0):  # the in-bag rows, without a branch per row
        m = multiplicity(h[r], thresholds)
        rows[m_in] = c0 + r
        mult[m_in] = m
        m_in += m > 0
    node[:m_in] = root
    for _ in range(depth):
        for u in range(m_in):
            k = node[u]
            if first_child[k] >= 0:
                node[u] = step(S, rows[u], k, feature, first_child, slot_branch, branch_offset, slot_cut,
                               missing_branch, n_slots)
    return m_in


@numba.njit(cache=True, parallel=True, nogil=True)
def count_forest(S, y, w, first_row, depth, trees, keys1, keys2, thresholds, roots, feature, first_child,
                 slot_branch, branch_offset, slot_cut, missing_branch, n_slots, job_of_node, attr_start, attrs,
                 slot_off, job_base, n_channels, counts, grid, shift, missing, n_counted, base, table, table_start):
    """Count a block of encoded rows into the AVC-groups of a pass's jobs, for every tree in ``trees``.

    Row ``i`` (identity ``first_row + i``) has multiplicity ``m`` in tree ``t`` (the Poisson draw
    of :mod:`rainforest.bootstrap`).  In-bag rows go down from the tree's root (``roots[t]``, in
    the forest's concatenated routing arrays) by ``depth`` routing steps (the pass's jobs are
    nodes of that depth; a row that meets a leaf first stays there), and when the node reached is
    a job ``j`` of the pass, ``m * w[i]`` is added to class ``y[i]``, and one to the row-count
    channel, at the counted slot (:func:`rainforest.count_bins.counted_at`: exact mode's wide
    attributes in bins) of each of the job's attributes ``attrs[attr_start[j]:attr_start[j + 1]]``
    (its AVC-group starts at ``counts[job_base[j]]``, attribute ``q`` at slot ``slot_off[q]``).

    Each thread owns whole trees (a job belongs to one tree) and routes a block of rows one level
    at a time, so the independent steps of different rows overlap.  Every count is summed in row
    order by one thread: the result is the serial one, bit for bit.  ``w`` is empty for unit weights.
    With ``grid``, a regressor's raw cells get the target's exact parts times ``m``, then ``m`` and one
    (:mod:`rainforest.target_parts`).
    """
    # Unsigned indices (rows, nodes, jobs, cells), as in rainforest.avc.accumulate: numba checks every
    # signed index for a negative value, a third of this kernel's time.
    n_classes = np.uint64(n_channels - 1)
    stride = np.uint64(n_channels)
    unit = w.shape[0] == 0
    parts = grid.shape[0] > 0
    n = S.shape[0]
    block = min(n, ROW_BLOCK)
    for ti in numba.prange(trees.shape[0]):
        t = trees[ti]
        h, rows, mult, node = block_scratch(block)
        for c0 in range(0, n, block):
            m_in = in_bag_at_depth(first_row, c0, min(n, c0 + block), keys1[t], keys2[t], thresholds, roots[t], depth,
                                   S, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch,
                                   n_slots, h, rows, mult, node)
            for u in range(m_in):
                j = job_of_node[node[u]]
                if j < 0:
                    continue
                uj = np.uint64(j)
                i = rows[u]
                c = y[i]
                wt = float(mult[u]) if unit else mult[u] * w[i]
                base_j = np.uint64(job_base[uj])
                p = split_target(np.float64(c), grid) if parts else (0.0, 0.0, 0.0, 0.0)
                for q in range(attr_start[uj], attr_start[uj + 1]):
                    uq = np.uint64(q)
                    a = np.uint64(attrs[uq])
                    s = counted_at(S[i, a], a, shift, missing, n_counted, base, table, table_start)
                    cell = base_j + (np.uint64(slot_off[uq]) + s) * stride
                    if parts:
                        add_weighted_parts(counts, np.int64(cell), p, wt)
                    else:
                        add_row(counts, cell, c, wt, True, n_classes)


@numba.njit(cache=True, parallel=True, nogil=True)
def gather_forest(S, y, w, first_row, depth, trees, keys1, keys2, thresholds, roots, feature, first_child,
                  slot_branch, branch_offset, slot_cut, missing_branch, n_slots, job_of_node, attr_start, attrs,
                  slot_off, job_cells, shift, missing, n_counted, base, table, table_start, candidate, tree_at, tree_end,
                  fill, cell_out, value_out, class_out, weight_out):
    """The rows of a block that fall in candidate cells (exact mode, :mod:`rainforest.forest_exact`):
    routed as :func:`count_forest` routes them, a row of tree ``trees[ti]`` at job ``j`` whose counted
    slot of attribute ``q`` is cell ``job_cells[j] + slot_off[q] + slot`` with a candidate number
    ``candidate[cell] >= 0`` gives an entry (that number, the row's slot, its class, ``m * w[i]`` as
    counted).  Without ``fill``, ``tree_at[ti]`` becomes the number of tree ``ti``'s entries; with
    it, they are written from ``tree_at[ti]`` on, in row order (the order of the counts), never at
    ``tree_end[ti]`` or past it (``tree_at`` still counts them: the caller's check finds the excess)."""
    unit = w.shape[0] == 0
    n = S.shape[0]
    block = min(n, ROW_BLOCK)
    for ti in numba.prange(trees.shape[0]):
        t = trees[ti]
        h, rows, mult, node = block_scratch(block)
        at = tree_at[ti] if fill else 0
        for c0 in range(0, n, block):
            m_in = in_bag_at_depth(first_row, c0, min(n, c0 + block), keys1[t], keys2[t], thresholds, roots[t], depth,
                                   S, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch,
                                   n_slots, h, rows, mult, node)
            for u in range(m_in):
                j = job_of_node[node[u]]
                if j < 0:
                    continue
                i = rows[u]
                wt = float(mult[u]) if unit else mult[u] * w[i]
                if wt == 0.0:  # a row of weight 0 is not counted (counting.add_row): none of its entries
                    continue
                for q in range(attr_start[j], attr_start[j + 1]):
                    a = np.uint64(attrs[q])
                    s = S[i, a]
                    cell = job_cells[j] + slot_off[q] + np.int64(counted_at(s, a, shift, missing, n_counted, base,
                                                                             table, table_start))
                    if candidate[cell] >= 0:
                        if fill and at < tree_end[ti]:
                            cell_out[at] = candidate[cell]
                            value_out[at] = s
                            class_out[at] = y[i]
                            weight_out[at] = wt
                        at += 1
        tree_at[ti] = at


@numba.njit(cache=True, parallel=True, nogil=True)
def search_jobs(counts, job_base, attr_start, offsets, kinds, n_channels, criterion, multiway, min_leaf, min_weight,
                max_exhaustive, branch_start, branches, attr, score, left_slot, right_slot, inf_thr, n_branches):
    """:func:`rainforest.criteria.search_node` for every job of a pass, in parallel (jobs are
    independent).  Job ``j``'s AVC-group is ``counts[job_base[j]:]`` over its own attributes, whose
    slot offsets are ``offsets[attr_start[j] + j : attr_start[j + 1] + j + 1]``; the last channel
    counts rows.  ``attr[j]`` is the winning attribute's position among the job's, or -1."""
    n_classes = n_channels - 1
    for j in numba.prange(job_base.shape[0]):
        lo = attr_start[j]
        hi = attr_start[j + 1]
        offs = offsets[lo + j:hi + j + 1]
        size = offs[hi - lo]
        block = counts[job_base[j]:job_base[j] + size * n_channels].reshape((size, n_channels))
        a, sc, ls, rs, inf, nb = search_node(block, offs, kinds[lo:hi], n_classes, True, criterion, multiway,
                                             min_leaf, min_weight[j], max_exhaustive,
                                             branches[branch_start[j]:branch_start[j + 1]], 0)
        attr[j] = a
        score[j] = sc
        left_slot[j] = ls
        right_slot[j] = rs
        inf_thr[j] = inf
        n_branches[j] = nb


@numba.njit(cache=True, parallel=True, nogil=True)
def split_children(counts, winner_base, winner_slots, branches, branch_start, n_branches, n_channels, parent_imp,
                   node_crit, child, child_imp, decrease, weight):
    """For every job with a split (``n_branches[j] > 0``): each branch's counts (``branch_totals`` of the
    winning attribute's AVC-set, at ``counts[winner_base[j]:]``), their impurities, the node's impurity
    decrease (:func:`rainforest.rules.impurity_decrease`) and the node's weight (a regressor's: its
    first channel, :func:`rainforest.split_scores.weight_of`)."""
    n_classes = n_channels - 1
    for j in numba.prange(n_branches.shape[0]):
        nb = n_branches[j]
        if nb <= 0:
            decrease[j] = -np.inf
            weight[j] = 0.0
            continue
        m1 = winner_slots[j]
        block = counts[winner_base[j]:winner_base[j] + m1 * n_channels].reshape((m1, n_channels))
        totals = branch_totals(block, branches[branch_start[j]:branch_start[j] + m1], nb)
        wn = 0.0
        ws = np.empty(nb)
        for b in range(nb):
            child[j, b, :] = totals[b]
            wb = weight_of(totals[b, :n_classes], node_crit)
            ws[b] = wb
            child_imp[j, b] = impurity(totals[b, :n_classes], wb, node_crit)
            wn += wb
        decrease[j] = impurity_decrease(parent_imp[j], child_imp[j, :nb], ws, wn)
        weight[j] = wn


@numba.njit(cache=True, parallel=True, nogil=True)
def bootstrap_block(first_row, s1, s2, thresholds, out):
    """``out[i]``: the multiplicity of row ``first_row + i`` in the bootstrap keyed ``(s1, s2)``."""
    for i in numba.prange(out.shape[0]):
        out[i] = multiplicity(hash_row(first_row + i, s1, s2), thresholds)
