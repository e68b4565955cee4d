"""Coarse to exact, top down: verified splits, interval rows routed on, RainForest below.

Each coarse node, once its ancestors are final, gets its exact split (:mod:`rainforest.boat.verify`) from
its statistics and the rows held in its interval; those rows then go down the exact split (and
on through the coarse tree, adding to the statistics of the nodes they pass).  A node that fails
verification, and every frontier node, is finished by RainForest (``rainforest.grow``, exact
mode) over its family: the files of its coarse subtree in the work folder plus the interval rows
routed to it.  Subtrees are cached by their family's content, so an update regrows only those
whose family changed or whose check now fails.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from rainforest.criteria import CRITERIA
from rainforest.budget import give_back_free_memory
from rainforest.grow import GIVE_BACK_ROWS, GrowParams, grow_tree
from rainforest.rules import depth_limit, node_totals, pre_leaf, split_outcome
from rainforest.schema import CATEGORICAL, Schema
from rainforest.storage import ParquetSource, Source, TableSource

from .assemble import Node, tree_nodes
from .cleanup import NodeFiles, NodeStats, route_rows
from .coarse import CoarseTree
from .deepen import split_branch
from .verify import node_split


@dataclass
class FamilySource(Source):
    """Several sources read one after the other as one (a node's family: its files, its routed rows)."""

    parts: list = None
    name: str = "a node's family"
    report: object = None  # a FinishReport counting the reads of the work folder's files (work_reads, work_rows)

    @property
    def schema(self) -> pa.Schema:
        return self.parts[0].schema

    @property
    def description(self) -> str:
        return self.name

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        for part in self.parts:  # uncounted here: the family's pass is counted once, by its own scan
            files = self.report is not None and isinstance(part, ParquetSource)  # the work folder's, not routed rows
            if files:
                self.report.work_reads += 1
            for _, batch in part.scan(columns, batch_size, prefetch=False):
                if files:
                    self.report.work_rows += batch.num_rows
                yield batch


GATHERED_VALUE_BYTES = 64  # memory a check's read value of a marked bucket takes (Finisher.gathered_values_room)


@dataclass
class FinishReport:
    failures: list = field(default_factory=list)  # (coarse node, reason)
    rebuilt: int = 0  # failed nodes whose subtree was grown (not taken from the cache)
    regrown: int = 0  # frontier subtrees grown (not taken from the cache)
    verified: int = 0  # coarse nodes whose exact split was verified
    work_reads: int = 0  # reads of node files in the work folder: a family's pass, a node's held rows, its buckets
    work_rows: int = 0  # the rows those reads gave
    grown: list = field(default_factory=list)  # (coarse node, its node in the tree) of each subtree grown
    oversized: list = field(default_factory=list)  # coarse nodes holding more interval rows than memory does
    grown_rows: int = 0  # the rows of the families grown


@dataclass
class Finisher:
    coarse: CoarseTree
    schema: Schema
    offsets: np.ndarray
    files: NodeFiles
    params: GrowParams
    budget: int
    batch_size: int
    columns: list
    cache: dict = field(default_factory=dict)  # coarse node -> (family signature, Node)

    def finish(self, base: NodeStats, n_total: int) -> tuple[Node, FinishReport]:
        """The whole tree from the cleanup pass's statistics ``base`` (not modified)."""
        stats = base.copy()
        crit = CRITERIA[self.params.criterion]
        extras: dict[int, list] = {}
        report = FinishReport()
        max_depth = depth_limit(self.params.max_depth)
        min_weight_leaf = self.params.min_weight_fraction_leaf * n_total  # unit weights: the rows
        total = stats.total[0] if self.coarse.feature[0] >= 0 else None
        if total is None:  # the root is a frontier node: RainForest over everything
            root = Node(np.zeros(0), 0, 0.0)
            sub = self._subtree(0, root, extras, n_total, report, failed=False)
            root.value, root.n, root.impurity = sub.value.copy(), sub.n, sub.impurity
            return root, report
        value, n, _, imp = node_totals(total[None, :], len(total), crit)
        root = Node(value.copy(), n, float(imp))
        queue = [(0, root)]
        room = self.held_rows_room()
        while queue:
            k, node = queue.pop(0)
            if self._pre_leaf(node, int(self.coarse.depth[k]), max_depth, min_weight_leaf):
                continue
            n_held = int(self.files.n_rows[k]) + sum(t.num_rows for t in extras.get(k, []))
            if n_held > room:
                report.failures.append((k, f"its interval holds {n_held:,} rows, more than half the memory budget "
                                        f"holds ({room:,}); RainForest grows its subtree instead"))
                report.oversized.append(k)
                self._subtree(k, node, extras, n_total, report, failed=True)
                continue
            held = self._held(k, extras, report)
            f = int(self.coarse.feature[k])
            X = self.schema.encode(held) if held is not None else np.empty((0, len(self.schema.attributes)))
            y = self.schema.label.codes(held.column(self.schema.label.name)) if held is not None \
                else np.empty(0, np.int32)
            interval_slot = int(np.searchsorted(self.coarse.edges[k, f], self.coarse.hi[k], "left")) \
                if self.schema.attributes[f].kind != CATEGORICAL else -1
            split = node_split(stats.counts[k], stats.vmin[k], stats.vmax[k], self.offsets, self.schema, f,
                               interval_slot, (stats.total[k], stats.below[k], stats.above[k], stats.below_max[k],
                                               stats.above_min[k]),
                               X[:, f], y, crit, self.params.min_samples_leaf, self.params.max_exhaustive,
                               lambda marks: self._bucket_rows(k, extras, marks, stats.counts[k], report))
            if isinstance(split, str) or not self._consistent(k, split, X):
                report.failures.append((k, split if isinstance(split, str) else "the exact split routes "
                                        "differently from the coarse criterion"))
                self._subtree(k, node, extras, n_total, report, failed=True)
                continue
            report.verified += 1
            extras.pop(k, None)  # its routed rows are in ``held``, and go on down from here
            child_imp, keep = split_outcome(node.impurity, split.child_value, crit, float(n_total),
                                            self.params.min_impurity_decrease)
            if not keep:
                continue
            node.feature, node.threshold, node.missing_branch = split.feature, split.threshold, split.missing_branch
            node.cat_branch = split.cat_branch
            if held is not None:  # the interval rows go down the exact split, and on through the coarse tree
                start = self.coarse.first_child[k] + self._branch(split, X)
                stop, _ = route_rows(self.coarse, self.schema, self.offsets, stats, X, y, start)
                for j in np.unique(stop).tolist():
                    extras.setdefault(j, []).append(held.filter(pa.array(stop == j)))
            held = X = y = None  # routed on: not held while the children's subtrees grow
            for b in range(2):
                c = int(self.coarse.first_child[k]) + b
                value = split.child_value[b]
                child = Node(value.copy(), int(value.sum()), float(child_imp[b]))
                node.children.append(child)
                if self._pre_leaf(child, int(self.coarse.depth[c]), max_depth, min_weight_leaf):
                    continue
                if self.coarse.feature[c] >= 0:
                    queue.append((c, child))
                else:
                    self._subtree(c, child, extras, n_total, report, failed=False)
        return root, report

    def held_rows_room(self) -> int:
        """Interval rows a coarse node may hold in memory to be verified: their table (8 bytes a column)
        and the two float64 matrices the check routes (the encoding, and ``route_rows``' row-major copy) in
        half the budget.  A node holding more (at 100M Agrawal F1 rows, one held 24.6M) is finished as a
        failed one is, by RainForest from the work folder within the budget: the same exact subtree."""
        return self.budget // 2 // (8 * len(self.columns) + 16 * len(self.schema.attributes))

    def gathered_values_room(self) -> int:
        """(Attribute, row) values of marked buckets a check may read into memory: each keeps its bucket,
        value and class (24 bytes), sorted and counted by :func:`rainforest.boat.verify.refine_buckets`
        (copies of them): 64 bytes a value in half the budget.  A whole held row costs more (every column,
        and the matrices it is routed with), so a check may read more values than a node may hold rows."""
        return self.budget // 2 // GATHERED_VALUE_BYTES

    def _bucket_rows(self, k: int, extras: dict, marks: dict, block: np.ndarray,
                     report: FinishReport) -> dict | str:
        """The rows of node ``k``'s family (its subtree's files, and the rows routed to them) in the buckets
        ``marks`` flags per numeric attribute: ``{attribute: (bucket, value, class)}`` (see
        :func:`rainforest.boat.verify.node_split`).  One read of the family's columns of those attributes."""
        n_rows = sum(int(block[self.offsets[a]:self.offsets[a] + len(m)][m].sum()) for a, m in marks.items())
        room = self.gathered_values_room()
        if n_rows > room:
            return f"the buckets no bound rules out hold {n_rows:,} values, more than half the memory budget holds " \
                   f"({room:,}); RainForest grows its subtree instead"
        attrs = sorted(marks)
        sub = Schema([self.schema.attributes[a] for a in attrs], self.schema.label)
        names = [a.name for a in sub.attributes] + [sub.label.name]
        members = self.coarse.subtree(k)
        parts = {a: [] for a in attrs}
        spans = {}  # the values the marked buckets span: most rows are ruled out by two comparisons
        for a in attrs:
            edges, marked = np.append(self.coarse.edges[k, a], np.inf), np.flatnonzero(marks[a])
            spans[a] = (edges[marked[0] - 1] if marked[0] > 0 else -np.inf, edges[marked[-1]])
        paths = [p for j in members for p in self.files.files(j)]
        family = FamilySource(parts=([ParquetSource(paths, partitioning=None)] if paths else []) +
                              [TableSource(table=t) for j in members for t in extras.get(j, []) if t.num_rows],
                              name=f"the family of BOAT node {k}", report=report)
        for _, batch in family.scan(names, self.batch_size, prefetch=False):
            X = sub.encode(batch)
            y = sub.label.codes(batch.column(sub.label.name))
            for i, a in enumerate(attrs):
                x, edges = X[:, i], self.coarse.edges[k, a]
                low, high = spans[a]
                near = np.flatnonzero((x > low) & (x <= high))  # bucket s holds (edges[s - 1], edges[s]]
                bucket = np.searchsorted(edges, x[near], "left")
                keep = marks[a][bucket]
                parts[a].append((bucket[keep], x[near[keep]], y[near[keep]]))
        return {a: tuple(np.concatenate([p[i] for p in parts[a]]) if parts[a] else np.zeros(0) for i in range(3))
                for a in attrs}

    def _pre_leaf(self, node: Node, depth: int, max_depth, min_weight_leaf: float) -> bool:
        """:func:`rainforest.rules.pre_leaf` of a node of the tree being finished."""
        return bool(pre_leaf(depth, node.n, float(node.value.sum()), node.impurity, self.params, max_depth,
                             min_weight_leaf))

    def _held(self, k: int, extras: dict, report: FinishReport) -> pa.Table | None:
        """Node ``k``'s held rows: its files' and those routed to it."""
        parts = []
        own = self.files.read(k, self.columns)
        if own is not None:
            parts.append(own)
            report.work_reads += 1
            report.work_rows += own.num_rows
        parts.extend(extras.get(k, []))
        parts = [p for p in parts if p.num_rows]
        return pa.concat_tables(parts) if parts else None

    def _branch(self, split, X: np.ndarray) -> np.ndarray:
        table = None if split.slot_branch is None else split.slot_branch[:-1]  # its last slot: missing
        return split_branch(X[:, split.feature], split.threshold, split.missing_branch, table)

    def _consistent(self, k: int, split, X: np.ndarray) -> bool:
        """Whether the rows the coarse criterion routed went where the exact split sends them:
        for a numeric split, the threshold lies between the values left and right of the interval
        (always, by construction); for a categorical one, every category routed agrees."""
        if split.slot_branch is None:
            return True
        f = split.feature
        n_cat = len(self.schema.attributes[f].categories)
        route = self.coarse.route[self.coarse.route_offset[k]:self.coarse.route_offset[k] + n_cat + 2]
        coarse_slots = np.concatenate([route[:n_cat], route[n_cat + 1:]])  # categories, then missing
        routed = coarse_slots >= 0
        return bool(np.all(split.slot_branch[routed] == coarse_slots[routed]))

    def _subtree(self, k: int, into: Node, extras: dict, n_total: int, report: FinishReport, failed: bool) -> Node:
        """RainForest's subtree of coarse node ``k`` over its family (cached by the family's content),
        grafted into the tree's node ``into``; returns it."""
        members = self.coarse.subtree(k)
        # the family's routed rows are consumed here: not held while later subtrees grow
        tables = [t for j in members for t in extras.pop(j, []) if t.num_rows]
        digest = hashlib.sha1()
        for t in tables:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, t.schema) as w:
                w.write_table(t)
            digest.update(sink.getvalue())  # the buffer itself: no copy
        signature = (tuple((j, int(self.files.version[j])) for j in members), digest.hexdigest())
        hit = self.cache.get(k)
        if hit is not None and hit[0] == signature:
            _graft(into, hit[1])
            return hit[1]
        paths = [p for j in members for p in self.files.files(j)]
        parts = ([ParquetSource(paths, partitioning=None)] if paths else []) + \
            ([TableSource(table=pa.concat_tables(tables))] if tables else [])
        n_rows = int(sum(self.files.n_rows[j] for j in members) + sum(t.num_rows for t in tables))
        family = FamilySource(parts=parts, name=f"the family of BOAT node {k}", report=report)
        if n_rows >= GIVE_BACK_ROWS:  # what verification and earlier subtrees freed: not resident under this growth
            give_back_free_memory()
        tree, _ = grow_tree(family, self.schema, self.params, self.budget, self.batch_size, None, n_rows=n_rows,
                            root_depth=int(self.coarse.depth[k]), total_weight=float(n_total))
        node = tree_nodes(tree)
        self.cache[k] = (signature, node)
        if failed:
            report.rebuilt += 1
        else:
            report.regrown += 1
        _graft(into, node)
        report.grown.append((k, into))
        report.grown_rows += n_rows
        return node


def _graft(node: Node, sub: Node) -> None:
    """``node`` takes the split and children of ``sub``, the subtree RainForest grew in its place."""
    node.feature, node.threshold, node.missing_branch = sub.feature, sub.threshold, sub.missing_branch
    node.cat_branch, node.children = sub.cat_branch, sub.children
