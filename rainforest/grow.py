"""Level-wise growth.  RF-Read: each pass builds the AVC-groups of as many frontier nodes as
the memory budget holds; the split of each node is then chosen in memory.  RF-Hybrid: nodes
whose rows fit a quarter of the budget are pulled into memory (encoded, see
:mod:`rainforest.rows`) and their subtrees counted there.  RF-Write: a level that needs several
reads spills its rows, partitioned by node, and later reads take only their partitions
(:mod:`rainforest.spill`).  RF-Vertical: when one node's AVC-group exceeds the budget, the
attributes are counted a group at a time.  All four build the same tree.

Each level is one loop (:func:`_grow`): plan the level's reads (:mod:`rainforest.plan`), then for
every chunk of frontier nodes supply its rows (:class:`rainforest.supply.RowSupply`: the data, the
spill or memory) and count them, search, and split by the rules of :mod:`rainforest.rules`.

The stopping rules and their order are scikit-learn's (``max_depth``,
``min_samples_split``, ``min_samples_leaf``, ``min_weight_fraction_leaf``,
purity, ``min_impurity_decrease``), so that exact mode grows scikit-learn's tree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .avc import AvcPass
from .budget import give_back_free_memory
from .compact import compact_splits, scratch_for, wide_attributes
from .count_bins import EXACT_BINS
from .criteria import CRITERION_CODES
from .meter import PassMeter  # noqa: F401  (re-exported: the pass meter of growth)
from .nodes import Nodes
from .plan import (attribute_groups, counted_slots_for, families, families_to_pull, group_bytes, lead_of,
                   pack_families, spilled_loads)
from .row_encoding import stores_weights
from .rows import KeptRows, column_dtypes, label_dtype, row_bytes, slot_dtype
from .rules import branch_totals, depth_limit, node_criterion, node_totals, split_outcome
from .schema import Schema
from .spill import Spill, page_cache_holds, room_for, spill_footprint, spilled_bytes
from .split_choice import search_group
from .supply import RowSupply
from .target_parts import NO_GRID, PARTS_CHANNELS, moments_of_parts
from .tree import Tree
from .write_behind import write_ahead


@dataclass
class GrowParams:
    criterion: str = "gini"
    multiway: bool = False
    max_depth: int | None = None
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    min_weight_fraction_leaf: float = 0.0
    min_impurity_decrease: float = 0.0
    max_exhaustive: int = 12  # categorical subsets tried exhaustively up to this many categories
    hybrid: bool = True  # RF-Hybrid: finish in memory the subtrees whose rows fit a quarter of the budget
    write: bool = True  # RF-Write: spill rows partitioned by node when a level needs several reads
    vertical: bool = True  # RF-Vertical: count attributes in groups when one AVC-group exceeds the budget
    spill_dir: str | None = None  # where RF-Write's temporary folder is made (tempfile's default)
    compact: bool = True  # exact mode: nodes counted from kept rows get AVC-groups over their own slots
    # exact mode: numeric attributes with more distinct values than this are counted in as many bins of
    # ranks, the candidate bins' values gathered by a second read (rainforest/exact_gather.py); 0: one
    # slot per distinct value
    exact_bins: int = EXACT_BINS
    # bytes of the kept rows' quarter of the budget that the caller holds already (a boosting store's
    # rows in memory, rainforest/boost_store.py): RF-Hybrid keeps rows in what is left
    held_bytes: int = 0


GIVE_BACK_ROWS = 1 << 20  # fits of fewer rows free too little between levels to pay for giving it back


def spill_mostly_spent(growing: int, spilled: int) -> bool:
    """Whether a third or more of the ``spilled`` rows are no longer ``growing`` (they reached leaves).
    Exact mode's bins read each level's rows twice (the count, then the gathering of candidate
    values, exact_search.py), so its level rewrites the rows still growing where that saves more
    reading than the writing costs; a level of one chunk otherwise reads the generation it finds,
    routing its rows on (Agrawal F7 at 10M rows: 4.2 GB written and 11.3 GB read at every level's
    rewrite, 0.42 GB and 8.4 GB now)."""
    return 3 * growing <= 2 * spilled


@dataclass
class GrowStats:
    passes_per_level: list = field(default_factory=list)  # passes over the data (not memory or spill)
    spill_reads: int = 0  # reads of the spill folder (the encoded row store on disk), not passes over the data
    spill_bytes: int = 0  # bytes written to the spill folder
    spill_bytes_read: int = 0  # bytes read from it
    attribute_groups: int = 1  # RF-Vertical: attribute groups counted apart (1: all together)
    kept_rows: int = 0  # RF-Hybrid: rows pulled into memory
    binned_attributes: int = 0  # exact mode: numeric attributes counted in bins of ranks (count_bins.py)
    candidate_reads: int = 0  # exact mode: second reads of a chunk's rows for its candidate bins' values
    candidate_values: int = 0  # exact mode: (node, attribute, value) cells those reads summed
    candidate_rows: int = 0  # exact mode: rows those reads picked to sort (a bin of one value, or dense, is summed)
    settled_cells: int = 0  # exact mode: candidate cells known to hold one value, taken from their counts unread
    candidate_runs: int = 0  # exact mode: searches of a node whose candidate bins exceeded the room alone, a run each
    gathering_bytes: int = 0  # exact mode: bytes of picked rows written to scratch files, where one read served several
    subtracted_nodes: int = 0  # AVC-groups made by histogram subtraction, their rows not counted

    @property
    def n_passes(self) -> int:
        return sum(self.passes_per_level)


def grow_tree(source, schema: Schema, params: GrowParams, budget_bytes: int, batch_size: int,
              class_weight: np.ndarray | None, verbose: int = 0, n_rows: int = 0, root_depth: int = 0,
              total_weight: float | None = None) -> tuple[Tree, GrowStats]:
    """Grow a tree over ``source`` level by level; returns the tree and pass statistics.

    ``root_depth`` and ``total_weight`` grow the subtree of one node of a larger tree whose rows
    (the node's *family*) are all of ``source``: the root then counts as being that deep for
    ``max_depth``, and ``min_weight_fraction_leaf`` / ``min_impurity_decrease`` are taken relative to
    the larger tree's total weight (default: the source's own), so the subtree is the one growth
    over all the data would build below that node (BOAT finishes its frontier this way).

    The spill folder, if RF-Write made one, is removed before returning, also on an error or an
    interrupt."""
    supply = RowSupply(source, schema.names + [schema.label.name] + ([schema.weight] if schema.weight else []),
                     batch_size, verbose, n_rows)
    # A source that keeps partitions where they are read (a Dask cluster's workers) holds the encoded
    # rows there, up to a quarter of the budget per worker in memory (as RF-Hybrid keeps them here),
    # the rest on the worker's local disk.
    if params.hybrid and getattr(source, "keeps_partitions", False):
        supply.store = source.open_store(budget_bytes // 4, spilled_bytes(1, schema, stores_weights(schema,
                                                                                                    class_weight)))
    try:
        return _grow(supply, schema, params, budget_bytes, class_weight, n_rows, root_depth, total_weight)
    finally:
        if supply.spill is not None:
            supply.spill.remove()
        if supply.store is not None:
            source.close_store(supply.store)


def _grow(supply: RowSupply, schema: Schema, params: GrowParams, budget_bytes: int,
          class_weight: np.ndarray | None, n_rows: int, root_depth: int = 0,
          whole_weight: float | None = None) -> tuple[Tree, GrowStats]:
    """One tree's growth (:class:`_Growth`) through :func:`run_levels`."""
    return run_levels(_Growth(supply, schema, params, budget_bytes, class_weight, n_rows, root_depth, whole_weight))


def run_levels(growth):
    """The level loop of every learner's growth: plan the level's reads, then per chunk supply its rows
    (data, spill, memory, a cluster's workers) and count them, search, split; then the next level.

    ``growth`` is one tree's :class:`_Growth` (chunks of nodes), or a forest's
    :class:`rainforest.forest_levels.ForestLevels` (packs of jobs (tree, node)): ``frontier``,
    ``plan_level()``, ``count_and_search(level, i)`` (None: the root is a leaf, growth ends),
    ``split(level, *found)``, ``end_level(level)`` and ``result()``."""
    while len(growth.frontier):
        level = growth.plan_level()
        for ci in range(len(level.chunks)):
            found = growth.count_and_search(level, ci)
            if found is None:  # the root is a leaf
                break
            growth.split(level, *found)
            found = None  # the chunk's AVC-groups go before the next chunk's are counted
        growth.end_level(level)
    return growth.result()


@dataclass
class _Level:
    """One level's plan and what it builds: the chunks of frontier families counted together (the
    last ``len(chunks) - n_dense`` are spilled nodes loaded into memory), whether the first read writes
    the spill, the nodes whose rows its first pass keeps in memory, and the next level."""

    number: int
    chunks: list
    n_dense: int
    write: bool
    pull: list
    routing: tuple
    in_frontier: set
    passes: int = 0
    next_frontier: list = field(default_factory=list)
    next_derived: dict = field(default_factory=dict)

    def alive(self, n_nodes: int) -> np.ndarray:
        """A flag per tree node: its rows are counted at this level (by any chunk: a leaf's too, for the
        subtraction) or later (the frontier)."""
        flags = np.zeros(n_nodes, bool)
        flags[list(self.in_frontier)] = True
        flags[[n for c in self.chunks for g in c for n in g]] = True
        return flags


class _Growth:
    """The state of one tree's level-wise growth (:func:`_grow`)."""

    def __init__(self, supply: RowSupply, schema: Schema, params: GrowParams, budget_bytes: int,
                 class_weight: np.ndarray | None, n_rows: int, root_depth: int, whole_weight: float | None):
        self.supply, self.schema, self.params, self.class_weight = supply, schema, params, class_weight
        self.whole_weight = whole_weight
        self.crit = CRITERION_CODES[params.criterion]
        self.node_crit = node_criterion(self.crit)
        self.n_classes = schema.label.n_channels  # a regressor's: (sum w, sum w y, sum w y**2)
        # a regressor's cells always count rows: its first channel is a weight, not a row count
        self.weighted = schema.weight is not None or class_weight is not None or schema.label.regression
        self.n_channels = self.n_classes + (1 if self.weighted else 0)
        self.row_weights = stores_weights(schema, class_weight)  # rows carry weights (a regressor's may not)
        # a regressor's cells add rows in exact parts where it can (unit weights, binned): raw cells of
        # count_channels, turned into the search's n_channels after counting (rainforest/target_parts.py)
        self.grid = np.asarray(schema.label.grid) if schema.label.grid is not None and not self.row_weights \
            else NO_GRID
        self.count_channels = PARTS_CHANNELS + 1 if len(self.grid) else self.n_channels
        self.cell_channels = self.count_channels + self.n_channels if len(self.grid) else self.n_channels
        avc_budget = budget_bytes // 2
        self.local = not getattr(supply.source, "distributed", False)  # spill and keep in place in this process
        # RF-Hybrid: rows of nodes whose families fit a quarter of the budget are kept in memory by
        # a data pass; their subtrees are then counted over those rows, costing no data pass.
        # Not from a distributed source: its passes return only AVC-groups, never rows.
        self.kept_room = max(0, budget_bytes // 4 - params.held_bytes) if params.hybrid and self.local else 0
        self.memory_rows = self.kept_room // row_bytes(schema, self.row_weights)
        self.counted = counted_slots_for(supply, schema, params, class_weight, self.count_channels, avc_budget,
                                         self.memory_rows)
        self.budget_bytes = budget_bytes
        self.binned = self.counted.binned
        self.offsets = self.counted.offsets()  # of the counted slots in an AVC-group
        self.one_value = None  # bins known to hold one value at a node: exact mode's (exact_search.py)
        if self.binned.any():  # exact mode's modules load only for fits that count bins of ranks (a fresh
            from .exact_search import OneValueBins, picked_row_bytes  # process's first fit imports less)
            self.picked_bytes = picked_row_bytes(self.weighted, bool(self.counted.keyed.any()), self.count_channels)
            self.one_value = OneValueBins(self.offsets)
        self.slot_offsets = schema.slot_offsets()  # of the slots rows hold: the lead attribute is chosen by them
        self.n_attr = len(schema.attributes)
        self.n_slots = np.array([a.n_slots for a in schema.attributes], np.int64)
        # raw and searched cells both held while a chunk is searched
        self.groups = attribute_groups(schema, self.offsets, self.cell_channels, avc_budget, params.vertical)
        # exact mode's wide attributes are counted in bins of ranks wherever the rows are; only where they
        # cannot be (SQL aggregates) do nodes counted from memory get compact AVC-groups
        self.wide = wide_attributes(schema) if params.compact and not self.binned.any() \
            else np.zeros(self.n_attr, np.int64)
        self.scratch = None  # compact AVC-groups' slot table, made at their first use
        node_bytes = max(group_bytes(self.offsets, g, self.cell_channels) for g in self.groups)
        # Histogram subtraction: a split's largest child is its parent's AVC-group minus its siblings',
        # so its rows are not counted.  Only where the difference is exact: unit weights, where counts
        # are integers and a regressor's sums are exact parts; and whole AVC-groups (not RF-Vertical);
        # half of the AVC budget then holds the parents kept for it.
        self.subtract = (not self.weighted or len(self.grid) > 0) and len(self.groups) == 1
        self.per_pass = max(1, (avc_budget // 2 if self.subtract else avc_budget) // node_bytes)
        self.parents_cap = avc_budget // 2 // node_bytes if self.subtract else 0
        self.stats = GrowStats(attribute_groups=len(self.groups), binned_attributes=int(self.binned.sum()))
        self.nodes = Nodes(regression=schema.label.regression)
        # rows known from profiling let RF-Hybrid pull the root
        self.nodes.add_leaf(np.zeros(self.n_classes), n_rows, 0.0, root_depth)
        self.frontier = [0]
        self.derived: dict[int, tuple[int, list[int]]] = {}  # child -> (parent, siblings counted directly)
        self.parent_avc: dict[int, np.ndarray] = {}
        self.root_done = False
        self.min_weight_leaf = 0.0
        self.total_weight = 0.0
        self.max_depth = depth_limit(params.max_depth)
        self.level = 0
        self.in_memory: set[int] = set()  # RF-Hybrid's nodes whose rows are kept (self.memory_rows)
        self.spill_refused = False  # the spill folder's disk is too small: read the source instead

    def room_to_gather(self) -> int:
        """The bytes a read gathering candidate values may hold now (:func:`rainforest.exact_search.gathering_room`),
        with the quarter RF-Hybrid keeps rows in while it keeps none (rows spilled or read from the
        source: 100M Agrawal rows with value keys never fit it)."""
        from .exact_search import gathering_room
        return gathering_room(self.budget_bytes, self.kept_room if self.supply.kept is None else 0)

    # -- plan ----------------------------------------------------------------------------------
    def plan_level(self) -> _Level:
        """The level's chunks of nodes, each counted by one read (per attribute group)."""
        supply, in_memory = self.supply, self.in_memory
        pull = families_to_pull(self.nodes, self.frontier, in_memory, self.memory_rows, self.max_depth) \
            if supply.kept is None else []
        for child, (parent, siblings) in list(self.derived.items()):
            if len(siblings) + 1 > self.per_pass:  # the family does not fit one pass: count the child too
                del self.derived[child]
                self.parent_avc.pop(parent)
        chunks = list(pack_families(families(self.frontier, self.derived), self.per_pass))
        # Exact mode: spilled nodes whose rows fit the room for kept rows are loaded, as many to a read
        # as fit, and counted in memory with compact AVC-groups (all attributes in one read, where dense
        # ones take a read per node and attribute group).  They come after the other chunks, the first of
        # which may write the next spill; the tree is numbered breadth-first whatever the order.
        n_dense = len(chunks)
        if self.wide.any() and self.root_done and self.memory_rows and not pull and supply.spilled([]):
            chunks, loads = spilled_loads(chunks, in_memory, supply, self.nodes.n_node_samples, self.memory_rows)
            n_dense = len(chunks)
            chunks += [[[n] for n in load] for load in loads]
        # RF-Write, the row store on disk: when the rows not in memory must be read again, this level or
        # a later one, the first read also writes them, partitioned by the chunk that counts them, so
        # no later read goes to the source (a binned tree's n_passes_ is 2).  A spill in lz4 Parquet
        # took 89 s at 100M rows and raised the peak RSS to 1,093 MB while reading; raw arrays filled
        # in place take 28 s and 561 MB (spill.py).
        reads = sum(1 for c in chunks[:n_dense]
                    if any(n not in in_memory for g in c for n in g if n not in self.derived))
        later = any(self.nodes.depth[n] + 1 < self.max_depth for n in self.frontier)
        spilled = supply.spilled([])
        write = self.params.write and self.local and not pull and not self.spill_refused and (
            reads * len(self.groups) > 1 or (later and reads and not spilled)
            or (reads and spilled and self.binned.any() and spill_mostly_spent(
                sum(self.nodes.n_node_samples[n] for n in self.frontier if n not in in_memory),
                supply.spill.rows_in(supply.spill.parts))))
        if write:
            n_rows = sum(self.nodes.n_node_samples[n] for c in chunks[:n_dense] for g in c for n in g
                         if n not in in_memory)
            if not room_for(self.params.spill_dir, spill_footprint(n_rows, self.schema, self.row_weights)):
                self.spill_refused, write = True, False
        return _Level(self.level, chunks, n_dense, write, pull, self.nodes.slot_routing(self.n_slots),
                      set(self.frontier))

    # -- supply and count, search --------------------------------------------------------------
    def count_and_search(self, level: _Level, ci: int) -> tuple[list, dict] | None:
        """Count chunk ``ci`` of ``level`` and search its nodes' splits: ``(chunk, best)``, the chunk's
        frontier nodes and their best splits (as :func:`rainforest.split_choice.search_group` keeps them); None when the
        root, counted first, is a leaf."""
        nodes, supply = self.nodes, self.supply
        members = [n for g in level.chunks[ci] for n in g]
        chunk_derived = [g[-1] for g in level.chunks[ci] if g[-1] in self.derived]
        # frontier order (node ids grow with it) keeps the breadth-first numbering; siblings that
        # are leaves were only counted for the subtraction
        chunk = sorted(n for n in members if n in level.in_frontier)
        # exact mode over rows in memory: each node's AVC-group over its own slots, not the data's
        # (rainforest/compact.py); all attributes at once, so RF-Vertical groups are not needed.  The
        # rows are those kept by RF-Hybrid, or a load's, read from the spill for this chunk only.
        rows_in_memory = None
        if ci >= level.n_dense:
            rows_in_memory = supply.load(chunk, [nodes.n_node_samples[n] for n in chunk], level.routing,
                                         len(nodes.feature), self.schema, self.row_weights,
                                         level.number)
        elif (self.wide.any() and self.root_done and not chunk_derived and set(members) == set(chunk)
              and all(n in self.in_memory for n in chunk)):
            rows_in_memory = supply.kept
        if rows_in_memory is not None:
            return chunk, self._compact_search(chunk, rows_in_memory)
        # one AVC array for the chunk: its frontier nodes first (what is searched), then the leaf
        # siblings counted only for subtraction; passes count into it, derived rows are filled in
        index_of = {n: i for i, n in enumerate(chunk + [n for n in members if n not in level.in_frontier])}
        build = [n for n in members if n not in self.derived]
        best: dict[int, tuple] = {}
        for attrs in self.groups:
            lead = lead_of(attrs, self.slot_offsets)
            avc_all = self._count(level, attrs, build, index_of, len(chunk_derived))
            self.stats.subtracted_nodes += len(chunk_derived)
            for d in chunk_derived:
                parent, siblings = self.derived[d]
                row = avc_all[index_of[d]]
                row[...] = self.parent_avc.pop(parent)
                for sib in siblings:
                    row -= avc_all[index_of[sib]]
            counted = avc_all[:len(chunk)]  # as counted: a regressor's exact parts, raw
            del avc_all
            avc = moments_of_parts(counted) if len(self.grid) else counted
            if not self.root_done and self._root_is_leaf(avc, attrs, lead):
                return None
            if self.binned[attrs].any():
                from .exact_search import exact_search
                exact_search(self, level, avc, chunk, attrs, lead, best)
            else:
                search_group(avc, chunk, attrs, lead, self.offsets, self.schema, self.n_classes, self.weighted,
                             self.crit, self.params, self.min_weight_leaf, best,
                             parents=counted if self.subtract else None, copy=len(self.groups) > 1)
            del avc, counted  # before the next group's counts: one group's AVC-groups at a time
        return chunk, best

    def _compact_search(self, chunk: list, rows_in_memory: KeptRows) -> dict:
        if self.scratch is None:
            self.scratch = scratch_for(self.schema, self.wide)
        node_pos = np.full(len(self.nodes.feature), -1, np.int32)
        node_pos[chunk] = np.arange(len(chunk))
        found = compact_splits(rows_in_memory, node_pos, len(chunk), self.schema, self.wide, self.scratch,
                               self.n_channels, self.weighted, self.crit, self.params, self.min_weight_leaf,
                               lead_of(np.arange(self.n_attr), self.offsets))
        return {node: (*split, None) for node, split in zip(chunk, found) if split is not None}

    def _count(self, level: _Level, attrs: np.ndarray, build: list, index_of: dict, n_derived: int) -> np.ndarray:
        """The AVC-groups over ``attrs`` of the nodes ``build`` (placed by ``index_of``): the rows of
        nodes in memory are counted there, the others' from the spill or the data, whose pass also
        keeps the rows of ``level.pull`` or writes the spill when the level asks."""
        nodes, supply, in_memory = self.nodes, self.supply, self.in_memory
        avc_all = None
        parts = {flag: [n for n in build if (n in in_memory) == flag] for flag in (False, True)}
        for from_memory, part in parts.items():  # split first: nodes pulled by this pass are counted once
            if not part:
                continue
            node_pos = np.full(len(nodes.feature), -1, np.int32)
            node_pos[part] = [index_of[n] for n in part]
            task = AvcPass(self.schema, level.routing, node_pos, len(index_of), self.count_channels,
                           self.class_weight, self.weighted, attrs, store=supply.store, counted=self.counted,
                           grid=self.grid)
            # the nodes whose rows are counted at this level or later: a worker's kept rows (a Dask store) and
            # a database's node table drop the others'
            task.alive = level.alive(len(nodes.feature))
            task.n_children = np.asarray(nodes.n_children, np.int64)
            if level.pull and not from_memory:
                task.keep_into = supply.kept = KeptRows(
                    level.pull, [nodes.n_node_samples[n] for n in level.pull], len(nodes.feature), self.n_attr,
                    slot_dtype(self.schema), label_dtype(self.schema.label), self.row_weights)
            if level.write and not from_memory:
                if supply.spill is None:  # keyed columns' bins beside their keys where the cache holds them all
                    footprint = spill_footprint(int(nodes.n_node_samples[0]), self.schema, self.row_weights)
                    supply.spill = Spill(self.params.spill_dir, self.n_attr, column_dtypes(self.schema),
                                         self.counted if page_cache_holds(footprint) else None,
                                         write_ahead(self.budget_bytes))
                part_of_node = np.full(len(nodes.feature), -1, np.int64)
                for cj, c in enumerate(level.chunks):
                    for n in (n for g in c for n in g):
                        if n not in in_memory:
                            part_of_node[n] = cj
                task.spill = supply.spill.writer(part_of_node)
            label = (f"{len(part)} node(s) counted + {n_derived} by subtraction"
                     + (f", attributes {attrs[0]}..{attrs[-1]}" if len(self.groups) > 1 else ""))
            # a pass that keeps rows must read those of every pulled node, not only the counted ones
            state, from_data = supply.count(task, label, from_memory, part + list(level.pull), level.number)
            level.passes += from_data
            if avc_all is None:
                avc_all = state.counts
            else:  # the other part's rows are exact zeros here
                avc_all += state.counts
            if task.keep_into is not None:
                self.stats.kept_rows = supply.kept.size
                in_memory.update(level.pull)
                level.pull = []
            if task.spill is not None:
                supply.spill.commit()
                supply.part_of = {n: int(p) for n, p in enumerate(part_of_node) if p >= 0}
                level.write = False
            del state
        return avc_all

    def _root_is_leaf(self, avc: np.ndarray, attrs: np.ndarray, lead: int) -> bool:
        """Take the root's totals from its first AVC-group (the lead attribute's slots) and tell whether
        it is a leaf at once."""
        offsets, nodes = self.offsets, self.nodes
        lo = int(np.sum(offsets[attrs[:lead] + 1] - offsets[attrs[:lead]]))
        lead_slots = int(offsets[attrs[lead] + 1] - offsets[attrs[lead]])
        nodes.value[0], nodes.n_node_samples[0], w_root, nodes.impurity[0] = node_totals(
            avc[0, lo:lo + lead_slots], self.n_classes, self.node_crit)
        self.total_weight = w_root if self.whole_weight is None else self.whole_weight
        self.min_weight_leaf = self.params.min_weight_fraction_leaf * self.total_weight
        self.root_done = True
        return nodes.pre_leaf(0, self.params, self.max_depth, self.min_weight_leaf)

    # -- split ---------------------------------------------------------------------------------
    def split(self, level: _Level, chunk: list, best: dict) -> None:
        """Split the nodes of ``chunk`` whose best split is kept (:mod:`rainforest.rules`); their
        children that go on growing join the next level, and a family's largest child is derived
        there by subtraction when its parent's AVC-group is held."""
        nodes, supply, n_classes = self.nodes, self.supply, self.n_classes
        for node in chunk:
            if node not in best:
                continue
            score, a, ls, rs, inf, nb, br, block, full = best[node]
            child_counts = branch_totals(block, br, nb)
            child_value = child_counts[:, :n_classes]
            child_n = child_counts[:, n_classes] if self.weighted else child_value.sum(axis=1)
            child_imp, keep = split_outcome(nodes.impurity[node], child_value, self.node_crit, self.total_weight,
                                            self.params.min_impurity_decrease)
            if not keep:
                continue
            nodes.split(node, self.schema.attributes[a], a, br, nb, ls, rs, inf, int(np.argmax(child_n)))
            kids = []
            for b in range(nb):
                child = nodes.add_leaf(child_value[b], int(round(child_n[b])), child_imp[b], nodes.depth[node] + 1)
                kids.append(child)
                if not nodes.pre_leaf(child, self.params, self.max_depth, self.min_weight_leaf):
                    level.next_frontier.append(child)
                if node in supply.part_of:
                    supply.part_of[child] = supply.part_of[node]
            if self.one_value is not None:
                self.one_value.inherit(node, kids)
            if node in self.in_memory:
                self.in_memory.update(kids)
            largest = kids[int(np.argmax(child_n))]
            # no subtraction for children counted compactly from rows in memory (kept, or spilled and
            # loaded): that costs their rows only, and a dense AVC-group costs the data's distinct values
            compact_kids = self.wide.any() and (node in self.in_memory or (
                supply.spilled([node]) and nodes.n_node_samples[node] <= self.memory_rows))
            if (self.subtract and full is not None and not compact_kids and len(self.parent_avc) < self.parents_cap
                    and largest in level.next_frontier[-nb:]):
                level.next_derived[largest] = (node, [c for c in kids if c != largest])
                self.parent_avc[node] = full

    def end_level(self, level: _Level) -> None:
        """Record the level's passes, move the kept rows down a level, make the next level current."""
        self.stats.passes_per_level.append(level.passes)
        kept = self.supply.kept
        if kept is not None:  # move kept rows to the new frontier; drop those no node counts any more
            alive = np.zeros(len(self.nodes.feature), bool)
            alive[list(set(level.next_frontier).union(*(sibs for _, sibs in level.next_derived.values())))] = True
            kept.regroup(self.nodes.slot_routing(self.n_slots), np.asarray(self.nodes.n_children, np.int64), alive)
        self.frontier = level.next_frontier
        self.derived = level.next_derived
        if self.one_value is not None:
            self.one_value.keep(self.frontier)
        if self.nodes.n_node_samples[0] >= GIVE_BACK_ROWS:  # what this level freed is not held under the next one's peak
            give_back_free_memory()
        self.level += 1

    def result(self) -> tuple[Tree, GrowStats]:
        if self.supply.spill is not None:
            self.supply.spill.report(self.stats)
        return self.nodes.to_tree(self.schema, self.params.criterion), self.stats
