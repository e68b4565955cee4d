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

import functools
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from .avc import AvcPass, group_rows
from .count_bins import counted_slot
from .counting import add_row
from .exact_bins import NO_SLOT, ValueCounts, boundary_targets, candidate_mask, refine, refined_splits
from .rows import RowBlock, descend
from .schema import NUMERIC



@numba.njit(cache=True, parallel=True, nogil=True)
def _pick(S, y, w, order, starts, ends, attrs, offsets, shift, missing, n_counted, key_base, table, table_start, group,
          out_group, out_rank, out_y, out_w, at, fill):
    """The rows whose counted slot is a candidate at their node, per (attribute, node) pair and row
    in row order: their candidate cell's number ``group[k, c]`` (-1: not a candidate), slot (a rank
    or a value key), class and weight (``out_w`` empty when every weight is one).  With ``fill`` False, ``at[p + 1]``
    becomes pair ``p``'s count (a block may be a whole spill partition: outputs sized for all its
    rows would cost more than this scan); with ``fill`` True pair ``p`` writes from ``at[p]``, so
    the pairs run in parallel and the output is the serial one."""
    unit = w.shape[0] == 0
    direct = order.shape[0] == 0
    n_nodes = starts.shape[0]
    for p in numba.prange(attrs.shape[0] * n_nodes):
        j = p // n_nodes
        k = p - j * n_nodes
        a = attrs[j]
        tab = table[table_start[a]:table_start[a + 1]]
        if shift[a] == 0 and tab.shape[0] == 0:
            continue
        base = np.uint64(offsets[j])
        lo = starts[k]
        cells = group[k]
        m = at[p] if fill else 0
        for t in range(ends[k] - lo):
            i = lo + t if direct else order[lo + t]
            s = np.uint64(S[i, a])
            g = cells[base + counted_slot(s, shift[a], missing[a], n_counted[a], key_base[a], tab)]
            if g >= 0:
                if fill:
                    out_group[m] = g
                    out_rank[m] = S[i, a]
                    out_y[m] = y[i]
                    if not unit:
                        out_w[m] = w[i]
                m += 1
        if not fill:
            at[p + 1] = m


def _picked(m: int, S: np.ndarray, y: np.ndarray, weighted: bool) -> tuple:
    """Arrays for ``m`` picked rows: candidate cell, slot (in the type of the slots ``S``: a rank, or a
    value key), class (in the type of the codes ``y``) and weight (none when all are one): 9 bytes a
    row unweighted with ranks of up to 32 bits, 13 with keys."""
    return np.empty(m, np.int32), np.empty(m, S.dtype), np.empty(m, y.dtype), np.empty(m if weighted else 0)


@numba.njit(cache=True, parallel=True, nogil=True)
def _sum_cells(group, rank, cls, weight, first, span, n_channels, count_rows):
    """The cells of picked rows: ``(cell, slot)`` pairs in order, unique, and their class counts, each
    cell's rows added in row order (:func:`rainforest.counting.add_row`).  A stable counting sort by
    candidate cell, then per cell of a bin of ranks a scratch row per rank (``first[g]`` up to
    ``span[g]`` ranks: linear in the rows, where a sort was not), and per cell of a keyed bin
    (``span[g]`` 0: its keys could be any) a stable sort of its rows by key, cells on threads."""
    n, n_groups = group.shape[0], first.shape[0]
    start = np.zeros(n_groups + 1, np.int64)
    for i in range(n):
        start[group[i] + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    at = start[:-1].copy()
    order = np.empty(n, np.int32)  # a read picks fewer than 2**31 rows (gather_groups' room)
    for i in range(n):
        order[at[group[i]]] = i
        at[group[i]] += 1
    width = max(span.max(), 1) if n_groups else 1
    mark = np.zeros(width, np.bool_)
    touched = np.empty(width, np.int64)
    n_distinct = np.zeros(n_groups + 1, np.int64)  # first each cell's distinct slots, to size the output
    for g in range(n_groups):
        if span[g] == 0:
            continue
        nt = 0
        for t in range(start[g], start[g + 1]):
            r = rank[order[t]] - first[g]
            if not mark[r]:
                mark[r] = True
                touched[nt] = r
                nt += 1
        for u in range(nt):
            mark[touched[u]] = False
        n_distinct[g + 1] = nt
    for g in numba.prange(n_groups):
        if span[g] != 0 or start[g + 1] == start[g]:
            continue
        seg = order[start[g]:start[g + 1]]
        keys = rank[seg]
        if keys.min() == keys.max():  # one value (a heavy value's own bin): nothing to sort
            n_distinct[g + 1] = 1
            continue
        by_key = np.argsort(keys, kind="mergesort")  # stable: equal keys keep their row order
        order[start[g]:start[g + 1]] = seg[by_key]
        nt = 1
        for t in range(start[g] + 1, start[g + 1]):
            nt += rank[order[t]] != rank[order[t - 1]]
        n_distinct[g + 1] = nt
    for g in range(n_groups):
        n_distinct[g + 1] += n_distinct[g]
    cell = np.empty(n_distinct[-1], np.int32)
    slot = np.empty(n_distinct[-1], rank.dtype)
    counts = np.zeros((n_distinct[-1], n_channels))
    scratch = np.zeros((width, n_channels))
    unit = weight.shape[0] == 0
    rows_channel = n_channels - 1
    for g in range(n_groups):
        if span[g] == 0:
            continue
        nt = 0
        for t in range(start[g], start[g + 1]):
            i = order[t]
            r = rank[i] - first[g]
            if not mark[r]:
                mark[r] = True
                touched[nt] = r
                nt += 1
            add_row(scratch[r], 0, cls[i], 1.0 if unit else weight[i], count_rows, rows_channel)
        ranks = np.sort(touched[:nt])
        m = n_distinct[g]
        for u in range(nt):
            r = ranks[u]
            cell[m] = g
            slot[m] = first[g] + r
            counts[m] = scratch[r]
            scratch[r] = 0.0
            mark[r] = False
            m += 1
    for g in numba.prange(n_groups):
        if span[g] != 0:
            continue
        m = n_distinct[g] - 1
        for t in range(start[g], start[g + 1]):
            i = order[t]
            if t == start[g] or rank[i] != rank[order[t - 1]]:
                m += 1
                cell[m] = g
                slot[m] = rank[i]
            add_row(counts[m], 0, cls[i], 1.0 if unit else weight[i], count_rows, rows_channel)
    return cell, slot, counts


def _union(cell_a, slot_a, counts_a, cell_b, slot_b, counts_b) -> tuple:
    """Cells of two states added cell by cell (``a``'s first: ``0 + a + b`` is ``a + b``, as AVC-groups
    merge); each state's ``(cell, slot)`` pairs are unique and in order."""
    cell, slot = np.concatenate([cell_a, cell_b]), np.concatenate([slot_a, slot_b])
    by = np.lexsort((slot, cell))  # stable: of two equal pairs, a's comes first
    cell, slot, counts = cell[by], slot[by], np.concatenate([counts_a, counts_b])[by]
    new = np.ones(len(cell), np.bool_)
    new[1:] = (cell[1:] != cell[:-1]) | (slot[1:] != slot[:-1])
    out = counts[new]
    twice = np.flatnonzero(~new)  # the second of a pair: b's, added to a's
    out[np.cumsum(new)[twice] - 1] += counts[twice]
    return cell[new], slot[new], out


@dataclass(frozen=True)
class CandidateCells:
    """A read's candidate cells, numbered in key order: cell ``g`` is slot ``high[g] % n_slots`` of
    node ``high[g] // n_slots``; its ranks are ``first[g]`` up to ``first[g] + span[g]`` (a bin of
    ``2**shift`` ranks, or the one missing rank; ``span`` 0: a bin of value keys, any of them)."""

    number: np.ndarray  # (n_nodes, n_slots): a candidate's cell number, -1 elsewhere
    high: np.ndarray
    first: np.ndarray
    span: np.ndarray

    @classmethod
    def of(cls, candidates: np.ndarray, level: AvcPass) -> "CandidateCells":
        high = np.flatnonzero(candidates.ravel())
        number = np.full(candidates.shape, -1, np.int32)
        number.ravel()[high] = np.arange(len(high), dtype=np.int32)
        c, offsets = level.counted, level.group_offsets()
        slot = high % candidates.shape[1]
        j = np.searchsorted(offsets, slot, side="right") - 1
        a, b = level.attrs[j], (slot - offsets[j]).astype(np.uint64)
        missing = b == c.n_counted[a]
        first = np.where(missing, c.missing[a], b << c.shift[a]).astype(np.int64)
        span = np.where(missing, 1, np.uint64(1) << c.shift[a]).astype(np.int64)
        span[c.keyed[a] & ~missing] = 0  # a bin of keys: its slots are summed by sorting them
        return cls(number, high.astype(np.int64), first, span)


@dataclass
class ValueState:
    """The value cells summed so far (unique ``(cell, slot)`` pairs in order: a candidate cell's number
    and a rank or value key in it; their ``(n, n_channels)`` ``counts``) and the rows picked since
    (``pending``: per block, candidate cell, slot, class and weight arrays, in row order), which
    :meth:`settle` sums: once per read, not once per batch.  ``cells``: the read's
    :class:`CandidateCells`."""

    cell: np.ndarray
    slot: np.ndarray
    counts: np.ndarray
    weighted: bool
    cells: CandidateCells
    pending: list = field(default_factory=list)

    @classmethod
    def empty(cls, n_channels: int, weighted: bool, cells: CandidateCells) -> "ValueState":
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, n_channels)), weighted, cells)

    def settle(self) -> "ValueState":
        """Sum the pending rows into cells (each cell's rows in row order, by
        :func:`rainforest.counting.add_row`'s rule: a row of weight 0 adds no row count) and add
        them to the cells held, as AVC-groups merge.  (Gathering serves whole-number weights only,
        :func:`rainforest.plan.counted_slots_for`: every sum here is exact, whatever its order.)"""
        if not self.pending:
            return self
        group, rank, cls, weight = self._joined()
        cells = self.cells
        summed = _sum_cells(group, rank, cls, weight, cells.first, cells.span, self.counts.shape[1], self.weighted)
        if len(self.cell):
            summed = _union(self.cell, self.slot, self.counts, *summed)
        self.cell, self.slot, self.counts = summed
        return self

    def _joined(self) -> tuple:
        """The pending rows as one set of arrays, each block's freed once copied (a read's picked rows
        are held once, not twice, at its deepest levels the largest thing the gathering holds)."""
        first = self.pending[0]
        out = tuple(np.empty(sum(len(p[i]) for p in self.pending), first[i].dtype) for i in range(len(first)))
        at = np.zeros(len(first), np.int64)
        self.pending.reverse()
        while self.pending:
            block = self.pending.pop()
            for i, a in enumerate(block):
                out[i][at[i]:at[i] + len(a)] = a
                at[i] += len(a)
        return out

    def value_counts(self, n_slots: int) -> ValueCounts:
        """The cells as :class:`rainforest.exact_bins.ValueCounts` (node, counted slot of ``n_slots``, slot)."""
        self.settle()
        high = self.cells.high[self.cell]
        return ValueCounts(high // n_slots, high % n_slots, self.slot.astype(np.int64), self.counts)


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

    @functools.cached_property
    def cells(self) -> CandidateCells:
        return CandidateCells.of(self.candidates, self.level)

    def new_state(self) -> ValueState:
        return ValueState.empty(self.level.n_channels, self.level.weighted, self.cells)

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
            order, starts, ends = group_rows(rows.node, task.node_pos, task.n_nodes, 4 * numba.get_num_threads())
        return self._add(state, rows.S, rows.y, rows.w, order, starts, ends)

    def hold(self, pieces: list):
        return self.level.hold(pieces)

    def count_held(self, state: ValueState, held) -> ValueState:
        """Add the candidate rows of a worker's kept partition (:meth:`rainforest.avc.AvcPass.hold`)."""
        if held is None:
            return state
        self.level.advance(held)
        return self.count_kept(state, held)

    def count_kept(self, state: ValueState, kept) -> ValueState:
        """Add the candidate rows kept in memory (a :class:`rainforest.rows.KeptRows`)."""
        starts, ends = kept.spans(self.level.node_pos, self.level.n_nodes)
        return self._add(state, kept.S, kept.y, kept.w, np.empty(0, np.int32), starts, ends)

    def _add(self, state, S, y, w, order, starts, ends) -> ValueState:
        task, c = self.level, self.level.counted
        args = (S, y, w, order, starts, ends, task.attrs, task.group_offsets(), *c.kernel_args(), self.cells.number)
        at = np.zeros(len(task.attrs) * len(starts) + 1, np.int64)
        _pick(*args, *_picked(0, S, y, False), at, False)
        np.cumsum(at, out=at)
        if at[-1]:
            out = _picked(int(at[-1]), S, y, len(w) > 0)
            _pick(*args, *out, at, True)
            state.pending.append(out)
        return state

    def merge(self, a: ValueState, b: ValueState) -> ValueState:
        """``b``'s cells added to ``a``'s, as two AVC-groups merge."""
        a.settle()
        b.settle()
        if len(b.cell) == 0 or len(a.cell) == 0:
            return b if len(a.cell) == 0 else a
        return ValueState(*_union(a.cell, a.slot, a.counts, b.cell, b.slot, b.counts), a.weighted, a.cells)


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


def picked_row_bytes(weighted: bool, keyed: bool = False, n_channels: int = 0) -> int:
    """Bytes the gathering holds per picked row at its peak: the pending arrays and their joined copy
    (cell, rank, class: 9 bytes; 17 weighted) and the counting sort's order (8).  The summed cells are
    at most one a row, for bins of ranks usually far fewer.  With value keys (8 bytes, not 4) the pending
    arrays are joined, then summed: the joined rows, their order (4) and the cells (cell 4, key 8 and
    ``n_channels`` counts: continuous columns' keys are mostly distinct, so a cell a row)."""
    if not keyed:
        return 2 * (9 + (8 if weighted else 0)) + 8
    picked = 13 + (8 if weighted else 0)  # cell, key, class (and weight)
    return max(2 * picked, picked + 4 + 12 + 8 * n_channels)  # joined, order, cells (cell, key, counts)


def gather_groups(avc, candidates, n_classes: int, weighted: bool, positions: np.ndarray,
                  room_rows: int) -> list[np.ndarray]:
    """``positions`` (of nodes in ``avc``, read from one place) in consecutive groups whose candidate
    rows (what their AVC-groups count in candidate bins: the rows a read of their values picks) stay
    within ``room_rows``: each group is one read of the level's rows, and a node whose candidate rows
    alone exceed the room is a group of its own.  The gathering's memory is so bounded by the budget,
    not by the rows (issue 13, item 2), at the price of further reads."""
    rows = avc[..., -1] if weighted else avc[..., :n_classes].sum(axis=-1)  # the row-count channel, or the classes
    expected = (rows * candidates).sum(axis=1)[positions]
    groups, first, held = [], 0, 0.0
    for i, e in enumerate(expected):
        if i > first and held + e > room_rows:
            groups.append(positions[first:i])
            first, held = i, 0.0
        held += e
    return groups + [positions[first:]] if len(positions) else []


def gather_values(supply, make_task, candidates, chunk: list, idx: np.ndarray, from_memory: bool, level: int,
                  n_tree_nodes: int) -> tuple[ValueCounts, int, int]:
    """The value cells of the nodes at ``idx`` (positions in ``chunk``) by one read of their rows
    (``supply.count`` of a :class:`ValuePass`; ``make_task(node_pos)`` gives the level's
    :class:`rainforest.avc.AvcPass` counting those nodes), renumbered ``0 .. len(idx) - 1`` as
    :func:`exact_splits` takes them; with the reads made (0 when no node has a candidate bin) and the
    passes over the data among them."""
    reading = idx[candidates[idx].any(axis=1)]
    node_pos = np.full(n_tree_nodes, -1, np.int32)
    node_pos[np.asarray(chunk)[reading]] = reading
    task = ValuePass(make_task(node_pos), candidates)
    state, reads, from_data = task.new_state(), 0, 0
    if len(reading):
        state, from_data = supply.count(task, f"values of {int(candidates[reading].sum())} candidate bin(s)",
                                        from_memory, [chunk[k] for k in reading], level)
        reads = 1
    values = state.value_counts(candidates.shape[1])
    renumber = np.full(len(chunk), -1, np.int64)
    renumber[idx] = np.arange(len(idx))
    return ValueCounts(renumber[values.node], values.slot, values.value, values.counts), reads, from_data


REFINED_SLOTS = 1 << 20  # nodes are refined and searched in chunks of about this many slots


def exact_splits(avc, candidates, values: ValueCounts, offsets, kinds, binned, n_classes, weighted, criterion,
                 params, min_weight_leaf, lead) -> list:
    """The best split of each node over its binned AVC-group refined with the candidate bins' values
    (:func:`rainforest.exact_bins.refined_splits`): per node ``None`` (no valid split) or ``(score,
    attribute, left_slot, right_slot, inf_threshold, n_branches, branches, block)``: the attribute's
    index in the group, the slots the attribute's own (ranks), ``branches`` and ``block`` over the
    node's refined slots of it (its missing slot last).  Nodes are refined a chunk of about
    :data:`REFINED_SLOTS` slots at a time, so a deep level's refined groups are never all held."""
    k, n_slots = candidates.shape
    per_node = n_slots + np.bincount(values.node, minlength=k)
    ends = np.searchsorted(values.node, np.arange(k + 1))  # each node's first value cell
    out, first = [], 0
    while first < k:
        last = first + max(1, int(np.searchsorted(np.cumsum(per_node[first:]), REFINED_SLOTS, side="right")))
        v = slice(ends[first], ends[last])
        part = ValueCounts(values.node[v] - first, values.slot[v], values.value[v], values.counts[v])
        out += _chunk_splits(avc[first:last], candidates[first:last], part, offsets, kinds, binned, n_classes,
                             weighted, criterion, params, min_weight_leaf, lead)
        first = last
    return out


def _chunk_splits(avc, candidates, values, offsets, kinds, binned, n_classes, weighted, criterion, params,
                  min_weight_leaf, lead) -> list:
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
            if left_rank == NO_SLOT or right_rank == NO_SLOT:
                raise AssertionError("an exact threshold beside a bin whose values were not gathered")
        # copies: a view would keep the chunk's whole refined block alive as long as the split is
        out.append((sp.score, a, int(left_rank), int(right_rank), sp.inf_threshold, sp.n_branches,
                    sp.branches[:hi - lo].copy(), refined.block[lo:hi].copy()))
    return out
