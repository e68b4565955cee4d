"""Level-wise growth (RF-Read): each pass builds the AVC-groups of as many frontier
nodes as the memory budget holds; the split of each node is then chosen in memory.

The stopping rules and their order are scikit-learn's (``max_depth``,
``min_samples_split``, ``min_samples_leaf``, ``min_weight_fraction_leaf``,
purity, ``min_impurity_decrease``), so that exact mode grows scikit-learn's tree.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import pyarrow as pa

from storage import TableSource

from .avc import AvcPass
from .criteria import CRITERIA, ENTROPY, GAIN_RATIO, impurity, search_nodes
from .errors import BudgetError
from .schema import CATEGORICAL, Schema
from .tree import KIND_NAMES, Tree, route_rows

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
        self.value.append(value)
        self.n_node_samples.append(n)
        self.impurity.append(imp)
        self.depth.append(depth)
        return len(self.feature) - 1

    def routing(self, n_categories: np.ndarray) -> tuple:
        return (np.asarray(self.feature, np.int32), np.asarray(self.threshold, np.float64),
                np.asarray(self.first_child, np.int32), np.asarray(self.missing_branch, np.int32),
                np.asarray(self.cat_offset, np.int32), np.asarray(self.cat_branch, np.int32), n_categories)

    def to_tree(self, schema: Schema, criterion: str, n_classes: int) -> Tree:
        value = np.asarray(self.value, np.float64).reshape(-1, n_classes)
        cats = [list(a.categories) if a.kind == CATEGORICAL else None for a in schema.attributes]
        return Tree(feature_names=schema.names, feature_kinds=[KIND_NAMES[a.kind] for a in schema.attributes],
                    categories=cats, classes=list(schema.label.classes), criterion=criterion,
                    target=schema.label.name,
                    feature=np.asarray(self.feature, np.int32), threshold=np.asarray(self.threshold, np.float64),
                    first_child=np.asarray(self.first_child, np.int32),
                    n_children=np.asarray(self.n_children, np.int32),
                    missing_branch=np.asarray(self.missing_branch, np.int32),
                    cat_offset=np.asarray(self.cat_offset, np.int32),
                    cat_branch=np.asarray(self.cat_branch, np.int32), value=value,
                    n_node_samples=np.asarray(self.n_node_samples, np.int64),
                    weighted_n_node_samples=value.sum(axis=1), impurity=np.asarray(self.impurity, np.float64))


@dataclass
class GrowStats:
    passes_per_level: list = field(default_factory=list)  # passes over the data (not over kept rows)

    @property
    def n_passes(self) -> int:
        return sum(self.passes_per_level)


def grow_tree(source, schema: Schema, params: GrowParams, budget_bytes: int, batch_size: int,
              class_weight: np.ndarray | None, verbose: int = 0, n_rows: int = 0) -> tuple[Tree, GrowStats]:
    """Grow a tree over ``source`` level by level; returns the tree and pass statistics."""
    crit = CRITERIA[params.criterion]
    node_crit = ENTROPY if crit == GAIN_RATIO else crit
    n_classes = len(schema.label.classes)
    weighted = schema.weight is not None or class_weight is not None
    n_channels = n_classes + (1 if weighted else 0)
    offsets = schema.slot_offsets()
    kinds = schema.kinds
    n_categories = np.array([len(a.categories) for a in schema.attributes], np.int64)
    max_slots = int(np.diff(offsets).max())
    node_bytes = int(offsets[-1]) * n_channels * 8 + max_slots * 8
    avc_budget = budget_bytes // 2
    if node_bytes > avc_budget:
        raise BudgetError(
            f"memory_budget {budget_bytes:,} bytes is too small: one node's AVC-group needs {node_bytes:,} bytes "
            f"({int(offsets[-1]):,} value slots x {n_channels} classes); give at least {2 * node_bytes:,} bytes "
            f"or use binned mode (max_bins)")
    # Histogram subtraction: a split's largest child is its parent's AVC-group minus its siblings',
    # so its rows are not counted.  Only with unit weights, where counts are integers and the
    # difference is exact; half of the AVC budget then holds the parents kept for it.
    subtract = not weighted
    per_pass = max(1, (avc_budget // 2 if subtract else avc_budget) // node_bytes)
    parents_cap = avc_budget // 2 // node_bytes if subtract else 0
    stats = GrowStats()
    columns = schema.names + [schema.label.name] + ([schema.weight] if schema.weight else [])
    nodes = _Nodes()
    nodes.add_leaf(np.zeros(n_classes), n_rows, 0.0, 0)  # rows known from profiling let RF-Hybrid pull the root
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
    memory: pa.Table | None = None
    in_memory: set[int] = set()
    memory_rows = (budget_bytes // 4) // _row_bytes(schema) if params.hybrid else 0
    while frontier:
        passes_this_level = 0
        next_frontier: list[int] = []
        next_derived: dict[int, tuple[int, list[int]]] = {}
        in_frontier = set(frontier)
        pull = _families_to_pull(nodes, frontier, in_memory, memory_rows - (memory.num_rows if memory else 0),
                                 max_depth)
        for child, (parent, siblings) in list(derived.items()):
            if len(siblings) + 1 > per_pass:  # the family does not fit one pass: count the child too
                del derived[child]
                parent_avc.pop(parent)
        for chunk_groups in _pack(_families(frontier, derived), per_pass):
            members = [n for g in chunk_groups for n in g]
            chunk_derived = [g[-1] for g in chunk_groups if g[-1] in derived]
            build = [n for n in members if n not in derived]
            block_of = {}
            parts = {flag: [n for n in build if (n in in_memory) == flag] for flag in (False, True)}
            for from_memory, part in parts.items():  # split first: nodes pulled by this pass are counted once
                if not part:
                    continue
                node_pos = np.full(len(nodes.feature), -1, np.int64)
                node_pos[part] = np.arange(len(part))
                keep = None
                if pull and not from_memory:
                    keep = np.zeros(len(nodes.feature), bool)
                    keep[pull] = True
                task = AvcPass(schema, nodes.routing(n_categories), node_pos, len(part), n_channels, class_weight,
                               weighted, keep)
                where = "rows kept in memory" if from_memory else f"pass {source.n_passes + 1} over the data"
                meter = PassMeter(f"level {level}, {where}, {len(part)} node(s) counted"
                                  f" + {len(chunk_derived)} by subtraction", verbose)
                if from_memory:
                    state = TableSource(table=memory, name="rows kept in memory").run_pass(task, columns, batch_size,
                                                                                          meter)
                else:
                    state = source.run_pass(task, columns, batch_size, meter)
                    passes_this_level += 1
                meter.done()
                block_of.update((n, state.counts[i]) for i, n in enumerate(part))
                if keep is not None:
                    memory = pa.concat_tables(([memory] if memory is not None else []) + state.kept)
                    in_memory.update(pull)
                    pull = []
                del state
            for d in chunk_derived:
                parent, siblings = derived[d]
                block = parent_avc.pop(parent)
                for sib in siblings:
                    block -= block_of[sib]
                block_of[d] = block
            # frontier order (node ids grow with it) keeps the breadth-first numbering; siblings that
            # are leaves were only counted for the subtraction
            chunk = sorted(n for n in members if n in in_frontier)
            avc = np.stack([block_of[n] for n in chunk])
            del block_of
            if not root_done:
                totals = avc[0, offsets[0]:offsets[1]].sum(axis=0)
                w_root = totals[:n_classes].sum()
                nodes.value[0] = totals[:n_classes]
                nodes.n_node_samples[0] = int(round(totals[n_classes])) if weighted else int(round(w_root))
                nodes.impurity[0] = impurity(totals[:n_classes], w_root, node_crit)
                min_weight_leaf = params.min_weight_fraction_leaf * w_root
                total_weight = w_root
                root_done = True
                if _pre_leaf(nodes, 0, params, max_depth, min_weight_leaf):
                    break
            k_nodes = len(chunk)
            attr = np.empty(k_nodes, np.int64)
            score = np.empty(k_nodes)
            left_slot = np.empty(k_nodes, np.int64)
            right_slot = np.empty(k_nodes, np.int64)
            inf_thr = np.empty(k_nodes, np.bool_)
            n_branches = np.empty(k_nodes, np.int64)
            branches = np.empty((k_nodes, max_slots), np.int64)
            search_nodes(avc, offsets, kinds, n_classes, weighted, crit, params.multiway,
                         float(params.min_samples_leaf), min_weight_leaf, params.max_exhaustive,
                         attr, score, left_slot, right_slot, inf_thr, n_branches, branches)
            for k, node in enumerate(chunk):
                if attr[k] < 0:
                    continue
                a = int(attr[k])
                lo, hi = offsets[a], offsets[a + 1]
                br = branches[k, :hi - lo]
                nb = int(n_branches[k])
                block = avc[k, lo:hi]
                child_counts = np.zeros((nb, n_channels))
                np.add.at(child_counts, br, block)
                child_value = child_counts[:, :n_classes]
                child_n = child_counts[:, n_classes] if weighted else child_value.sum(axis=1)
                child_w = child_value.sum(axis=1)
                child_imp = [impurity(child_value[b], child_w[b], node_crit) for b in range(nb)]
                wn = child_w.sum()
                if nb == 2:  # scikit-learn's impurity_improvement, operation for operation
                    dec = nodes.impurity[node] - (child_w[1] / wn * child_imp[1]) - (child_w[0] / wn * child_imp[0])
                else:
                    dec = nodes.impurity[node]
                    for b in range(nb):
                        dec -= child_w[b] / wn * child_imp[b]
                improvement = (wn / total_weight) * dec
                if improvement + EPSILON < params.min_impurity_decrease:
                    continue
                _split(nodes, node, schema.attributes[a], a, br, nb, left_slot[k], right_slot[k], inf_thr[k],
                       int(np.argmax(child_n)))
                first = len(nodes.feature)
                nodes.first_child[node] = first
                kids = []
                for b in range(nb):
                    child = nodes.add_leaf(child_value[b], int(round(child_n[b])), child_imp[b],
                                           nodes.depth[node] + 1)
                    kids.append(child)
                    if not _pre_leaf(nodes, child, params, max_depth, min_weight_leaf):
                        next_frontier.append(child)
                if node in in_memory:
                    in_memory.update(kids)
                largest = kids[int(np.argmax(child_n))]
                if subtract and len(parent_avc) < parents_cap and largest in next_frontier[-nb:]:
                    next_derived[largest] = (node, [c for c in kids if c != largest])
                    parent_avc[node] = avc[k].copy()
        stats.passes_per_level.append(passes_this_level)
        if memory is not None:  # release the kept rows no node of the next level counts
            needed = set(next_frontier).union(*(sibs for _, sibs in next_derived.values()))
            growing = np.zeros(len(nodes.feature), bool)
            growing[[n for n in needed if n in in_memory]] = True
            leaf = route_rows(schema.encode(memory), *nodes.routing(n_categories))
            memory = memory.filter(pa.array(growing[leaf]))
        frontier = next_frontier
        derived = next_derived
        level += 1
    return nodes.to_tree(schema, params.criterion, n_classes), stats


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


def _row_bytes(schema: Schema) -> int:
    """Rough in-memory size of a kept row: 8 bytes a number, 24 a category, plus label and weight."""
    return sum(8 if a.kind != CATEGORICAL else 24 for a in schema.attributes) + 16


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
    nodes.missing_branch[node] = int(br[m])
    if attribute.kind == CATEGORICAL:
        nodes.threshold[node] = np.nan
        nodes.cat_offset[node] = len(nodes.cat_branch)
        nodes.cat_branch.extend(int(b) for b in br[:m])
        nodes.cat_branch.append(majority)  # categories unseen in training
    elif inf_thr:
        nodes.threshold[node] = np.inf
    else:  # between the last slot going left and the first going right: the same partition by value
        nodes.threshold[node] = attribute.threshold(int(left_slot), int(right_slot))


class PassMeter:
    """Counts a pass's rows: a progress line on stderr while ``verbose``, then one log line
    (``logging`` at INFO, and printed when ``verbose``) with the rows per second."""

    def __init__(self, label: str, verbose: int):
        self.label, self.verbose = label, verbose
        self.rows = 0
        self.start = self.shown = time.perf_counter()

    def __call__(self, n: int) -> None:
        self.rows += n
        now = time.perf_counter()
        if self.verbose and now - self.shown > 0.5:
            self.shown = now
            print(f"\r  {self.label}: {self.rows:,} rows", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        seconds = time.perf_counter() - self.start
        rate = self.rows / seconds if seconds > 0 else float("inf")
        msg = f"{self.label}: {self.rows:,} rows in {seconds:.2f}s ({rate:,.0f} rows/s)"
        log.info(msg)
        if self.verbose:
            print(f"\r{msg}", file=sys.stderr if self.shown > self.start else sys.stdout, flush=True)
