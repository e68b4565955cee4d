"""A level's exact search where wide numeric attributes are counted in bins (issue 13): the bins
searched, the candidate bins found, the gathering of their values planned within the budget and
read (:mod:`rainforest.exact_gather`), the refined AVC-groups searched.

What a read of candidate values holds is planned before it is made (:func:`gathering_plan`): per
candidate cell, its picked rows or, for a dense cell, a row of counts per rank; a cell known to
hold one value at the node (:class:`OneValueBins`: its values were gathered at an ancestor) holds
neither, so heavy values (Agrawal's commission is 0 for 57 % of rows) do not split a level's
gathering into several reads.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .avc import AvcPass
from .count_bins import group_offsets as group_offsets_of
from .exact_bins import ValueCounts, boundary_mask, boundary_targets, candidate_mask, candidate_runs
from .exact_gather import REFINED_SLOTS, better_split, exact_splits, gather_values, slot_spans
from .gather_scratch import gather_scattered
from .spill import disk_shortfall
from .split_choice import keep_better


def gathering_plan(avc: np.ndarray, candidates: np.ndarray, spans: np.ndarray, n_classes: int, weighted: bool,
                   row_bytes: int, one_value: np.ndarray | None = None) -> tuple:
    """What a read gathering the candidate bins of ``avc``'s nodes holds: the candidate cells (their
    flat positions in ``candidates``, ascending: node ``cell // n_slots``, slot ``cell % n_slots``),
    per cell the bytes it holds while the read reads and at most how many values it yields, and
    which cells are counted in place (*dense*, flags over every node and slot: a row of class counts
    per rank of the bin, added to as rows stream by, :func:`rainforest.gather_kernels.pick_rows`)
    rather than by picking their rows (``row_bytes`` each) to sum afterwards.  A cell is dense where
    its row per rank costs no more than its rows picked would: a bin where ranks have rows to spare,
    whose millions of rows would otherwise be picked, sorted and summed.  Unit weights only: a
    rank's presence is then its class counts, and every sum is exact in any order (weighted rows are
    always picked).  A cell flagged in ``one_value`` holds one value at the node: its rows are summed
    as they stream by (only a block's lone row of it is picked), so it costs nothing that grows with
    its rows.  A picked cell yields at most a value a row (a continuous column's rows are mostly
    values of their own), a dense one a value a rank.  Only candidate cells are costed: a deep
    level's AVC-groups hold millions of cells, few of them candidates."""
    n_slots = candidates.shape[1]
    cells = np.flatnonzero(candidates)
    rows = np.rint(rows_of_slots(avc[cells // n_slots, cells % n_slots], n_classes, weighted)).astype(np.int64)
    span = spans[cells % n_slots]
    dense_bytes = span * (8 * avc.shape[-1])
    in_place = (span > 0) & (dense_bytes <= rows * row_bytes) if not weighted else np.zeros(len(cells), np.bool_)
    cost = np.where(in_place, dense_bytes, rows * row_bytes)
    values = np.where(in_place, span, rows)
    if one_value is not None:
        one = one_value.ravel()[cells]
        cost[one], values[one] = 0, 1
    dense = np.zeros(candidates.shape, np.bool_)
    dense.ravel()[cells[in_place]] = True
    return cells, cost, values, dense


def rows_of_slots(counts: np.ndarray, n_classes: int, weighted: bool) -> np.ndarray:
    """The rows each slot of ``counts`` (slots by channels) holds: its row-count channel where rows are
    weighted, else its class counts' sum."""
    return counts[..., -1] if weighted else counts[..., :n_classes].sum(axis=-1)


def held_value_bytes(n_channels: int) -> int:
    """Bytes a gathered value holds through its read's search: its row of
    :class:`rainforest.exact_bins.ValueCounts` (node, slot and value: 24, and its counts)."""
    return 24 + 8 * n_channels


def refined_slot_bytes(n_channels: int) -> int:
    """Bytes a slot of a refined group holds while it is searched (:func:`rainforest.exact_bins.refine`:
    its counts, low, high and origin: 24, and its refined position: 8)."""
    return 32 + 8 * n_channels


def read_bytes(cost: int, values: int, n_slots: int, n_nodes: int, widest: int, n_channels: int) -> int:
    """Bytes a read gathering ``n_nodes`` nodes (AVC-groups of ``n_slots`` slots) holds at its peak: the
    cells' picking (``cost``), the ``values`` they yield, and the refined groups of one chunk of nodes
    (:func:`rainforest.exact_gather.exact_splits` refines about ``REFINED_SLOTS`` slots at a time, a
    node's whole group at least: ``widest``, the largest node's slots and values); per node where
    the arguments are arrays of nodes."""
    slots = n_nodes * n_slots + values
    return cost + values * held_value_bytes(n_channels) + \
        refined_slot_bytes(n_channels) * np.minimum(slots, np.maximum(REFINED_SLOTS, widest))


def candidate_bins_of(avc, offsets, kinds, binned, n_classes, weighted, criterion, params, min_weight_leaf,
                      lead) -> tuple[np.ndarray, np.ndarray]:
    """The candidate bins (``(k, n_slots)`` flags) of ``k`` nodes' AVC-groups over a group of attributes
    (at ``offsets``; ``binned``: which are counted in bins of ranks), from each node's best split over
    the bins (:func:`rainforest.exact_bins.candidate_mask`), and those targets; the slots of other
    attributes are ranks or categories already, never candidates."""
    targets = boundary_targets(avc, offsets, kinds, n_classes, weighted, criterion, params.multiway,
                               float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive, lead)
    candidates = candidate_mask(avc, None, None, offsets, kinds, n_classes, weighted, criterion, targets, lead)
    for j in np.flatnonzero(~np.asarray(binned)):
        candidates[:, offsets[j]:offsets[j + 1]] = False
    return candidates, targets


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


def gathering_room(budget_bytes: int, spare: int = 0) -> int:
    """Bytes a read gathering candidate values may hold: a quarter of the budget, the share a data
    pass's batches use (a gathering read is never in flight beside a counting one), and ``spare``, a
    share nothing else holds meanwhile (the kept rows' quarter while no rows are kept): fewer reads."""
    return budget_bytes // 4 + spare


def gather_groups(cost: np.ndarray, values: np.ndarray, positions: np.ndarray, room: int, n_slots: int,
                  n_channels: int) -> list[np.ndarray]:
    """``positions`` (of nodes read from one place) in consecutive groups whose gathering
    (:func:`read_bytes` of the nodes' ``cost`` and ``values``, :func:`gathering_plan`'s summed per node)
    stays within ``room`` bytes: each group is one read of the level's rows, and a node whose
    gathering alone exceeds the room is a group of its own.  The gathering's memory is so bounded
    by the budget, not by the rows (issue 13, item 2), at the price of further reads."""
    groups, first, held, yielded, widest = [], 0, 0, 0, 0
    for i, p in enumerate(positions):
        own = n_slots + int(values[p])
        if i > first and read_bytes(held + int(cost[p]), yielded + int(values[p]), n_slots, i - first + 1,
                                    max(widest, own), n_channels) > room:
            groups.append(positions[first:i])
            first, held, yielded, widest = i, 0, 0, 0
        held, yielded, widest = held + int(cost[p]), yielded + int(values[p]), max(widest, own)
    return groups + [positions[first:]] if len(positions) else []


@dataclass
class OneValueBins:
    """Per tree node, the counted slots (numbered over all attributes, ``offsets``) whose rows at the
    node all hold one value, and that value (a rank or a value key): seen so when a gathering summed
    the node's candidate bins, or inherited from its parent (a child's rows in a bin are some of its
    parent's, so they hold that value or none).  Where counts are whole numbers such a bin is
    *settled* (:func:`settled_bins`): its one value's cell is the bin's own counts, so no read
    gathers its rows again; otherwise it only plans reads (the gathering sums it as rows stream by)."""

    offsets: np.ndarray
    slots: dict = field(default_factory=dict)  # tree node -> (sorted global counted slots, their values)

    def mask(self, chunk: list, attrs: np.ndarray, group_offsets: np.ndarray) -> np.ndarray:
        """``(len(chunk), n_slots)`` flags over the AVC-group of ``attrs`` (at ``group_offsets``)."""
        out = np.zeros((len(chunk), int(group_offsets[-1])), np.bool_)
        global_of = self._global_slots(attrs, group_offsets)
        for k, node in enumerate(chunk):
            known = self.slots.get(node)
            if known is not None and len(known[0]):
                out[k] = np.isin(global_of, known[0])
        return out

    def note(self, nodes: list, values: ValueCounts, attrs: np.ndarray, group_offsets: np.ndarray) -> None:
        """Add the cells of ``values`` (node ``i`` is ``nodes[i]``) that hold one value."""
        if not len(values):
            return
        pair = values.node * int(group_offsets[-1]) + values.slot
        first = np.ones(len(pair), np.bool_)
        first[1:] = pair[1:] != pair[:-1]
        starts = np.flatnonzero(first)
        single = starts[np.diff(np.append(starts, len(pair))) == 1]
        global_of = self._global_slots(attrs, group_offsets)
        for i in np.unique(values.node[single]):
            node = nodes[int(i)]
            mine = single[values.node[single] == i]
            seen, value = global_of[values.slot[mine]], values.value[mine]
            if node in self.slots:  # a slot noted twice holds the same one value
                known, known_value = self.slots[node]
                seen = np.concatenate([known, seen])
                value = np.concatenate([known_value, value.astype(known_value.dtype)])
            slot_set, first_at = np.unique(seen, return_index=True)
            self.slots[node] = (slot_set, value[first_at])

    def known_cells(self, nodes: list, flags: np.ndarray, attrs: np.ndarray, group_offsets: np.ndarray) -> ValueCounts:
        """The cells of the flagged bins (``flags`` over ``nodes`` and the AVC-group of ``attrs``, at
        ``group_offsets``; each known to hold one value at its node), sorted by node and slot, each with
        its one value: what :func:`rainforest.exact_bins.refine` takes as ``known``, without counts (a
        whole bin keeps its own, which are its one value's where counts are whole numbers)."""
        node, slot = np.nonzero(flags)
        value = np.zeros(len(node), np.int64)
        if len(node):
            global_of = self._global_slots(attrs, group_offsets)
            for k in np.unique(node):
                known, values = self.slots[nodes[k]]
                mine = node == k
                value[mine] = values[np.searchsorted(known, global_of[slot[mine]])]
        return ValueCounts(node, slot, value, np.zeros((len(node), 0)))

    def inherit(self, parent: int, children: list) -> None:
        """The children of a split start from what their parent's bins were known to hold."""
        known = self.slots.pop(parent, None)
        if known is not None:
            for child in children:
                self.slots[child] = known

    def keep(self, nodes: list) -> None:
        """Forget every node but ``nodes`` (a new level's frontier)."""
        self.slots = {n: self.slots[n] for n in nodes if n in self.slots}

    def _global_slots(self, attrs: np.ndarray, group_offsets: np.ndarray) -> np.ndarray:
        slot = np.arange(int(group_offsets[-1]))
        j = np.searchsorted(group_offsets, slot, side="right") - 1
        return self.offsets[np.asarray(attrs)[j]] + slot - group_offsets[j]


def settled_bins(candidates: np.ndarray, one_value: np.ndarray, weighted: bool) -> np.ndarray:
    """The candidate bins taken from their counts, never read (:meth:`OneValueBins.known_cells`): those known
    to hold one value at their node (:class:`OneValueBins`), where counts are whole numbers (no
    weights of any kind): fractional sums could differ in their last bits from the gathered ones."""
    return candidates & one_value if not weighted else np.zeros_like(candidates)


def exact_search(growth, level, avc: np.ndarray, chunk: list, attrs: np.ndarray, lead: int, best: dict) -> None:
    """The exact splits of ``chunk``'s nodes over ``attrs`` (``growth``: the tree's
    growth state of :mod:`rainforest.grow`; ``level``: the level being grown), some counted in bins: the
    bins searched, the candidate bins' values gathered in groups of nodes as the budget's room
    allows (:func:`gather_groups`; a node too large alone, in runs of its bins, :func:`node_runs`),
    by one further read of the same rows where this process reads them, else a read a group
    (:func:`search_entries`), and each group's refined AVC-groups searched."""
    g = growth
    group_offsets = group_offsets_of(g.offsets, attrs)
    kinds, binned = g.schema.kinds[attrs], g.binned[attrs]
    candidates, targets = candidate_bins_of(avc, group_offsets, kinds, binned, g.n_classes, g.weighted, g.crit,
                                            g.params, g.min_weight_leaf, lead)
    one_value = g.one_value.mask(chunk, attrs, group_offsets)
    settled = settled_bins(candidates, one_value, g.weighted)
    g.stats.settled_cells += int(settled.sum())
    cells, cell_cost, cell_values, dense = gathering_plan(avc, candidates & ~settled,
                                                          slot_spans(g.counted, attrs, group_offsets)[1], g.n_classes,
                                                          g.weighted, g.picked_bytes, one_value)
    n_slots, ch = avc.shape[1], avc.shape[2]
    node_of = cells // n_slots
    cost = np.bincount(node_of, cell_cost, len(chunk)).astype(np.int64)  # whole numbers, exact in float64
    values = np.bincount(node_of, cell_values, len(chunk)).astype(np.int64)

    def make_task(node_pos):
        return AvcPass(g.schema, level.routing, node_pos, len(chunk), g.n_channels, g.class_weight, g.weighted, attrs,
                       store=g.supply.store, counted=g.counted, alive=level.alive(len(g.nodes.feature)),
                       n_children=np.asarray(g.nodes.n_children, np.int64))

    found, room = [None] * len(chunk), g.room_to_gather()
    alone = read_bytes(cost, values, n_slots, 1, n_slots + values, ch) > room  # each node read alone
    # a run holds its cells' picking, their values as held and as refined (a run's node is refined
    # whole), beside the node's whole bins refined: what is left of the room for its cells, or half
    # the room where the bins take more (a budget of a few MB): no run sheds them, and reads stay few
    per_value = held_value_bytes(ch) + refined_slot_bytes(ch)
    run_room = max(room - n_slots * refined_slot_bytes(ch), room // 2)
    dense_bytes = cell_cost[dense.ravel()[cells]].sum() if dense.any() else 0
    for from_memory in (False, True):
        here = np.array([k for k, n in enumerate(chunk) if (n in g.in_memory) == from_memory], np.int64)
        # (chunk positions, their rows of candidate flags, the floor of a run's search; the picking's bytes)
        entries, picking = [], 0
        for idx in gather_groups(cost, values, here[~alone[here]], room, n_slots, ch):
            entries.append((idx, candidates[idx], None))
            picking += int(cost[idx].sum())
        for k in here[alone[here]]:
            lo, hi = np.searchsorted(cells, [k * n_slots, (k + 1) * n_slots])
            slot_cost = np.zeros(n_slots, np.int64)  # node k's candidate cells, each a run's share
            slot_cost[cells[lo:hi] - k * n_slots] = cell_cost[lo:hi] + cell_values[lo:hi] * per_value
            for run in node_runs(g, avc[k], candidates[k], slot_cost, targets[k], group_offsets, kinds, lead,
                                 run_room):
                entries.append((np.array([k]), run[None], targets[[k]]))
                picking += int(cell_cost[lo:hi][run[cells[lo:hi] - k * n_slots]].sum())
        if not entries:
            continue
        # several reads' worth read once, each group's rows to scratch files (gather_scratch), where this
        # process reads the rows itself, the dense cells of them all fit the room together, and the disk
        # holds the picked rows (their picking's bytes, an upper bound on what the files take)
        reads = [(idx, cand & ~settled[idx]) for idx, cand, _ in entries]  # what each entry gathers
        one_read = len(entries) > 1 and g.supply.store is None and dense_bytes <= room and (
            from_memory or g.supply.spilled([chunk[k] for k in here])) and not disk_shortfall(g.params.spill_dir,
                                                                                             picking) and \
            any(flags.any() for _, flags in reads)

        def search(i, value_counts):
            """Entry ``i``'s splits, from its gathered values (held by no caller meanwhile)."""
            idx, cand, floor = entries[i]
            g.one_value.note([chunk[k] for k in idx], value_counts, attrs, group_offsets)
            known = g.one_value.known_cells([chunk[k] for k in idx], cand & settled[idx], attrs, group_offsets)
            run = slice(idx[0], idx[-1] + 1) if idx[-1] - idx[0] + 1 == len(idx) else idx  # a view when it can
            splits = exact_splits(avc[run], cand & ~settled[idx], value_counts, group_offsets, kinds, binned,
                                  g.n_classes, g.weighted, g.crit, g.params, g.min_weight_leaf, lead, floor, known)
            if floor is None:
                for k, split in zip(idx, splits):
                    found[k] = split
            else:  # one run of node k: the best of its runs, as the search over all of them keeps it
                k = int(idx[0])
                missing_rows = rows_of_slots(avc[k][group_offsets[1:] - 1], g.n_classes, g.weighted) > 0
                if better_split(splits[0], found[k], missing_rows):
                    found[k] = splits[0]

        search_entries(g, make_task, reads, candidates.shape, dense, chunk, from_memory, level, one_read, search)
    for k, node in enumerate(chunk):
        if found[k] is not None:
            score, j, ls, rs, inf, nb, br, block = found[k]
            keep_better(best, node, score, int(attrs[j]), (ls, rs, inf, nb, br, block, avc[k] if g.subtract else None))


def search_entries(g, make_task, entries: list, shape: tuple, dense: np.ndarray, chunk: list, from_memory: bool,
                   level, one_read: bool, search) -> None:
    """``search(i, values)`` for each of ``entries`` (``(idx, candidates)``: chunk positions and their
    rows of flags over the bins to gather, of the chunk's ``shape`` of them) with its gathered values: by one
    read of the level's rows for them all (:func:`rainforest.gather_scratch.gather_scattered`), or by
    a read each (:func:`rainforest.exact_gather.gather_values`), wherever the level read its rows.
    One entry's values at a time: none is held while the next is gathered."""
    n_tree_nodes = len(g.nodes.feature)

    def counted(i, values, picked):
        g.stats.candidate_values += len(values)
        g.stats.candidate_rows += picked
        search(i, values)

    if one_read:
        g.stats.candidate_reads += 1
        g.stats.gathering_bytes += gather_scattered(g.supply, make_task, entries, shape, dense, chunk, from_memory,
                                                    level.number, n_tree_nodes, g.params.spill_dir, counted)
        return
    for i, (idx, rows) in enumerate(entries):
        cand = np.zeros(shape, np.bool_)  # the chunk's flags, this entry's rows set: one entry's at a time
        cand[idx] = rows
        values, reads, from_data, picked = gather_values(g.supply, make_task, cand, dense, chunk, idx, from_memory,
                                                         level.number, n_tree_nodes)
        del cand
        level.passes += from_data
        g.stats.candidate_reads += reads
        counted(i, values, picked)
        del values


def node_runs(g, avc_k: np.ndarray, candidates_k: np.ndarray, slot_cost: np.ndarray, target: float,
              group_offsets: np.ndarray, kinds: np.ndarray, lead: int, room: int) -> list[np.ndarray]:
    """The runs (flags over the node's slots) in which a node whose candidate bins' gathering exceeds
    the room alone is searched (``avc_k`` its AVC-group, ``slot_cost``: each candidate bin's bytes in a
    run): every run holds the bins beside each boundary within tolerance of the node's ``target``
    (:func:`rainforest.exact_bins.boundary_mask`), the other bins packed to fit ``room``
    (:func:`rainforest.exact_bins.candidate_runs`).  Each run is searched with the target as its
    floor and the best kept as the search over all of them at once keeps it
    (:func:`rainforest.exact_gather.better_split`): the gathering, and the refined group, so hold no
    more than the room however many rows the node has (unless the bins beside near-winning
    boundaries, in every run, or one bin alone exceed it): the memory follows the budget, at the
    price of more reads (issue 13, item 2), or of scratch files where the runs share one read."""
    near = boundary_mask(avc_k[None], group_offsets, kinds, g.n_classes, g.weighted, g.crit, np.array([target]),
                         lead)[0]
    runs = candidate_runs(candidates_k, near, slot_cost, room)
    g.stats.candidate_runs += len(runs)
    return runs
