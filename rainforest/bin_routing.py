"""Routing rows whose keyed columns hold their bins, not their keys: a spilled read that counts.

The spill folder stores each keyed column's counted bin beside its key (:class:`rainforest.spill.Spill`),
so a read that routes and counts rows reads two bytes a row for the column, not eight, and the
counting kernels count the bin as it is (:func:`rainforest.count_bins.counted_view`).  A split on a
keyed attribute sends keys up to its cut left; in bins, every bin below the cut's bin goes left and
every bin above it right.  The cut's own bin goes left whole when the cut is the last key it can
hold (the split fell on a bin boundary); otherwise (the usual case: exact thresholds fall inside
the bins the search gathered) that bin is *open*: its rows stop there, their keys are read from
the spill (:class:`rainforest.spill.SpilledKeys`, a few rows a node: those of one bin), and they
take the branch their keys give.  Every row so ends at the node the key routing
(:func:`rainforest.rows.descend`) sends it to.
"""
from __future__ import annotations

import numba
import numpy as np

from .count_bins import CountedSlots
from .rows import rows_of, step
from .value_keys import KEY_MISSING


def binned_routing(routing: tuple, counted: CountedSlots) -> tuple[tuple, np.ndarray]:
    """``routing`` (:func:`rainforest.rows.descend`'s arrays) for rows whose keyed columns hold their
    counted bins (``counted``: the growth's :class:`rainforest.count_bins.CountedSlots`), and per node
    its open bin: the cut's bin where the cut falls inside it (its rows need their keys), else -1."""
    feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots = routing
    keyed = counted.keyed
    cut, open_bin = np.array(slot_cut, np.int64), np.full(len(feature), -1, np.int64)
    split = np.flatnonzero((np.asarray(first_child) >= 0) & (np.asarray(branch_offset) < 0))
    split_on = np.asarray(feature)[split]
    split, split_on = split[keyed[split_on]], split_on[keyed[split_on]]
    for a in np.unique(split_on):
        k = split[split_on == a]
        c = cut[k]
        closed = c >= KEY_MISSING - 1  # +inf threshold (every present key left) or the last key there is
        c_bin = counted.of(int(a), c)  # the missing slot's bin is the one after the bins
        next_bin = counted.of(int(a), c + ~closed)  # the next key's bin (a closed cut's own: no overflow)
        cut[k] = c_bin
        open_bin[k] = np.where(~closed & (next_bin == c_bin), c_bin, -1)
    bins_n_slots = np.where(keyed, counted.n_counted.astype(np.int64), np.asarray(n_slots, np.int64))
    return (feature, first_child, slot_branch, branch_offset, cut, missing_branch, bins_n_slots), open_bin


@numba.njit(cache=True, parallel=True, nogil=True)
def descend_bins(S, node, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots,
                 open_bin):
    """:func:`rainforest.rows.descend` over bins (:func:`binned_routing`'s arrays): each row moves down
    until a frontier node or a split whose open bin (``open_bin[k]``, -1: none) holds it; returns how
    many rows stopped at one."""
    stopped = 0
    for i in numba.prange(node.shape[0]):
        k = node[i]
        while first_child[k] >= 0:
            if S[i, np.uint64(feature[k])] == open_bin[k]:
                stopped += 1
                break
            k = step(S, i, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots)
        node[i] = k
    return stopped


@numba.njit(cache=True, nogil=True)
def rows_at_splits(node, first_child, n):
    """The ``n`` rows standing at a split node (:func:`descend_bins` stopped them), in row order (a
    scan is as quick as noting them per thread in the walk, measured)."""
    out = np.empty(n, np.int64)
    j = 0
    for i in range(node.shape[0]):
        if first_child[node[i]] >= 0:
            out[j] = i
            j += 1
    return out


def route_binned(rows, routing: tuple, binned: tuple, open_bin: np.ndarray) -> None:
    """Move a block read as bins (``rows.keys``: where its keys are) to the nodes the key routing
    ``routing`` gives: by ``binned`` (:func:`binned_routing`) where the bins decide, by the keys read
    for the rows of open bins elsewhere."""
    feature, first_child, cut = routing[0], routing[1], routing[4]
    S, node, at = rows.S, rows.node, None  # at: the block's rows that S and node hold (None: all)
    while True:
        n_open = descend_bins(S, node, *binned, open_bin)
        if at is not None:
            rows.node[at] = node
        if not n_open:
            return
        stopped = rows_at_splits(node, first_child, n_open)
        at = stopped if at is None else at[stopped]
        k = rows.node[at]
        keys = rows.keys.fetch(at, feature[k])
        node = (first_child[k] + (keys > cut[k])).astype(rows.node.dtype)  # a numeric split: keys to the cut left
        # only these rows can stand at a split node still (a tree grown more than a level since the
        # block's nodes were written): they alone go on
        S = rows_of(rows.S, at)
