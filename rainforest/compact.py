"""Compact AVC-groups of nodes whose rows are in memory, for exact mode.

In exact mode a numeric attribute has one slot per distinct value of the whole data (a
million or more), so a node's dense AVC-group costs as much to clear, fill and search as the
root's, however few rows reach it. For nodes counted from rows in memory (kept by RF-Hybrid, or
loaded from the spill folder for one chunk: :meth:`rainforest.supply.RowSupply.load`) this module
builds each node's AVC-group with a *wide* attribute reduced to the slots its own rows hold,
in slot order, its missing slot last: the cost follows the node's rows, as scikit-learn's
sorting does, not the data's distinct values.

The split search runs unchanged on that layout (:func:`rainforest.criteria.search_nodes`, with
per-node slot offsets), and every cell holds the same sum in the same row order as the dense
cell it stands for; the slots left out are empty, and adding an empty slot's zeros changes no
sum. So the search sees the same candidate splits with the same scores in the same order and
picks the same one, whose slots are then mapped back to the attribute's own.
"""
from __future__ import annotations

import numba
import numpy as np

from .counting import add_row
from .criteria import best_splits
from .schema import CATEGORICAL, Schema

#: a numeric attribute with more slots than this is compacted; narrower ones stay dense (cheap)
WIDE_SLOTS = 1024


def wide_attributes(schema: Schema) -> np.ndarray:
    """Per attribute, 0 if it stays dense, else its number among the compacted ones plus one: the
    numeric attributes with more than :data:`WIDE_SLOTS` slots."""
    wide = np.array([a.kind != CATEGORICAL and a.n_slots > WIDE_SLOTS for a in schema.attributes])
    return np.where(wide, np.cumsum(wide), 0).astype(np.int64)


def scratch_for(schema: Schema, wide: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One slot-to-position table per wide attribute (all -1), reused by every call: ``(table,
    base)`` with attribute ``a``'s part at ``table[base[a]:base[a] + n_slots]``. Its cost follows
    the data's distinct values once, not once per node."""
    n_slots = np.array([a.n_slots + 1 for a in schema.attributes], np.int64)
    base = np.concatenate([[0], np.cumsum(np.where(wide > 0, n_slots, 0))])
    return np.full(int(base[-1]), -1, np.int32), base[:-1].copy()


@numba.njit(cache=True, parallel=True, nogil=True)
def _distinct_slots(S, starts, ends, n_slots, wide, table, base, present, region):
    """For every node ``k`` (rows ``starts[k]:ends[k]``) and wide attribute ``a`` (the ``wide[a] - 1``-th):
    the distinct slots its rows hold, missing slot aside, sorted into ``present[wide[a] - 1,
    region[k]:...]``; returns their numbers, ``(n_nodes, n_attributes)``. Threads split the attributes."""
    n_nodes = starts.shape[0]
    n_attr = n_slots.shape[0]
    found = np.zeros((n_nodes, n_attr), np.int64)
    for a in numba.prange(n_attr):
        if wide[a] == 0:
            continue
        missing = n_slots[a] - 1
        t0 = base[a]
        for k in range(n_nodes):
            d = 0
            out = present[wide[a] - 1, region[k]:region[k] + ends[k] - starts[k]]
            for i in range(starts[k], ends[k]):
                s = np.int64(S[i, a])
                if s != missing and table[t0 + s] < 0:
                    table[t0 + s] = 0
                    out[d] = s
                    d += 1
            if d * 16 >= missing:  # many of the attribute's slots: one walk of the table sorts and clears
                t = 0
                for v in range(missing):
                    if table[t0 + v] == 0:
                        table[t0 + v] = -1
                        out[t] = v
                        t += 1
            else:
                out[:d].sort()
                for t in range(d):
                    table[t0 + out[t]] = -1
            found[k, a] = d
    return found


@numba.njit(cache=True, parallel=True, nogil=True)
def _fill(S, y, w, starts, ends, n_slots, wide, table, base, present, region, block, node_start, node_offsets,
          count_rows):
    """Add each row's weight to its node's compact AVC-group (``block`` rows ``node_start[k]`` on,
    attribute ``a`` at ``node_offsets[k, a]``), each cell in row order as :func:`rainforest.avc.accumulate`
    does. Threads split the attributes, each owning its cells."""
    n_nodes = starts.shape[0]
    n_classes = block.shape[1] - (1 if count_rows else 0)
    stride = block.shape[1]
    cells = block.reshape(-1)
    unit = w.shape[0] == 0
    for a in numba.prange(n_slots.shape[0]):
        t0 = base[a]
        for k in range(n_nodes):
            lo = node_start[k] + node_offsets[k, a]
            if wide[a] > 0:
                d = node_offsets[k, a + 1] - node_offsets[k, a] - 1
                mine = present[wide[a] - 1, region[k]:region[k] + d]
                for t in range(d):
                    table[t0 + mine[t]] = t
                missing = n_slots[a] - 1
                for i in range(starts[k], ends[k]):
                    s = np.int64(S[i, a])
                    at = lo + (d if s == missing else table[t0 + s])
                    add_row(cells, at * stride, y[i], 1.0 if unit else w[i], count_rows, n_classes)
                for t in range(d):
                    table[t0 + mine[t]] = -1
            else:
                for i in range(starts[k], ends[k]):
                    add_row(cells, (lo + np.int64(S[i, a])) * stride, y[i], 1.0 if unit else w[i], count_rows,
                            n_classes)


def compact_splits(kept, node_pos, n_nodes, schema: Schema, wide, scratch, n_channels, weighted, crit, params,
                   min_weight_leaf, lead) -> list:
    """The best split of each of ``n_nodes`` nodes counted from rows in memory (``kept``, a
    :class:`rainforest.rows.KeptRows`; ``node_pos``: tree node ->
    index), over every attribute: per node ``None`` (no valid split) or ``(score, attribute,
    left_slot, right_slot, inf_threshold, n_branches, branch_of_slot, avc_set)`` with the slots the
    attribute's own and ``branch_of_slot`` / ``avc_set`` over the node's compact slots (missing last)."""
    table, base = scratch
    starts, ends = kept.spans(node_pos, n_nodes)
    n_slots = np.array([a.n_slots + 1 for a in schema.attributes], np.int64)  # the missing slot (last) too
    n_attr = len(n_slots)
    rows = ends - starts
    region = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    present = np.empty((max(int(wide.max()), 1), max(int(rows.sum()), 1)), np.int32)  # wide attributes only
    found = _distinct_slots(kept.S, starts, ends, n_slots, wide, table, base, present, region)
    sizes = np.where(wide > 0, found + 1, n_slots)  # (n_nodes, n_attr): a wide attribute's slots and its missing one
    node_offsets = np.zeros((n_nodes, n_attr + 1), np.int64)
    np.cumsum(sizes, axis=1, out=node_offsets[:, 1:])
    node_start = np.concatenate([[0], np.cumsum(node_offsets[:, -1])]).astype(np.int64)
    block = np.zeros((int(node_start[-1]), n_channels))
    _fill(kept.S, kept.y, kept.w, starts, ends, n_slots, wide, table, base, present, region, block, node_start,
          node_offsets, weighted)
    attr, score, left, right, inf_thr, n_branches, branches, branch_start = best_splits(
        block, node_start, node_offsets, schema.kinds, schema.label.n_channels, weighted, crit, params.multiway,
        float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive,
        sizes.max(axis=1) if n_nodes else 1, lead)
    out = []
    for k in range(n_nodes):
        a = int(attr[k])
        if a < 0:
            out.append(None)
            continue
        ls, rs = int(left[k]), int(right[k])
        if wide[a] > 0:  # compact positions back to the attribute's slots
            mine = present[wide[a] - 1, region[k]:region[k] + int(found[k, a])]
            ls = int(mine[ls]) if ls >= 0 else ls
            rs = int(mine[rs]) if rs >= 0 else rs
        lo, hi = node_start[k] + node_offsets[k, a], node_start[k] + node_offsets[k, a + 1]
        out.append((float(score[k]), a, ls, rs, bool(inf_thr[k]), int(n_branches[k]),
                    branches[branch_start[k]:branch_start[k] + hi - lo].copy(), block[lo:hi].copy()))
    return out
