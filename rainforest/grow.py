"""Level-wise growth.  RF-Read: each pass builds the AVC-groups of as many frontier nodes as
the memory budget holds; the split of each node is then chosen in memory.  RF-Hybrid: nodes
whose rows fit a quarter of the budget are pulled into memory (encoded, see
:mod:`rainforest.rows`) and their subtrees counted there.  RF-Write: a level that needs several
reads spills its rows, partitioned by node, and later reads take only their partitions
(:mod:`rainforest.spill`).  RF-Vertical: when one node's AVC-group exceeds the budget, the
attributes are counted a group at a time.  All four build the same tree.

The stopping rules and their order are scikit-learn's (``max_depth``,
``min_samples_split``, ``min_samples_leaf``, ``min_weight_fraction_leaf``,
purity, ``min_impurity_decrease``), so that exact mode grows scikit-learn's tree.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field

import numba
import numpy as np

from .avc import AvcPass
from .compact import compact_splits, scratch_for, wide_attributes
from .criteria import CRITERIA, ENTROPY, GAIN_RATIO, best_splits, impurity
from .errors import BudgetError
from .pruning import renumbered
from .rows import KeptRows, class_dtype, descend, row_bytes, slot_dtype
from .schema import CATEGORICAL, Schema
from .spill import Spill
from .tree import KIND_NAMES, Tree

log = logging.getLogger("rainforest")
EPSILON = np.finfo(np.float64).eps


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


@dataclass
class _Nodes:
    """The tree being grown, as growable lists."""

    feature: list = field(default_factory=list)
    threshold: list = field(default_factory=list)
    first_child: list = field(default_factory=list)
    n_children: list = field(default_factory=list)
    missing_branch: list = field(default_factory=list)
    cat_offset: list = field(default_factory=list)
    cat_branch: list = field(default_factory=list)
    branch_offset: list = field(default_factory=list)  # of each categorical split's slot -> child table
    slot_branch: list = field(default_factory=list)
    slot_cut: list = field(default_factory=list)  # numeric splits: the last slot going to the first child
    value: list = field(default_factory=list)
    n_node_samples: list = field(default_factory=list)
    impurity: list = field(default_factory=list)
    depth: list = field(default_factory=list)

    def add_leaf(self, value, n, imp, depth) -> int:
        self.feature.append(-2)
        self.threshold.append(-2.0)
        self.first_child.append(-1)
        self.n_children.append(0)
        self.missing_branch.append(-1)
        self.cat_offset.append(-1)
        self.branch_offset.append(-1)
        self.slot_cut.append(-1)
        self.value.append(value)
        self.n_node_samples.append(n)
        self.impurity.append(imp)
        self.depth.append(depth)
        return len(self.feature) - 1

    def slot_routing(self, n_slots: np.ndarray) -> tuple:
        """The arrays :func:`rainforest.rows.descend` routes encoded rows with."""
        return (np.asarray(self.feature, np.int32), np.asarray(self.first_child, np.int32),
                np.asarray(self.slot_branch, np.int32), np.asarray(self.branch_offset, np.int32),
                np.asarray(self.slot_cut, np.int64), np.asarray(self.missing_branch, np.int32), n_slots)

    def to_tree(self, schema: Schema, criterion: str, n_classes: int) -> Tree:
        """The model, numbered breadth first (children in branch order) whatever order growth split a
        level's nodes in: :func:`rainforest.pruning.renumbered` (the numbering :func:`prune` gives)."""
        value = np.asarray(self.value, np.float64).reshape(-1, n_classes)
        cats = [list(a.categories) if a.kind == CATEGORICAL else None for a in schema.attributes]
        return renumbered(Tree(
            feature_names=schema.names, feature_kinds=[KIND_NAMES[a.kind] for a in schema.attributes],
            categories=cats, classes=list(schema.label.classes), criterion=criterion, target=schema.label.name,
            feature=np.asarray(self.feature, np.int32), threshold=np.asarray(self.threshold, np.float64),
            first_child=np.asarray(self.first_child, np.int32), n_children=np.asarray(self.n_children, np.int32),
            missing_branch=np.asarray(self.missing_branch, np.int32),
            cat_offset=np.asarray(self.cat_offset, np.int32), cat_branch=np.asarray(self.cat_branch, np.int32),
            value=value, n_node_samples=np.asarray(self.n_node_samples, np.int64),
            weighted_n_node_samples=value.sum(axis=1), impurity=np.asarray(self.impurity, np.float64)))


@dataclass
class GrowStats:
    passes_per_level: list = field(default_factory=list)  # passes over the data (not memory or spill)
    spill_reads: int = 0  # reads of spill partitions (RF-Write)
    spill_bytes: int = 0  # bytes written to the spill folder
    attribute_groups: int = 1  # RF-Vertical: attribute groups counted apart (1: all together)
    kept_rows: int = 0  # RF-Hybrid: rows pulled into memory

    @property
    def n_passes(self) -> int:
        return sum(self.passes_per_level)


@dataclass
class _Supply:
    """Where the rows of frontier nodes come from: memory (RF-Hybrid), the spill folder (RF-Write)
    once written, else the data source; every read goes through :meth:`count`."""

    source: object
    columns: list
    batch_size: int
    verbose: int
    n_rows: int
    kept: KeptRows | None = None
    spill: Spill | None = None
    part_of: dict = field(default_factory=dict)  # tree node -> spill partition holding its rows

    def count(self, task: AvcPass, label: str, from_memory: bool, nodes: list, level: int) -> tuple:
        """Run ``task`` over the rows of ``nodes``; returns its state and whether the data was read."""
        if from_memory:
            meter = PassMeter(f"level {level}, rows kept in memory, {label}", self.verbose, self.kept.size)
            state = task.count_kept(task.new_state(), self.kept)
            meter(self.kept.size)
            meter.done()
            return state, False
        if self.spill is not None and self.spill.generation >= 0:
            parts = {self.part_of[n] for n in nodes} if task.spill is None else self.spill.parts
            meter = PassMeter(f"level {level}, spill partitions {sorted(parts)}, {label}", self.verbose,
                              self.spill.rows_in(parts) if self.verbose else 0)  # footers read for the bar only
            state = task.new_state()
            for rows in self.spill.read(parts, self.batch_size):
                state = task.count(state, rows)
                meter(len(rows))
            meter.done()
            return state, False
        meter = PassMeter(f"level {level}, pass {self.source.n_passes + 1} over the data, {label}", self.verbose,
                          self.n_rows)
        state = self.source.run_pass(task, self.columns, self.batch_size, meter)
        meter.done()
        return state, True

    def spilled(self, nodes: list) -> bool:
        """Whether the rows of every node in ``nodes`` are in the spill folder (and only there); with no
        nodes, whether there is a spill folder to read."""
        return self.spill is not None and self.spill.generation >= 0 and all(n in self.part_of for n in nodes)

    def load(self, nodes: list, rows_of: list, routing: tuple, n_tree_nodes: int, schema: Schema, n_classes: int,
             weighted: bool, level: int) -> KeptRows:
        """The rows of ``nodes`` read from their spill partitions into memory, grouped by node in row
        order, as RF-Hybrid keeps rows: one read of the partitions counts every attribute of every
        node (compact AVC-groups) where dense ones would take a read per node and attribute group."""
        kept = KeptRows(nodes, rows_of, n_tree_nodes, len(schema.attributes), slot_dtype(schema),
                        class_dtype(n_classes), weighted)
        parts = {self.part_of[n] for n in nodes}
        meter = PassMeter(f"level {level}, spill partitions {sorted(parts)}, {len(nodes)} node(s) loaded and "
                          f"counted in memory", self.verbose, int(sum(rows_of)))
        for rows in self.spill.read(parts, self.batch_size):
            descend(rows.S, rows.node, *routing)
            kept.add(rows)
            meter(len(rows))
        meter.done()
        return kept


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
    supply = _Supply(source, schema.names + [schema.label.name] + ([schema.weight] if schema.weight else []),
                     batch_size, verbose, n_rows)
    try:
        return _grow(supply, schema, params, budget_bytes, class_weight, n_rows, root_depth, total_weight)
    finally:
        if supply.spill is not None:
            supply.spill.remove()


def _grow(supply: _Supply, schema: Schema, params: GrowParams, budget_bytes: int,
          class_weight: np.ndarray | None, n_rows: int, root_depth: int = 0,
          whole_weight: float | None = None) -> tuple[Tree, GrowStats]:
    crit = CRITERIA[params.criterion]
    node_crit = ENTROPY if crit == GAIN_RATIO else crit
    n_classes = len(schema.label.classes)
    weighted = schema.weight is not None or class_weight is not None
    n_channels = n_classes + (1 if weighted else 0)
    offsets = schema.slot_offsets()
    n_attr = len(schema.attributes)
    n_slots = np.array([a.n_slots for a in schema.attributes], np.int64)
    avc_budget = budget_bytes // 2
    groups = attribute_groups(schema, n_channels, avc_budget, params.vertical)
    everything = np.arange(n_attr)
    wide = wide_attributes(schema) if params.compact else np.zeros(n_attr, np.int64)
    scratch = None  # compact AVC-groups' slot table, made at their first use
    group_bytes = max(_group_bytes(offsets, g, n_channels) for g in groups)
    # Histogram subtraction: a split's largest child is its parent's AVC-group minus its siblings',
    # so its rows are not counted.  Only with unit weights, where counts are integers and the
    # difference is exact, and whole AVC-groups (not RF-Vertical); half of the AVC budget then
    # holds the parents kept for it.
    subtract = not weighted and len(groups) == 1
    per_pass = max(1, (avc_budget // 2 if subtract else avc_budget) // group_bytes)
    parents_cap = avc_budget // 2 // group_bytes if subtract else 0
    stats = GrowStats(attribute_groups=len(groups))
    local = not getattr(supply.source, "distributed", False)  # spill and keep in place in this process
    nodes = _Nodes()
    nodes.add_leaf(np.zeros(n_classes), n_rows, 0.0, root_depth)  # rows known from profiling let RF-Hybrid pull the root
    frontier = [0]
    derived: dict[int, tuple[int, list[int]]] = {}  # child -> (parent, siblings counted directly)
    parent_avc: dict[int, np.ndarray] = {}
    root_done = False
    min_weight_leaf = 0.0
    total_weight = 0.0
    max_depth = np.inf if params.max_depth is None else params.max_depth
    level = 0
    # RF-Hybrid: rows of nodes whose families fit a quarter of the budget are kept in memory by
    # a data pass; their subtrees are then counted over those rows, costing no data pass.
    in_memory: set[int] = set()
    # Not from a distributed source: its passes return only AVC-groups, never rows.
    memory_rows = (budget_bytes // 4) // row_bytes(schema, weighted) \
        if params.hybrid and local else 0
    while frontier:
        passes_this_level = 0
        next_frontier: list[int] = []
        next_derived: dict[int, tuple[int, list[int]]] = {}
        in_frontier = set(frontier)
        pull = _families_to_pull(nodes, frontier, in_memory, memory_rows, max_depth) if supply.kept is None else []
        for child, (parent, siblings) in list(derived.items()):
            if len(siblings) + 1 > per_pass:  # the family does not fit one pass: count the child too
                del derived[child]
                parent_avc.pop(parent)
        chunks = list(_pack(_families(frontier, derived), per_pass))
        # Exact mode: spilled nodes whose rows fit the room for kept rows are loaded, as many to a read
        # as fit, and counted in memory with compact AVC-groups (all attributes in one read, where dense
        # ones take a read per node and attribute group).  They come after the other chunks, the first of
        # which may write the next spill; the tree is numbered breadth-first whatever the order.
        n_dense = len(chunks)
        if wide.any() and root_done and memory_rows and not pull and supply.spilled([]):
            chunks, loads = _spilled_loads(chunks, in_memory, supply, nodes.n_node_samples, memory_rows)
            n_dense = len(chunks)
            chunks += [[[n] for n in load] for load in loads]
        # RF-Write: when the rows not in memory must be read more than once this level, the first
        # read also writes them, partitioned by the chunk that counts them, for the other reads.
        # (Spilling also when only later levels read the rows again was tried: at 100M rows the fit
        # took 89 s, not 109 s, in 2 passes, but the spill's reads raised the peak RSS from 644 MB to
        # 1,093 MB, past the 1 GB that 100M rows must stay under.)
        reads = sum(1 for c in chunks[:n_dense] if any(n not in in_memory for g in c for n in g if n not in derived))
        write = params.write and local and not pull and reads * len(groups) > 1
        routing = nodes.slot_routing(n_slots)
        stop = False
        for ci, chunk_groups in enumerate(chunks):
            members = [n for g in chunk_groups for n in g]
            chunk_derived = [g[-1] for g in chunk_groups if g[-1] in derived]
            build = [n for n in members if n not in derived]
            # frontier order (node ids grow with it) keeps the breadth-first numbering; siblings that
            # are leaves were only counted for the subtraction
            chunk = sorted(n for n in members if n in in_frontier)
            # one AVC array for the chunk: its frontier nodes first (what is searched), then the leaf
            # siblings counted only for subtraction; passes count into it, derived rows are filled in
            index_of = {n: i for i, n in enumerate(chunk + [n for n in members if n not in in_frontier])}
            best: dict[int, tuple] = {}
            # exact mode over rows in memory: each node's AVC-group over its own slots, not the data's
            # (rainforest/compact.py); all attributes at once, so RF-Vertical groups are not needed.  The
            # rows are those kept by RF-Hybrid, or a load's, read from the spill for this chunk only.
            rows_in_memory = None
            if ci >= n_dense:
                rows_in_memory = supply.load(chunk, [nodes.n_node_samples[n] for n in chunk], routing,
                                             len(nodes.feature), schema, n_classes, weighted, level)
            elif (wide.any() and root_done and not chunk_derived and set(members) == set(chunk)
                  and all(n in in_memory for n in chunk)):
                rows_in_memory = supply.kept
            compact = rows_in_memory is not None
            if compact:
                if scratch is None:
                    scratch = scratch_for(schema, wide)
                node_pos = np.full(len(nodes.feature), -1, np.int32)
                node_pos[chunk] = np.arange(len(chunk))
                found = compact_splits(rows_in_memory, node_pos, len(chunk), schema, wide, scratch, n_channels,
                                       weighted, crit, params, min_weight_leaf, lead_of(everything, offsets))
                del rows_in_memory
                best = {node: (*split, None) for node, split in zip(chunk, found) if split is not None}
            for attrs in ([] if compact else groups):
                lead = lead_of(attrs, offsets)
                avc_all = None
                parts = {flag: [n for n in build if (n in in_memory) == flag] for flag in (False, True)}
                for from_memory, part in parts.items():  # split first: nodes pulled by this pass are counted once
                    if not part:
                        continue
                    node_pos = np.full(len(nodes.feature), -1, np.int32)
                    node_pos[part] = [index_of[n] for n in part]
                    task = AvcPass(schema, routing, node_pos, len(index_of), n_channels, class_weight, weighted,
                                   attrs)
                    if pull and not from_memory:
                        task.keep_into = supply.kept = KeptRows(
                            pull, [nodes.n_node_samples[n] for n in pull], len(nodes.feature), n_attr,
                            slot_dtype(schema), class_dtype(n_classes), weighted)
                    if write and not from_memory:
                        if supply.spill is None:
                            supply.spill = Spill(params.spill_dir, n_attr)
                        part_of_node = np.full(len(nodes.feature), -1, np.int64)
                        for cj, c in enumerate(chunks):
                            for n in (n for g in c for n in g):
                                if n not in in_memory:
                                    part_of_node[n] = cj
                        task.spill = supply.spill.writer(part_of_node)
                    label = (f"{len(part)} node(s) counted + {len(chunk_derived)} by subtraction"
                             + (f", attributes {attrs[0]}..{attrs[-1]}" if len(groups) > 1 else ""))
                    # a pass that keeps rows must read those of every pulled node, not only the counted ones
                    state, from_data = supply.count(task, label, from_memory, part + list(pull), level)
                    passes_this_level += from_data
                    if avc_all is None:
                        avc_all = state.counts
                    else:  # the other part's rows are exact zeros here
                        avc_all += state.counts
                    if task.keep_into is not None:
                        stats.kept_rows = supply.kept.size
                        in_memory.update(pull)
                        pull = []
                    if task.spill is not None:
                        supply.spill.commit()
                        supply.part_of = {n: int(p) for n, p in enumerate(part_of_node) if p >= 0}
                        write = False
                    del state
                for d in chunk_derived:
                    parent, siblings = derived[d]
                    row = avc_all[index_of[d]]
                    row[...] = parent_avc.pop(parent)
                    for sib in siblings:
                        row -= avc_all[index_of[sib]]
                avc = avc_all[:len(chunk)]
                del avc_all
                if not root_done:
                    lo = int(np.sum(offsets[attrs[:lead] + 1] - offsets[attrs[:lead]]))
                    lead_slots = int(offsets[attrs[lead] + 1] - offsets[attrs[lead]])
                    totals = avc[0, lo:lo + lead_slots].sum(axis=0)
                    w_root = totals[:n_classes].sum()
                    nodes.value[0] = totals[:n_classes]
                    nodes.n_node_samples[0] = int(round(totals[n_classes])) if weighted else int(round(w_root))
                    nodes.impurity[0] = impurity(totals[:n_classes], w_root, node_crit)
                    total_weight = w_root if whole_weight is None else whole_weight
                    min_weight_leaf = params.min_weight_fraction_leaf * total_weight
                    root_done = True
                    if _pre_leaf(nodes, 0, params, max_depth, min_weight_leaf):
                        stop = True
                        break
                _best_splits(avc, chunk, attrs, lead, offsets, schema, n_classes, weighted, crit, params,
                             min_weight_leaf, best, keep_avc=subtract, copy=len(groups) > 1)
                del avc  # before the next group's counts: one group's AVC-groups at a time
            if stop:
                break
            for node in chunk:
                if node not in best:
                    continue
                score, a, ls, rs, inf, nb, br, block, full = best[node]
                child_counts = branch_totals(block, br, nb)
                child_value = child_counts[:, :n_classes]
                child_n = child_counts[:, n_classes] if weighted else child_value.sum(axis=1)
                child_imp, keep = split_outcome(nodes.impurity[node], child_value, node_crit, total_weight,
                                                params.min_impurity_decrease)
                if not keep:
                    continue
                _split(nodes, node, schema.attributes[a], a, br, nb, ls, rs, inf, int(np.argmax(child_n)))
                first = len(nodes.feature)
                nodes.first_child[node] = first
                kids = []
                for b in range(nb):
                    child = nodes.add_leaf(child_value[b], int(round(child_n[b])), child_imp[b],
                                           nodes.depth[node] + 1)
                    kids.append(child)
                    if not _pre_leaf(nodes, child, params, max_depth, min_weight_leaf):
                        next_frontier.append(child)
                    if node in supply.part_of:
                        supply.part_of[child] = supply.part_of[node]
                if node in in_memory:
                    in_memory.update(kids)
                largest = kids[int(np.argmax(child_n))]
                # no subtraction for children counted compactly from rows in memory (kept, or spilled and
                # loaded): that costs their rows only, and a dense AVC-group costs the data's distinct values
                compact_kids = wide.any() and (node in in_memory or (
                    supply.spilled([node]) and nodes.n_node_samples[node] <= memory_rows))
                if (subtract and full is not None and not compact_kids and len(parent_avc) < parents_cap
                        and largest in next_frontier[-nb:]):
                    next_derived[largest] = (node, [c for c in kids if c != largest])
                    parent_avc[node] = full
        stats.passes_per_level.append(passes_this_level)
        if supply.kept is not None:  # move kept rows to the new frontier; drop those no node counts any more
            alive = np.zeros(len(nodes.feature), bool)
            alive[list(set(next_frontier).union(*(sibs for _, sibs in next_derived.values())))] = True
            supply.kept.regroup(nodes.slot_routing(n_slots), np.asarray(nodes.n_children, np.int64), alive)
        frontier = next_frontier
        derived = next_derived
        level += 1
    if supply.spill is not None:
        stats.spill_reads, stats.spill_bytes = supply.spill.reads, supply.spill.bytes_written
    return nodes.to_tree(schema, params.criterion, n_classes), stats


def split_outcome(node_impurity: float, child_value: np.ndarray, node_crit: int, total_weight: float,
                  min_impurity_decrease: float) -> tuple[list, bool]:
    """The children's impurities, and whether the split is kept: its weighted impurity decrease
    (scikit-learn's ``impurity_improvement``, operation for operation) reaches ``min_impurity_decrease``."""
    child_w = child_value.sum(axis=1)
    nb = len(child_value)
    child_imp = [impurity(child_value[b], child_w[b], node_crit) for b in range(nb)]
    wn = child_w.sum()
    if nb == 2:
        dec = node_impurity - (child_w[1] / wn * child_imp[1]) - (child_w[0] / wn * child_imp[0])
    else:
        dec = node_impurity
        for b in range(nb):
            dec -= child_w[b] / wn * child_imp[b]
    improvement = (wn / total_weight) * dec
    return child_imp, not improvement + EPSILON < min_impurity_decrease


@numba.njit(cache=True, nogil=True)
def branch_totals(block, br, nb):
    """Each branch's counts: the counts of the slots going to it, summed in slot order."""
    out = np.zeros((nb, block.shape[1]))
    for s in range(block.shape[0]):
        for c in range(block.shape[1]):
            out[br[s], c] += block[s, c]
    return out


def _best_splits(avc, chunk, attrs, lead, offsets, schema, n_classes, weighted, crit, params, min_weight_leaf,
                 best, keep_avc, copy):
    """Search the splits of ``chunk``'s nodes over the attribute group ``attrs`` and keep, per node in
    ``best``, the better of it and the groups searched before: the higher score, the lower attribute
    index on a tie, as one search over all attributes in order would choose.  ``best`` holds views of
    ``avc`` unless ``copy`` (RF-Vertical: a group's AVC-groups are released before the next one's)."""
    keep = np.copy if copy else (lambda a: a)
    group_offsets = np.concatenate([[0], np.cumsum(offsets[attrs + 1] - offsets[attrs])])
    k_nodes = len(chunk)
    n_slots = int(group_offsets[-1])
    attr, score, left_slot, right_slot, inf_thr, n_branches, branches, branch_start = best_splits(
        avc.reshape(k_nodes * n_slots, avc.shape[2]), np.arange(k_nodes + 1) * n_slots,
        np.tile(group_offsets, (k_nodes, 1)), schema.kinds[attrs], n_classes, weighted, crit, params.multiway,
        float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive, int(np.diff(group_offsets).max()),
        lead)
    for k, node in enumerate(chunk):
        j = int(attr[k])
        if j < 0:
            continue
        if node in best:
            held, a = best[node][0], best[node][1]
            if score[k] < held or (score[k] == held and attrs[j] > a):
                continue
        lo, hi = group_offsets[j], group_offsets[j + 1]
        br = branches[branch_start[k]:branch_start[k] + hi - lo]
        best[node] = (score[k], int(attrs[j]), int(left_slot[k]), int(right_slot[k]), bool(inf_thr[k]),
                      int(n_branches[k]), keep(br), keep(avc[k, lo:hi]), avc[k] if keep_avc else None)


def _group_bytes(offsets: np.ndarray, attrs: np.ndarray, n_channels: int) -> int:
    """Bytes of one node's AVC-group over ``attrs``, with the split search's scratch."""
    sizes = offsets[attrs + 1] - offsets[attrs]
    return int(sizes.sum()) * n_channels * 8 + int(sizes.max()) * 8


def attribute_groups(schema: Schema, n_channels: int, avc_budget: int, vertical: bool) -> list[np.ndarray]:
    """The attributes counted together in one pass, in index order: all of them while one node's
    AVC-group fits the AVC budget; else (RF-Vertical) groups that each fit, every one holding the
    attribute with the fewest slots (the *lead*, :func:`lead_of`), whose slots give the node's
    class totals the same way in every group."""
    offsets = schema.slot_offsets()
    everything = np.arange(len(schema.attributes))
    need = _group_bytes(offsets, everything, n_channels)
    if need <= avc_budget:
        return [everything]
    if not vertical:
        raise BudgetError(
            f"memory budget too small: one node's AVC-group needs {need:,} bytes ({int(offsets[-1]):,} value slots "
            f"x {n_channels} classes) and the AVC half of the budget is {avc_budget:,}; raise memory_budget, "
            f"use binned mode (max_bins) or algorithm='hybrid' (RF-Vertical)")
    lead = int(np.argmin(np.diff(offsets)))
    groups, current = [], []
    for a in everything:
        if a == lead:
            continue
        if current and _group_bytes(offsets, np.array(sorted(current + [a, lead])), n_channels) > avc_budget:
            groups.append(np.array(sorted(current + [lead])))
            current = []
        current.append(a)
    groups.append(np.array(sorted(current + [lead])))
    for g in groups:
        if _group_bytes(offsets, g, n_channels) > avc_budget:
            big = max(g, key=lambda a: offsets[a + 1] - offsets[a])
            raise BudgetError(
                f"memory budget too small even for RF-Vertical: attribute {schema.attributes[big].name!r} alone "
                f"has {int(offsets[big + 1] - offsets[big]):,} value slots, which need "
                f"{_group_bytes(offsets, g, n_channels):,} bytes per node (the AVC half of the budget "
                f"is {avc_budget:,}); raise memory_budget or use binned mode (max_bins)")
    return groups


def lead_of(attrs: np.ndarray, offsets: np.ndarray) -> int:
    """Index in ``attrs`` of the attribute whose slots give the class totals: the one with the
    fewest slots (the first such), the same attribute in every RF-Vertical group."""
    return int(np.argmin(offsets[attrs + 1] - offsets[attrs]))


def _families(frontier: list[int], derived: dict) -> list[list[int]]:
    """Frontier nodes grouped so that a derived child comes last, after the siblings it needs."""
    group_of = {}
    for child, (_, siblings) in derived.items():
        group = siblings + [child]
        for n in group:
            group_of[n] = group
    groups, seen = [], set()
    for n in frontier:
        if n not in seen:
            group = group_of.get(n, [n])
            groups.append(group)
            seen.update(group)
    return groups


def _pack(groups: list[list[int]], per_pass: int):
    """Chunks of whole families holding at most ``per_pass`` nodes (no family is larger)."""
    chunk, size = [], 0
    for g in groups:
        if chunk and size + len(g) > per_pass:
            yield chunk
            chunk, size = [], 0
        chunk.append(g)
        size += len(g)
    if chunk:
        yield chunk


def _spilled_loads(chunks: list, in_memory: set, supply: _Supply, rows_of: list, room: int) -> tuple[list, list]:
    """Take the spilled frontier nodes counted on their own (no family) whose rows fit ``room`` out of
    ``chunks``; returns the chunks left and the loads: those nodes in spill-partition order, packed
    so that a load holds at most ``room`` rows and reads each partition once."""
    loadable = [g[0] for c in chunks for g in c if len(g) == 1 and g[0] not in in_memory and supply.spilled(g)
                and rows_of[g[0]] <= room]
    if not loadable:
        return chunks, []
    chosen = set(loadable)
    rest = [c for c in ([g for g in c if not (len(g) == 1 and g[0] in chosen)] for c in chunks) if c]
    loads, load, size = [], [], 0
    for n in sorted(loadable, key=lambda n: (supply.part_of[n], n)):
        if load and size + rows_of[n] > room:
            loads.append(load)
            load, size = [], 0
        load.append(n)
        size += rows_of[n]
    return rest, loads + [load]


def _families_to_pull(nodes: _Nodes, frontier: list[int], in_memory: set, room_rows: int, max_depth) -> list[int]:
    """The frontier nodes not yet in memory whose subtrees go on growing, if all their rows fit the
    room left: then every later level is counted in memory.  Keeping only some would add work (the
    others still need a pass per level) without saving a pass."""
    pull = [n for n in frontier if n not in in_memory and nodes.depth[n] + 1 < max_depth]
    return pull if pull and sum(nodes.n_node_samples[n] for n in pull) <= room_rows else []


def _pre_leaf(nodes: _Nodes, i: int, p: GrowParams, max_depth, min_weight_leaf) -> bool:
    """scikit-learn's conditions that make a node a leaf before its split is searched."""
    n = nodes.n_node_samples[i]
    w = float(np.sum(nodes.value[i]))
    return (nodes.depth[i] >= max_depth or n < p.min_samples_split or n < 2 * p.min_samples_leaf
            or w < 2 * min_weight_leaf or nodes.impurity[i] <= EPSILON)


def _split(nodes: _Nodes, node: int, attribute, a: int, br: np.ndarray, nb: int, left_slot: int,
           right_slot: int, inf_thr: bool, majority: int) -> None:
    m = attribute.n_slots
    nodes.feature[node] = a
    nodes.n_children[node] = nb
    nodes.missing_branch[node] = int(br[-1])  # the missing slot is last (also in a compact AVC-set)
    if attribute.kind == CATEGORICAL:
        nodes.branch_offset[node] = len(nodes.slot_branch)
        nodes.slot_branch.extend(int(b) for b in br)
        nodes.threshold[node] = np.nan
        nodes.cat_offset[node] = len(nodes.cat_branch)
        nodes.cat_branch.extend(int(b) for b in br[:m])
        nodes.cat_branch.append(majority)  # categories unseen in training
    elif inf_thr:
        nodes.threshold[node] = np.inf
        nodes.slot_cut[node] = m  # every present value goes to the first child
    else:  # between the last slot going left and the first going right: the same partition by value
        nodes.threshold[node] = attribute.threshold(int(left_slot), int(right_slot))
        nodes.slot_cut[node] = int(left_slot)


class PassMeter:
    """Counts a pass's rows: while ``verbose``, a progress bar on stderr (level, pass, rows done of
    ``total``); then one log line (``logging`` at INFO, and printed when ``verbose``) with rows/s."""

    WIDTH = 24

    def __init__(self, label: str, verbose: int, total: int = 0):
        self.label, self.verbose, self.total = label, verbose, total
        self.rows = 0
        self.start = self.shown = time.perf_counter()

    def bar(self) -> str:
        if self.total <= 0:
            return f"{self.label}: {self.rows:,} rows"
        done = min(1.0, self.rows / self.total)
        filled = int(round(done * self.WIDTH))
        return (f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done:4.0%} "
                f"{self.rows:,}/{self.total:,} rows")

    def __call__(self, n: int) -> None:
        self.rows += n
        now = time.perf_counter()
        if self.verbose and now - self.shown > 0.5:
            self.shown = now
            print(f"\r  {self.bar()}", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        seconds = time.perf_counter() - self.start
        rate = self.rows / seconds if seconds > 0 else float("inf")
        msg = f"{self.label}: {self.rows:,} rows in {seconds:.2f}s ({rate:,.0f} rows/s)"
        log.info(msg)
        if self.verbose:
            if self.shown > self.start:  # end the progress bar's line
                print(f"\r  {self.bar()}", file=sys.stderr, flush=True)
            print(msg, flush=True)
