"""AVC-groups: per (node, attribute slot, class) weighted counts, built in one pass.

An AVC-group of a node is a ``(n_slots_total, n_channels)`` float64 array
(see :mod:`rainforest.criteria`); one pass builds the AVC-groups of a set
of frontier nodes at once, as one ``(n_nodes, n_slots_total, n_channels)``
array.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from .bin_routing import binned_routing, route_binned
from .count_bins import CountedSlots, counted_slot, counted_slots, counted_view
from .counting import add_row, narrowed_counts, widened_counts
from .row_encoding import encode_rows, slots_of
from .rows import KeptRows, RowBlock, advance_kept, descend
from .schema import CATEGORICAL, Schema
from .storage.arrow_numpy import read_only
from .target_parts import NO_GRID, accumulate_parts


NO_ORDER = np.empty(0, np.int32)  # accumulate's rows are already grouped by node


@numba.njit(cache=True, parallel=True, nogil=True)
def accumulate(S, y, w, order, starts, ends, attrs, offsets, counts, count_rows, shift, missing, n_counted, key_base,
               table, table_start):
    """Add each row's weight to ``counts[k, offsets[j] + c, y[i]]``, ``c`` the counted slot of
    ``S[i, attrs[j]]`` (:func:`rainforest.count_bins.counted_slot`, with the per-attribute arrays
    :meth:`rainforest.count_bins.CountedSlots.kernel_args` gives), for the counted attributes
    ``attrs`` (all of them, or a group of them under RF-Vertical).

    The rows of the ``k``-th counted node are ``order[starts[k]:ends[k]]`` (``order`` empty: the
    row indices themselves, for rows kept grouped by node), in row order.  Walking one node at a
    time keeps its counts in cache.  ``w`` is empty when every weight is one.  Threads split the
    attributes, each owning its slots, so every cell is summed in row order whatever the number
    of threads: the result is identical to a serial run.  (A regressor's exact parts are counted by
    :func:`rainforest.target_parts.accumulate_parts`.)
    """
    # Unsigned indices and loops from 0 spare every access numba's check for a negative index
    # (a third of the time; unsigned and signed integers must not mix: that gives a float).
    n_classes = np.uint64(counts.shape[2] - (1 if count_rows else 0))
    stride = np.uint64(counts.shape[2])
    unit = w.shape[0] == 0
    direct = order.shape[0] == 0
    for j in numba.prange(attrs.shape[0]):
        a = np.uint64(attrs[j])
        base = np.uint64(offsets[j])
        sh, miss, nc, kb = shift[a], missing[a], n_counted[a], key_base[a]
        tab = table[table_start[a]:table_start[a + 1]]
        for k in range(starts.shape[0]):
            node = counts[k].reshape(-1)
            lo = starts[k]
            rows = order[lo:ends[k]]
            for t in range(ends[k] - lo):
                i = np.uint64(lo + t) if direct else np.uint64(rows[t])
                c = counted_slot(np.uint64(S[i, a]), sh, miss, nc, kb, tab)
                add_row(node, (base + c) * stride, y[i], 1.0 if unit else w[i], count_rows, n_classes)


@numba.njit(cache=True, parallel=True, nogil=True)
def group_rows(node, node_pos, n_nodes, n_pieces):
    """Rows grouped by their node's place in the pass (``node_pos[node[i]]``, -1: not counted), each
    group in row order: ``(order, starts, ends)`` for :func:`accumulate`.  A stable counting sort in
    two parallel sweeps over ``n_pieces`` pieces of the rows (counts per piece, then each piece fills
    its own places), so the order is a serial sort's whatever the number of pieces and threads."""
    # unsigned indices where they cannot be negative: no check for a negative index (see accumulate)
    n = node.shape[0]
    size = (n + n_pieces - 1) // n_pieces
    place = np.zeros((n_pieces, n_nodes), np.int64)
    for c in numba.prange(n_pieces):
        counted = place[c]
        for i in range(c * size, min(n, (c + 1) * size)):
            k = node_pos[np.uint64(node[np.uint64(i)])]
            if k >= 0:
                counted[np.uint64(k)] += 1
    starts = np.empty(n_nodes, np.int64)
    ends = np.empty(n_nodes, np.int64)
    at = 0
    for k in range(n_nodes):  # each piece's first place in each group: the groups in order, pieces in order
        starts[k] = at
        for c in range(n_pieces):
            rows = place[c, k]
            place[c, k] = at
            at += rows
        ends[k] = at
    order = np.empty(at, np.int32)  # batches and kept rows hold fewer than 2**31 rows
    for c in numba.prange(n_pieces):
        fill = place[c]
        for i in range(c * size, min(n, (c + 1) * size)):
            k = node_pos[np.uint64(node[np.uint64(i)])]
            if k >= 0:
                uk = np.uint64(k)
                order[np.uint64(fill[uk])] = i
                fill[uk] += 1
    return order, starts, ends


@dataclass
class AvcSet:
    """The AVC-set of one attribute at one node: class counts per attribute value."""

    attribute: str
    values: list  # value of each row: a category, a numeric value (exact) or a bin's upper edge, or None (missing)
    counts: np.ndarray  # (len(values), n_classes)


@dataclass
class AvcGroup:
    """The AVC-sets of all attributes at one node."""

    classes: list
    sets: dict  # attribute -> AvcSet

    def __getitem__(self, attribute: str) -> AvcSet:
        return self.sets[attribute]


def avc_group(schema: Schema, block: np.ndarray) -> AvcGroup:
    """Readable :class:`AvcGroup` of one node's AVC array (value slots with no rows are dropped)."""
    offsets = schema.slot_offsets()
    n_classes = len(schema.label.classes)
    sets = {}
    for j, a in enumerate(schema.attributes):
        rows = block[offsets[j]:offsets[j + 1], :n_classes]
        if a.kind == CATEGORICAL:
            labels = list(a.categories)
        elif a.exact:
            labels = a.cuts.tolist()
        else:
            labels = a.cuts.tolist() + [np.inf]
        labels = labels + [None]
        keep = rows.sum(axis=1) > 0
        sets[a.name] = AvcSet(a.name, [v for v, k in zip(labels, keep) if k], rows[keep])
    return AvcGroup(list(schema.label.classes), sets)


@dataclass
class AvcState:
    """What a pass returns: the AVC-groups.  Pickled (a Dask worker's state on its way to the merge),
    whole-number counts travel as the narrowest unsigned integers (:func:`narrowed_counts`)."""

    counts: np.ndarray

    def __getstate__(self) -> dict:
        return {"counts": narrowed_counts(self.counts)}

    def __setstate__(self, state: dict) -> None:
        self.counts = widened_counts(state["counts"])

    def __deepcopy__(self, memo) -> "AvcState":
        return AvcState(self.counts.copy())


@dataclass
class AvcPass:
    """A :class:`rainforest.storage.PassTask` building the AVC-groups of ``n_nodes`` frontier nodes of a
    growing tree, over the attributes ``attrs``.

    ``routing`` holds the arrays of the tree so far that :func:`rainforest.rows.descend` routes
    with; ``node_pos`` maps a tree node to its index in the pass, or -1.
    With ``keep_into`` (a :class:`rainforest.rows.KeptRows`; local sources only, like ``spill``) the
    rows reaching the nodes it has groups for are kept too.
    ``spill`` (RF-Write), when set, receives every counted block of rows.
    ``counted`` (:class:`rainforest.count_bins.CountedSlots`; default: one counted slot per slot) says
    which attributes are counted in bins of ranks (exact mode's wide numeric ones).
    ``store`` (a :class:`rainforest.storage.dask_store.PartitionStore`), when set, lets a source
    that keeps partitions where they are read (a Dask cluster's workers) keep them encoded
    (:meth:`encode`) and count them again at later passes (:meth:`count_piece`); ``alive`` then marks
    the tree's nodes whose rows are counted now or later (the frontier), so that a kept piece drops
    the rows that reached a leaf for good.  A worker keeps a partition's pieces grouped by node
    (:meth:`hold`), and a later pass moves them down to its nodes and counts each node's rows in
    sequence (:meth:`count_held`), as rows kept in one process are.
    """

    schema: Schema
    routing: tuple
    node_pos: np.ndarray
    n_nodes: int
    n_channels: int
    class_weight: np.ndarray | None
    weighted: bool
    attrs: np.ndarray
    keep_into: object = None
    spill: object = None
    store: object = None
    alive: np.ndarray | None = None
    n_children: np.ndarray | None = None  # per tree node, with ``store``: how kept rows move down (hold)
    counted: CountedSlots | None = None
    grid: np.ndarray = field(default_factory=lambda: NO_GRID)  # a regressor's exact parts (target_parts.py)
    _binned: tuple | None = field(default=None, init=False, repr=False)  # _bins_routing, made at first use
    _offsets: np.ndarray | None = field(default=None, init=False, repr=False)  # group_offsets, made at first use

    def __post_init__(self):
        if self.counted is None:
            self.counted = counted_slots(self.schema, None)

    def group_offsets(self) -> np.ndarray:
        """Offset of each counted attribute's slots in this pass's AVC-groups (made once: every block asks)."""
        if self._offsets is None:
            self._offsets = self.counted.group_offsets(self.attrs)
        return self._offsets

    def _accumulate(self, state: AvcState, S, y, w, order, starts, ends, counted: CountedSlots | None = None) -> None:
        c = self.counted if counted is None else counted
        if len(self.grid):
            accumulate_parts(S, y, order, starts, ends, self.attrs, self.group_offsets(), state.counts,
                             *c.kernel_args(), self.grid, numba.get_num_threads())
        else:
            accumulate(S, y, read_only(w), order, starts, ends, self.attrs, self.group_offsets(), state.counts,
                       self.weighted, *c.kernel_args())

    def new_state(self) -> AvcState:
        return AvcState(np.zeros((self.n_nodes, int(self.group_offsets()[-1]), self.n_channels)))

    def update(self, state: AvcState, batch: pa.RecordBatch, first_row: int) -> AvcState:
        return self.count(state, self.encode(batch, first_row))

    @property
    def order_free(self) -> bool:
        """Whether states merged in any order give the same counts: with unit weights they are integers,
        and a regressor's exact parts add exactly."""
        return not self.weighted or len(self.grid) > 0

    def encode(self, batch: pa.RecordBatch, first_row: int, slots: np.ndarray | None = None) -> RowBlock:
        """A batch's rows that count, encoded at the root: what a partition store keeps (``slots``: the
        batch's :meth:`slots`, where the caller kept them from an earlier pass)."""
        return encode_rows(self.schema, batch, self.class_weight, slots).present()

    def slots(self, batch: pa.RecordBatch) -> np.ndarray:
        """The batch's slots alone (:func:`rainforest.row_encoding.slots_of`): the same at every pass of a fit, so
        a caller weighing the rows anew at each (AdaBoost's rounds on a cluster) may keep them."""
        return slots_of(self.schema, batch)

    def count_piece(self, state: AvcState, rows: RowBlock) -> AvcState:
        """Count kept rows (routed in place: the store keeps them where this pass left them, less the
        rows of nodes not :attr:`alive`, which no later pass counts; a depth-10 Agrawal tree's leaves
        hold 57 % of the rows by its fifth level)."""
        state = self.count(state, rows)
        if self.alive is not None and len(self.node_pos) > 1:
            alive = self.alive[rows.node]
            if len(rows) - np.count_nonzero(alive) > len(rows) // 8:  # a copy only when it pays
                rows.keep(alive)
        return state

    def hold(self, pieces: list) -> KeptRows | None:
        """A partition's pieces, counted by this pass, as a worker keeps them for later passes: grouped by
        the node each row has reached (None: no rows)."""
        return KeptRows.of_blocks(pieces, len(self.routing[1])) if pieces else None

    def count_held(self, state: AvcState, held: KeptRows | None) -> AvcState:
        """Count what :meth:`hold` kept, moved down to this pass's nodes first."""
        if held is None:
            return state
        self.advance(held)
        return self.count_kept(state, held)

    def advance(self, held: KeptRows) -> None:
        """Move held rows down to this pass's nodes, leaving out those no node counts any more."""
        advance_kept(held, self.routing, self.n_children, self.alive)
        held.release_spare()

    @property
    def spilled_keys(self) -> str:
        """How a spilled read gives this pass its keyed columns (:meth:`rainforest.spill.Spill.read`'s
        ``keyed_as``): as their bins (:mod:`rainforest.bin_routing`) where it has keyed attributes and
        neither keeps nor spills the rows (which need their keys) nor counts a regressor's exact parts;
        else as keys."""
        bins = self.keep_into is None and self.spill is None and not len(self.grid) and self.counted.keyed.any()
        return "bins" if bins else "keys"

    def _bins_routing(self) -> tuple:
        """The routing of rows read as bins and the bins' view of the counted slots (made once a pass)."""
        if self._binned is None:
            self._binned = (*binned_routing(self.routing, self.counted), counted_view(self.counted))
        return self._binned

    def count(self, state: AvcState, rows: RowBlock) -> AvcState:
        """Count encoded rows (from a data pass or the spill folder, as keys or as bins) at their frontier nodes."""
        counted = None
        if rows.keys is not None:  # keyed columns read as bins
            binned, open_bin, counted = self._bins_routing()
        if len(self.node_pos) == 1:  # the tree is its root: every row is there, in row order
            order, starts, ends = NO_ORDER, np.zeros(self.n_nodes, np.int64), np.zeros(self.n_nodes, np.int64)
            if self.node_pos[0] >= 0:
                ends[self.node_pos[0]] = len(rows)
        else:
            if counted is None:
                descend(rows.S, rows.node, *self.routing)
            else:
                route_binned(rows, self.routing, binned, open_bin)
            order, starts, ends = group_rows(rows.node, self.node_pos, self.n_nodes, 4 * numba.get_num_threads())
        self._accumulate(state, rows.S, rows.y, rows.w, order, starts, ends, counted)
        if self.keep_into is not None:
            self.keep_into.add(rows)
        if self.spill is not None:
            self.spill(rows)
        return state

    def count_kept(self, state: AvcState, kept) -> AvcState:
        """Count the rows kept in memory (a :class:`rainforest.rows.KeptRows`, grouped by node) at their
        nodes: each node's rows in sequence, with no routing and no index."""
        starts, ends = kept.spans(self.node_pos, self.n_nodes)
        self._accumulate(state, kept.S, kept.y, kept.w, NO_ORDER, starts, ends)
        return state

    def sql_aggregate(self, relation):
        """This pass as one aggregate query over a SQL relation, or None when it must see rows
        (it keeps or spills them); see :mod:`rainforest.pushdown`."""
        from .pushdown import avc_query
        return avc_query(self, relation)

    def merge(self, a: AvcState, b: AvcState) -> AvcState:
        a.counts += b.counts
        return a


def root_routing(schema: Schema) -> tuple:
    """:func:`rainforest.rows.descend`'s arrays for a tree that is only its root."""
    return (np.array([-2], np.int32), np.array([-1], np.int32), np.zeros(1, np.int32), np.array([-1], np.int32),
            np.array([-1], np.int64), np.array([-1], np.int32),
            np.array([a.n_slots for a in schema.attributes], np.int64))


def root_avc(source, schema: Schema, batch_size: int = 65536) -> np.ndarray:
    """One pass counting the root's AVC-group (a last row-count channel when rows are weighted)."""
    weighted = schema.weight is not None
    columns = schema.names + [schema.label.name] + ([schema.weight] if weighted else [])
    task = AvcPass(schema, root_routing(schema), np.zeros(1, np.int32), 1, len(schema.label.classes) + weighted, None,
                   weighted, np.arange(len(schema.attributes)))
    return source.run_pass(task, columns, batch_size).counts[0]
