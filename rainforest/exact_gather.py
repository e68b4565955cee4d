"""Exact splits of nodes counted in bins of ranks: the candidate bins' values, gathered by a second
read of the level's rows, refine the bins (issue 13).

A level's pass counts exact mode's wide numeric attributes in bins (:mod:`rainforest.count_bins`).
The search over those bins gives each node a target; the bins that may hold a better split, and
the bins either side of every boundary that may win, are candidates
(:func:`rainforest.exact_bins.candidate_mask`).  :class:`ValuePass` then reads the same rows again
(from memory, the spill folder, the workers' store, or the data: wherever the level read them) and
sums, per node, candidate bin and rank, the class counts of the rows there, adding each row to its
cell in row order as the pass over one slot per rank would.  The refined AVC-groups
(:func:`rainforest.exact_bins.refine`) are searched by the same kernels (:func:`exact_splits`), and
the winning split's slots are ranks again: the tree is the one counting a slot per rank builds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from .avc import AvcPass, group_rows
from .count_bins import counted_slot
from .counting import add_row
from .exact_bins import ValueCounts, boundary_targets, candidate_mask, refine, refined_splits
from .rows import RowBlock, descend
from .schema import NUMERIC

_RANK_BITS = 32  # a key is (node, counted slot) above, the rank (an int32 slot) below


@numba.njit(cache=True, nogil=True)
def _pick(S, y, w, order, starts, ends, attrs, offsets, shift, missing, n_counted, candidates, out_key, out_y, out_w,
          fill):
    """The rows whose counted slot is a candidate at their node: per attribute, node and row in row
    order, its key (node, counted slot, rank), class and weight.  With ``fill`` False only counts them."""
    n_slots = np.uint64(candidates.shape[1])
    unit = w.shape[0] == 0
    direct = order.shape[0] == 0
    m = 0
    for j in range(attrs.shape[0]):
        a = attrs[j]
        if shift[a] == 0:
            continue
        base = np.uint64(offsets[j])
        for k in range(starts.shape[0]):
            lo = starts[k]
            for t in range(ends[k] - lo):
                i = lo + t if direct else order[lo + t]
                s = np.uint64(S[i, a])
                c = base + counted_slot(s, shift[a], missing[a], n_counted[a])
                if candidates[k, c]:
                    if fill:
                        out_key[m] = np.int64(((np.uint64(k) * n_slots + c) << np.uint64(_RANK_BITS)) | s)
                        out_y[m] = y[i]
                        out_w[m] = 1.0 if unit else w[i]
                    m += 1
    return m


@numba.njit(cache=True, nogil=True)
def _run_keys(key, order):
    """The distinct keys of ``key``, in the sorted ``order``."""
    n = 0
    for t in range(order.shape[0]):
        if t == 0 or key[order[t]] != key[order[t - 1]]:
            n += 1
    out = np.empty(n, np.int64)
    u = -1
    for t in range(order.shape[0]):
        if t == 0 or key[order[t]] != key[order[t - 1]]:
            u += 1
            out[u] = key[order[t]]
    return out


@numba.njit(cache=True, nogil=True)
def _add_rows(key, cls, weight, order, counts, count_rows):
    """Add each row (in ``order``: by key, row order within a key) to its key's cell of ``counts``."""
    rows_channel = counts.shape[1] - 1
    u = -1
    for t in range(order.shape[0]):
        i = order[t]
        if t == 0 or key[i] != key[order[t - 1]]:
            u += 1
        add_row(counts[u], 0, cls[i], weight[i], count_rows, rows_channel)


def _union(keys_a, counts_a, keys_b, counts_b) -> tuple[np.ndarray, np.ndarray]:
    """Cells of two states added key by key (``a``'s first: ``0 + a + b`` is ``a + b``, as AVC-groups merge)."""
    key = np.concatenate([keys_a, keys_b])
    order = np.argsort(key, kind="stable")
    keys = _run_keys(key, order)
    counts = np.zeros((len(keys), counts_a.shape[1]))
    _add_cells(key, np.concatenate([counts_a, counts_b]), order, counts)
    return keys, counts


@numba.njit(cache=True, nogil=True)
def _add_cells(key, cells, order, counts):
    u = -1
    for t in range(order.shape[0]):
        i = order[t]
        if t == 0 or key[i] != key[order[t - 1]]:
            u += 1
        for c in range(cells.shape[1]):
            counts[u, c] += cells[i, c]


@dataclass
class ValueState:
    """The value cells summed so far (sorted unique ``keys``, their ``(n, n_channels)`` ``counts``) and
    the rows picked since, in row order (``pending``: key, class and weight arrays), which
    :meth:`settle` adds to their cells: once per read, not once per batch."""

    keys: np.ndarray
    counts: np.ndarray
    weighted: bool
    pending: list = field(default_factory=list)

    @classmethod
    def empty(cls, n_channels: int, weighted: bool) -> "ValueState":
        return cls(np.zeros(0, np.int64), np.zeros((0, n_channels)), weighted)

    def settle(self) -> "ValueState":
        """Add the pending rows to their cells, each cell's in row order after what it held
        (:func:`rainforest.counting.add_row`'s rule: a row of weight 0 adds no row count)."""
        if not self.pending:
            return self
        key, cls, weight = (np.concatenate(p) for p in zip(*self.pending))
        self.pending = []
        order = np.argsort(key, kind="stable")  # row order within each key
        keys = _run_keys(key, order)
        counts = np.zeros((len(keys), self.counts.shape[1]))
        if len(self.keys):  # a cell held already starts from what it held
            at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
            held = self.keys[at] == keys
            counts[held] = self.counts[at[held]]
            only = ~np.isin(self.keys, keys)
        _add_rows(key, cls, weight, order, counts, self.weighted)
        if len(self.keys) and only.any():
            keys, counts = _union(self.keys[only], self.counts[only], keys, counts)
        self.keys, self.counts = keys, counts
        return self

    def value_counts(self, n_slots: int) -> ValueCounts:
        """The cells as :class:`rainforest.exact_bins.ValueCounts` (node, counted slot of ``n_slots``, rank)."""
        self.settle()
        high = self.keys >> _RANK_BITS
        return ValueCounts(high // n_slots, high % n_slots, self.keys & ((1 << _RANK_BITS) - 1), self.counts)


@dataclass
class ValuePass:
    """A :class:`rainforest.storage.PassTask` summing the class counts of every rank in the candidate
    bins of the nodes ``level`` counts (the level's :class:`rainforest.avc.AvcPass`, whose rows,
    routing, counted attributes and weights it shares); ``candidates``: ``(n_nodes, n_slots)`` flags
    over the level's AVC-group slots."""

    level: AvcPass
    candidates: np.ndarray
    spill = None  # a read of candidates writes no spill and keeps no rows
    keep_into = None

    @property
    def store(self):
        return self.level.store

    @property
    def order_free(self) -> bool:
        return self.level.order_free

    def new_state(self) -> ValueState:
        return ValueState.empty(self.level.n_channels, self.level.weighted)

    def shrink(self, state: ValueState) -> ValueState:
        """The state as it leaves a worker: its cells summed there (:func:`rainforest.storage.base.travelling`)."""
        return state.settle()

    def encode(self, batch: pa.RecordBatch, first_row: int) -> RowBlock:
        return self.level.encode(batch, first_row)

    def update(self, state: ValueState, batch: pa.RecordBatch, first_row: int) -> ValueState:
        return self.count(state, self.encode(batch, first_row))

    def count_piece(self, state: ValueState, rows: RowBlock) -> ValueState:
        return self.count(state, rows)

    def count(self, state: ValueState, rows: RowBlock) -> ValueState:
        """Add the candidate rows of a block (from a data pass, the spill or a worker's store)."""
        task = self.level
        if len(task.node_pos) == 1:
            order, starts, ends = np.empty(0, np.int32), np.zeros(task.n_nodes, np.int64), np.zeros(task.n_nodes,
                                                                                                     np.int64)
            if task.node_pos[0] >= 0:
                ends[task.node_pos[0]] = len(rows)
        else:
            descend(rows.S, rows.node, *task.routing)
            order, starts, ends = group_rows(task.node_pos[rows.node], task.n_nodes)
        return self._add(state, rows.S, rows.y, rows.w, order, starts, ends)

    def count_kept(self, state: ValueState, kept) -> ValueState:
        """Add the candidate rows kept in memory (a :class:`rainforest.rows.KeptRows`)."""
        starts, ends = kept.spans(self.level.node_pos, self.level.n_nodes)
        return self._add(state, kept.S, kept.y, kept.w, np.empty(0, np.int32), starts, ends)

    def _add(self, state, S, y, w, order, starts, ends) -> ValueState:
        task, c = self.level, self.level.counted
        args = (S, y, w, order, starts, ends, task.attrs, task.group_offsets(), c.shift, c.missing, c.n_counted,
                self.candidates)
        m = _pick(*args, np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), False)
        if m == 0:
            return state
        key, cls, weight = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m)
        _pick(*args, key, cls, weight, True)
        state.pending.append((key, cls, weight))
        return state

    def merge(self, a: ValueState, b: ValueState) -> ValueState:
        """``b``'s cells added to ``a``'s, as two AVC-groups merge."""
        a.settle()
        b.settle()
        if len(b.keys) == 0 or len(a.keys) == 0:
            return b if len(a.keys) == 0 else a
        return ValueState(*_union(a.keys, a.counts, b.keys, b.counts), a.weighted)


def candidate_bins_of(avc, offsets, kinds, binned, n_classes, weighted, criterion, params, min_weight_leaf,
                      lead) -> np.ndarray:
    """The candidate bins (``(k, n_slots)`` flags) of ``k`` nodes' AVC-groups over a group of attributes
    (at ``offsets``; ``binned``: which are counted in bins of ranks), from each node's best split over
    the bins (:func:`rainforest.exact_bins.candidate_mask`); the slots of other attributes are ranks
    or categories already, never candidates."""
    targets = boundary_targets(avc, offsets, kinds, n_classes, weighted, criterion, params.multiway,
                               float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive, lead)
    candidates = candidate_mask(avc, None, None, offsets, kinds, n_classes, weighted, criterion, targets, lead)
    for j in np.flatnonzero(~np.asarray(binned)):
        candidates[:, offsets[j]:offsets[j + 1]] = False
    return candidates


def exact_splits(avc, candidates, values: ValueCounts, offsets, kinds, binned, n_classes, weighted, criterion,
                 params, min_weight_leaf, lead) -> list:
    """The best split of each node over its binned AVC-group refined with the candidate bins' values
    (:func:`rainforest.exact_bins.refined_splits`): per node ``None`` (no valid split) or ``(score,
    attribute, left_slot, right_slot, inf_threshold, n_branches, branches, block)``: the attribute's
    index in the group, the slots the attribute's own (ranks), ``branches`` and ``block`` over the
    node's refined slots of it (its missing slot last)."""
    refined = refine(avc, None, None, offsets, kinds, candidates, values)
    splits = refined_splits(refined, kinds, n_classes, weighted, criterion, params.multiway,
                            float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive, lead)
    out = []
    for k, sp in enumerate(splits):
        a = sp.attribute
        if a < 0:
            out.append(None)
            continue
        lo = refined.node_start[k] + refined.node_offsets[k, a]
        hi = refined.node_start[k] + refined.node_offsets[k, a + 1]
        if kinds[a] != NUMERIC or not binned[a] or sp.inf_threshold:  # slots as counted, or no threshold
            left_rank, right_rank = sp.left, sp.right
        else:  # the ranks either side of the threshold: values of candidate bins, by construction
            left_rank, right_rank = refined.high[lo + sp.left], refined.low[lo + sp.right]
            if np.isnan(left_rank) or np.isnan(right_rank):
                raise AssertionError("an exact threshold beside a bin whose values were not gathered")
        out.append((sp.score, a, int(left_rank), int(right_rank), sp.inf_threshold, sp.n_branches,
                    sp.branches[:hi - lo], refined.block[lo:hi]))
    return out
