"""Exact splits of nodes counted in bins of ranks: the candidate bins' values, gathered by a second
read of the level's rows, refine the bins (issue 13).

A level's pass counts exact mode's wide numeric attributes in bins (:mod:`rainforest.count_bins`).
The search over those bins gives each node a target; the bins that may hold a better split, and
the bins either side of every boundary that may win, are candidates
(:func:`rainforest.exact_bins.candidate_mask`).  :class:`ValuePass` then reads the same rows again
(from memory, the spill folder, the workers' store, or the data: wherever the level read them) and
sums, per node, candidate bin and rank (or value key), the class counts of the rows there
(:mod:`rainforest.gather_kernels`: rows picked and summed in row order, or, for a bin holding one
value in a block or a dense bin, summed as the block is scanned; gathering serves whole-number
weights only, so every such sum is the one a slot per rank holds).  The refined AVC-groups
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
from .exact_bins import NO_SLOT, ValueCounts, refine, refined_splits
from .gather_kernels import any_split, dense_cells, pick_rows, picked_arrays, sum_cells, union_cells
from .rows import RowBlock, descend
from .rules import branch_summary
from .schema import NUMERIC


def slot_spans(counted, attrs: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per slot of an AVC-group over ``attrs`` (at ``offsets``; ``counted``: the level's
    :class:`rainforest.count_bins.CountedSlots`): its first rank and how many ranks from there it
    holds (a bin of ranks ``2**shift``, the last one fewer; a slot counted as it is, or the missing
    slot, one; 0 for a bin of value keys, whose keys could be any)."""
    slot = np.arange(offsets[-1])
    j = np.searchsorted(offsets, slot, side="right") - 1
    a, b = attrs[j], (slot - offsets[j]).astype(np.int64)
    n_ranks, shift = counted.missing[a].astype(np.int64), counted.shift[a].astype(np.int64)
    missing = b == counted.n_counted[a].astype(np.int64)
    first = np.where(missing, n_ranks, b << shift)
    span = np.where(missing, 1, np.minimum(np.int64(1) << shift, n_ranks - np.minimum(first, n_ranks)))
    span[counted.keyed[a] & ~missing] = 0
    return first, span


@dataclass(frozen=True)
class CandidateCells:
    """A read's candidate cells, numbered in key order: cell ``g`` is slot ``high[g] % n_slots`` of
    node ``high[g] // n_slots``; its ranks are ``first[g]`` up to ``first[g] + span[g]`` (a bin of
    ``2**shift`` ranks, or the one missing rank; ``span`` 0: a bin of value keys, any of them).  A
    dense cell (:func:`gathering_plan`) has ``span[g]`` rows of ``n_dense`` from ``dense_at[g]``; the
    others' ``dense_at`` is -1."""

    number: np.ndarray  # (n_nodes, n_slots): a candidate's cell number, -1 elsewhere
    high: np.ndarray
    first: np.ndarray
    span: np.ndarray
    dense_at: np.ndarray
    n_dense: int

    @classmethod
    def of(cls, candidates: np.ndarray, level: AvcPass, dense: np.ndarray | None = None) -> "CandidateCells":
        high = np.flatnonzero(candidates.ravel())
        number = np.full(candidates.shape, -1, np.int32)
        number.ravel()[high] = np.arange(len(high), dtype=np.int32)
        first, span = slot_spans(level.counted, level.attrs, level.group_offsets())
        slot = high % candidates.shape[1]
        first, span = first[slot], span[slot]
        dense_at = np.full(len(high), -1, np.int64)
        on = dense.ravel()[high] if dense is not None else np.zeros(len(high), np.bool_)
        ends = np.cumsum(span[on])
        dense_at[on] = ends - span[on]
        return cls(number, high.astype(np.int64), first, span, dense_at, int(ends[-1]) if len(ends) else 0)


@dataclass
class ValueState:
    """The value cells summed so far (unique ``(cell, slot)`` pairs in order: a candidate cell's number
    and a rank or value key in it; their ``(n, n_channels)`` ``counts``) and the rows picked since
    (``pending``: per block, candidate cell, slot, class and weight arrays, in row order), which
    :meth:`settle` sums: once per read, not once per batch; beside them the blocks' cells of one
    slot, summed already (``summed``), and the dense cells' rows of counts (``dense``).  ``cells``:
    the read's :class:`CandidateCells`."""

    cell: np.ndarray
    slot: np.ndarray
    counts: np.ndarray
    weighted: bool
    cells: CandidateCells
    pending: list = field(default_factory=list)
    summed: list = field(default_factory=list)  # blocks' cells of one slot: (cell, slot, counts), in order
    picked: int = 0  # rows picked so far (pending, or summed by settle)
    dense: np.ndarray | None = None  # the dense cells' rows of class counts, one per rank (allocated by a block)

    @classmethod
    def empty(cls, n_channels: int, weighted: bool, cells: CandidateCells) -> "ValueState":
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, n_channels)), weighted, cells)

    def dense_rows(self) -> np.ndarray:
        """The dense cells' rows of counts, allocated at first use (none where no cell is dense)."""
        if self.dense is None:
            self.dense = np.zeros((self.cells.n_dense, self.counts.shape[1]))
        return self.dense

    def settle(self) -> "ValueState":
        """Sum the pending rows into cells (each cell's rows in row order, by
        :func:`rainforest.counting.add_row`'s rule: a row of weight 0 adds no row count), take the
        dense cells' ranks that rows reached, and add both to the cells held, as AVC-groups merge.
        (Gathering serves whole-number weights only, :func:`rainforest.plan.counted_slots_for`:
        every sum here is exact, whatever its order.)"""
        cells, parts = self.cells, []
        if self.pending:
            group, rank, cls, weight = self._joined()
            parts.append(sum_cells(group, rank, cls, weight, cells.first, cells.span, self.counts.shape[1],
                                    self.weighted))
        if self.dense is not None:
            parts.append(dense_cells(self.dense, cells.dense_at, cells.first, cells.span))
            self.dense = None
        parts += self.summed
        self.summed = []
        if parts:
            self.cell, self.slot, self.counts = union_cells(*([(self.cell, self.slot, self.counts)] + parts))
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
    dense: np.ndarray | None = None  # flags of the candidate cells counted in place (gathering_plan)
    # where a read's picked rows and summed cells go instead of its state's lists: a pair of objects
    # with ``append`` (rainforest.gather_scratch: each group's to files of its own)
    sinks: tuple | None = None
    spill = None  # a read of candidates writes no spill and keeps no rows
    keep_into = None
    # nor moves a row past the node the level's count routed it to: the spill's node files, which
    # that count wrote back, stay as they are (descend from them is idempotent)
    routes_rows = False
    # the nodes of the last spilled block columns_for found routed (count() leaves it as it is)
    _routed: object = field(default=None, init=False, repr=False)

    @property
    def store(self):
        return self.level.store

    @property
    def order_free(self) -> bool:
        return self.level.order_free

    @functools.cached_property
    def cells(self) -> CandidateCells:
        return CandidateCells.of(self.candidates, self.level, self.dense)

    @functools.cached_property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """:func:`rainforest.gather_kernels.pick_rows`'s (attribute, node) pairs ``j * n_nodes + k`` and
        their candidate cells: pair ``l``'s are ``cells[start[l]:start[l + 1]]``."""
        cells, offsets = self.cells, self.level.group_offsets()
        n_nodes, n_slots = self.candidates.shape
        pair = (np.searchsorted(offsets, cells.high % n_slots, side="right") - 1) * n_nodes + cells.high // n_slots
        n_pairs = (len(offsets) - 1) * n_nodes
        start = np.zeros(n_pairs + 1, np.int64)
        np.cumsum(np.bincount(pair, minlength=n_pairs), out=start[1:])
        return start, np.argsort(pair, kind="stable").astype(np.int64)

    @functools.cached_property
    def candidate_attributes(self) -> frozenset:
        """The attributes of the pairs with candidate cells: the only slot columns :meth:`count` reads."""
        pair_start, _ = self.pairs
        n_nodes = self.candidates.shape[0]
        with_cells = np.flatnonzero(np.diff(pair_start) > 0) // max(n_nodes, 1)
        return frozenset(int(a) for a in np.asarray(self.level.attrs)[np.unique(with_cells)])

    @property
    def spilled_keys(self) -> str:
        """How a spilled read gives this pass its keyed columns (:meth:`rainforest.spill.Spill.read`'s
        ``keyed_as``): with their bins beside the keys, where it has keyed attributes, so that its scan
        for candidate cells reads two bytes a row and the keys of candidate rows only."""
        return "both" if self.level.counted.keyed.any() else "keys"

    def columns_for(self, node: np.ndarray):
        """The slot columns a spilled block of rows at ``node`` needs: the candidate attributes' where
        every row stands at a node the level's count routed it to (the spill's node files, written back
        by that count), else all (a row at a split node is routed by :meth:`count` first)."""
        if any_split(self.level.routing[1], node):
            return None
        self._routed = node  # count() need not route this block: the scan found no row to move
        return self.candidate_attributes

    def new_state(self) -> ValueState:
        state = ValueState.empty(self.level.n_channels, self.level.weighted, self.cells)
        if self.sinks is not None:
            state.pending, state.summed = self.sinks
        return state

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
        if len(task.node_pos) == 1:  # the tree is its root: every row is there, in row order
            order, starts, ends = np.empty(0, np.int32), np.zeros(task.n_nodes, np.int64), np.zeros(task.n_nodes,
                                                                                                     np.int64)
            if task.node_pos[0] >= 0:
                ends[task.node_pos[0]] = len(rows)
        else:
            if rows.node is not self._routed:
                descend(rows.S, rows.node, *task.routing)
            order, starts, ends = group_rows(rows.node, task.node_pos, task.n_nodes, 4 * numba.get_num_threads())
        return self._add(state, rows.S, rows.y, rows.w, order, starts, ends, rows.bins)

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

    def _add(self, state, S, y, w, order, starts, ends, bins: np.ndarray | None = None) -> ValueState:
        """Add the candidate rows of ``S`` (``bins``: its keyed columns' bins, read beside them)."""
        task, c, cells = self.level, self.level.counted, self.cells
        if cells.n_dense and len(w):
            raise AssertionError("dense candidate cells count unit weights only")
        n_cells = len(cells.high)
        top = np.iinfo(S.dtype)
        low, high = np.full(n_cells, top.max, S.dtype), np.full(n_cells, top.min, S.dtype)
        one_value, n_in = np.zeros((n_cells, state.counts.shape[1])), np.zeros(n_cells, np.int64)
        pair_start, pair_cells = self.pairs
        from_bins = c.keyed if bins is not None else np.zeros(len(c.shift), np.bool_)
        args = (S, y, w, order, starts, ends, task.attrs, task.group_offsets(), *c.kernel_args(),
                NO_BINS if bins is None else bins, from_bins, cells.number,
                pair_start, pair_cells, cells.first, cells.dense_at, state.dense_rows(), low, high, one_value, n_in,
                task.weighted)
        notes = self._notes(starts, ends)
        at = np.zeros(len(pair_start), np.int64)
        pick_rows(*args, *notes, *picked_arrays(0, S, y, False), at, False)
        one = np.flatnonzero((low == high) & (n_in > 1))  # cells of rows of one slot in this block: summed already
        if len(one):
            state.summed.append((one.astype(np.int32), low[one].astype(np.int64), one_value[one]))
        np.cumsum(at, out=at)
        if at[-1]:
            out = picked_arrays(int(at[-1]), S, y, len(w) > 0)
            pick_rows(*args, *notes, *out, at, True)
            state.pending.append(out)
            state.picked += int(at[-1])
        return state

    def _notes(self, starts: np.ndarray, ends: np.ndarray) -> tuple:
        """Room for :func:`rainforest.gather_kernels.pick_rows` to note the rows of candidate cells as it
        first scans a block (as many a pair as its node has rows), so its second call reads the notes
        rather than every row again; none (the second call scans again) where that room would pass
        :data:`NOTED_ROWS`, as for all the rows kept in memory at once."""
        pair_start, _ = self.pairs
        n_nodes = len(starts)
        with_cells = np.diff(pair_start) > 0
        bound = np.where(with_cells, np.tile(ends - starts, len(with_cells) // max(n_nodes, 1)), 0)
        total = int(bound.sum())
        if total > NOTED_ROWS or not total:
            empty = np.empty(0, np.int64)
            return empty, np.empty(0, np.int32), empty, empty
        seen_at = np.zeros(len(bound) + 1, np.int64)
        np.cumsum(bound, out=seen_at[1:])
        return np.empty(total, np.int64), np.empty(total, np.int32), seen_at, np.zeros(len(bound), np.int64)

    def merge(self, a: ValueState, b: ValueState) -> ValueState:
        """``b``'s cells added to ``a``'s, as two AVC-groups merge."""
        a.settle()
        b.settle()
        return ValueState(*union_cells((a.cell, a.slot, a.counts), (b.cell, b.slot, b.counts)), a.weighted, a.cells,
                          picked=a.picked + b.picked)


def value_pass(make_task, candidates: np.ndarray, dense: np.ndarray, chunk: list, reading: np.ndarray,
               n_tree_nodes: int) -> ValuePass:
    """The :class:`ValuePass` reading the rows of the chunk's nodes at ``reading`` (positions in
    ``chunk``; ``make_task(node_pos)`` gives the level's :class:`rainforest.avc.AvcPass` counting them)
    for their ``candidates``, counting dense cells in place only where one of them has some."""
    node_pos = np.full(n_tree_nodes, -1, np.int32)
    node_pos[np.asarray(chunk)[reading]] = reading
    return ValuePass(make_task(node_pos), candidates, dense if dense[reading].any() else None)


def gather_values(supply, make_task, candidates, dense, chunk: list, idx: np.ndarray, from_memory: bool, level: int,
                  n_tree_nodes: int) -> tuple[ValueCounts, int, int, int]:
    """The value cells of the nodes at ``idx`` (positions in ``chunk``) by one read of their rows
    (``supply.count`` of a :class:`ValuePass`; ``make_task(node_pos)`` gives the level's
    :class:`rainforest.avc.AvcPass` counting those nodes; ``dense``: the cells counted in place,
    :func:`gathering_plan`), renumbered ``0 .. len(idx) - 1`` as :func:`exact_splits` takes them;
    with the reads made (0 when no node has a candidate bin), the passes over the data among them and
    the rows picked (``ValueState.picked``)."""
    reading = idx[candidates[idx].any(axis=1)]
    task = value_pass(make_task, candidates, dense, chunk, reading, n_tree_nodes)
    state, reads, from_data = task.new_state(), 0, 0
    if len(reading):
        state, from_data = supply.count(task, f"values of {int(candidates[reading].sum())} candidate bin(s)",
                                        from_memory, [chunk[k] for k in reading], level)
        reads = 1
    picked = state.picked
    values = state.value_counts(candidates.shape[1])
    del state  # its cells are the values' now: held once
    return numbered_from_zero(values, idx, len(chunk)), reads, from_data, picked


def numbered_from_zero(values: ValueCounts, idx: np.ndarray, n_chunk: int) -> ValueCounts:
    """``values`` of the chunk's nodes at ``idx`` (of ``n_chunk``), their nodes renumbered
    ``0 .. len(idx) - 1`` as :func:`exact_splits` takes them."""
    renumber = np.full(n_chunk, -1, np.int64)
    renumber[idx] = np.arange(len(idx))
    values.node = renumber[values.node]
    return values


NO_BINS = np.zeros((0, 0), np.uint16)  # pick_rows' bins where a block has none beside its slots
NOTED_ROWS = 1 << 22  # rows pick_rows may note in a block's first scan (12 bytes each: 48 MB)
REFINED_SLOTS = 1 << 20  # nodes are refined and searched in chunks of about this many slots


def exact_splits(avc, candidates, values: ValueCounts, offsets, kinds, binned, n_classes, weighted, criterion,
                 params, min_weight_leaf, lead, floor: np.ndarray | None = None,
                 known: ValueCounts | None = None) -> list:
    """The best split of each node over its binned AVC-group refined with the candidate bins' values
    (:func:`rainforest.exact_bins.refined_splits`): per node ``None`` (no valid split) or ``(score,
    attribute, left_slot, right_slot, inf_threshold, n_branches, branches, block)``: the attribute's
    index in the group, the slots the attribute's own (ranks), ``branches`` and ``block`` over the
    node's refined slots of it (its missing slot last).  Nodes are refined a chunk of about
    :data:`REFINED_SLOTS` slots at a time, so a deep level's refined groups are never all held.

    With ``floor`` (per node), a node whose best split scores below it gets ``None`` too: a search over
    some of a node's attributes (:mod:`rainforest.forest_exact`), whose best cannot win if it does not
    reach the best boundary split of all of them, and whose boundary's values may not be gathered.

    ``known`` (sorted by node): bins left whole whose one value is known (:func:`rainforest.exact_bins.refine`)."""
    k, n_slots = candidates.shape
    per_node = n_slots + np.bincount(values.node, minlength=k)
    ends = np.searchsorted(values.node, np.arange(k + 1))  # each node's first value cell
    known_ends = np.searchsorted(known.node, np.arange(k + 1)) if known is not None else None
    out, first = [], 0
    while first < k:
        last = first + max(1, int(np.searchsorted(np.cumsum(per_node[first:]), REFINED_SLOTS, side="right")))
        part = _node_range(values, ends, first, last)
        out += _chunk_splits(avc[first:last], candidates[first:last], part, offsets, kinds, binned, n_classes,
                             weighted, criterion, params, min_weight_leaf, lead,
                             None if floor is None else floor[first:last],
                             None if known is None else _node_range(known, known_ends, first, last))
        first = last
    return out


def _node_range(values: ValueCounts, ends: np.ndarray, first: int, last: int) -> ValueCounts:
    """The cells of nodes ``first .. last - 1`` (``ends``: each node's first cell), numbered from 0."""
    v = slice(ends[first], ends[last])
    return ValueCounts(values.node[v] - first, values.slot[v], values.value[v], values.counts[v])


def better_split(new, old, missing_rows) -> bool:
    """Whether the split ``new`` wins over ``old`` (:func:`exact_splits`' tuples, or None), found for one
    node by searches over different candidate bins (runs, :func:`rainforest.exact_bins.candidate_runs`):
    the search over all of them at once keeps the highest score, on a tie the first attribute, and
    within an attribute the split its scan meets first (:func:`scan_position`).  ``missing_rows[a]``:
    whether attribute ``a``'s missing slot holds rows at the node.  Scores of whole-number counts are
    the same floats in every run, so the ties are real ties."""
    if new is None or old is None:
        return old is None and new is not None
    if new[0] != old[0]:
        return new[0] > old[0]
    if new[1] != old[1]:
        return new[1] < old[1]
    return scan_position(new, missing_rows[new[1]]) < scan_position(old, missing_rows[old[1]])


def scan_position(split, missing_rows: bool) -> tuple:
    """Where the numeric search (:func:`rainforest.criteria.attribute_search`) meets ``split``: first
    its scan with the missing rows right (or with none), ending with the ``+inf`` threshold, then its
    scan with them left; within a scan, by the rank of the last value going left."""
    _, _, left, _, inf_threshold, _, branches, _ = split
    return int(missing_rows and int(branches[-1]) == 0), np.inf if inf_threshold else left


def _chunk_splits(avc, candidates, values, offsets, kinds, binned, n_classes, weighted, criterion, params,
                  min_weight_leaf, lead, floor, known) -> list:
    refined = refine(avc, None, None, offsets, kinds, candidates, values, known)
    splits = refined_splits(refined, kinds, n_classes, weighted, criterion, params.multiway,
                            float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive, lead)
    out = []
    for k, sp in enumerate(splits):
        a = sp.attribute
        if a < 0 or (floor is not None and sp.score < floor[k]):
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
        branches, block = sp.branches[:hi - lo], refined.block[lo:hi]
        if kinds[a] == NUMERIC:  # a threshold: its children's totals and the missing rows' branch are all it needs
            branches, block = branch_summary(block, branches, sp.n_branches)
        # copies: a view would keep the chunk's whole refined block alive as long as the split is
        out.append((sp.score, a, int(left_rank), int(right_rank), sp.inf_threshold, sp.n_branches, branches.copy(),
                    block.copy()))
    return out
