"""Bootstrap trees on the in-memory sample, and the coarse splitting criteria they agree on.

The coarse tree is grown top down from ``b`` bootstrap trees (built with rainforest's own exact
split search on bootstrap samples of the sample).  A node is expanded only while every bootstrap
tree splits it on the same attribute: for a numeric attribute the coarse criterion is the
interval ``[min, max]`` of the bootstrap thresholds, for a categorical one the branch of every
category the sample holds at the node (all trees must agree on each).  A node where they
disagree (on a categorical split: on the branch of most categories; a category they disagree
on is held at the node like an interval's rows), where the sample says its rows fit in memory (``max_family_rows``), or at
``max_depth`` is a *frontier* node: RainForest finishes it over its family.

Below the memory bound a node may still be expanded, down to ``stable_rows``, where its split is
*stable*: the trees agree and hold few of the node's sample rows (:data:`STABLE_HELD_SHARE`).  Each
update regrows the families it touches, and a stable coarse node is verified by its bounds instead;
an unstable one (the trees' thresholds spread over the node) would hold most of its rows and fail.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from rainforest.grow import GrowParams, grow_tree
from rainforest.profile import ProfileTask
from rainforest.schema import CATEGORICAL, Schema, slot_lookups
from rainforest.tree import Tree
from rainforest.storage import TableSource

# The default families (``BoatClassifier(max_family_rows=None)``): below the memory bound a node whose
# split is stable goes on being expanded while its rows exceed a fifth of the data and 2M rows (at 10M
# Agrawal F1 rows 1 % updates cost 0.15-0.18 of a fit instead of 0.31-0.37; deeper coarse levels
# lengthen the cleanup pass, so families stay large on smaller data; docs/boat.md).
STABLE_MIN_ROWS = 2_000_000
STABLE_DATA_SHARE = 5  # stable families of at least 1/5 of the rows
STABLE_HELD_SHARE = 0.02  # a stable split holds at most this share of the node's sample rows


def stable_family_rows(n_rows: int, max_family_rows: int) -> int | None:
    """Rows down to which stable splits are expanded below ``max_family_rows`` (None: not below it)."""
    floor = max(STABLE_MIN_ROWS, n_rows // STABLE_DATA_SHARE)
    return floor if floor < max_family_rows else None


@dataclass
class CoarseTree:
    """Coarse nodes in breadth-first order (node 0 is the root).

    ``feature[k]`` is -1 at frontier nodes.  Numeric splits hold the rows whose value lies in
    ``[lo[k], hi[k]]`` (and the missing ones) at the node; categorical splits route code ``c``
    by ``route[route_offset[k] + c]`` (codes ``0..V-1``, then ``V`` unknown and ``V + 1``
    missing), where -1 holds the row.  ``edges[k, a]`` are the bucket edges of numeric attribute
    ``a`` at node ``k`` (a value's bucket is ``searchsorted(edges, x, "left")``; unused edges are +inf).
    """

    feature: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    route_offset: np.ndarray
    route: np.ndarray
    first_child: np.ndarray
    depth: np.ndarray
    edges: np.ndarray
    parent: np.ndarray = field(default=None)

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @cached_property
    def bucket_lookup(self) -> tuple:
        """The bucket edges as :func:`rainforest.schema.slot_of` searches them, for the cleanup kernel:
        ``(flat, offsets, lo, scale, tables, table_offsets)``, where ``flat[offsets[j]:offsets[j + 1]]``
        are the finite edges of node ``k`` and attribute ``a`` (``j = k * n_attributes + a``) and the
        rest their lookup grids (:func:`rainforest.schema.slot_lookups`).  A value's bucket is then
        found among the few edges of its grid cell: a binary search over the 255 edges waited on eight
        loads one after another, three quarters of the cleanup pass's time.  Built once, at the first
        pass (the coarse tree does not change)."""
        n_nodes, n_attr, _ = self.edges.shape
        finite = np.isfinite(self.edges)  # unused edges are +inf, after the used ones
        offsets = np.zeros(n_nodes * n_attr + 1, np.int64)
        np.cumsum(finite.sum(axis=2).ravel(), out=offsets[1:])
        flat = np.ascontiguousarray(self.edges[finite])  # row-major: node by node, attribute by attribute
        lo, scale, tables, table_offsets = slot_lookups(flat, offsets)
        # a grid cell holds an edge's index, at most n_buckets - 1: a byte at the default 256 buckets,
        # where int64 grids outgrow the core's cache (2M F7 rows, 23 coarse nodes: 0.66 s as int64, 0.60 s)
        return flat, offsets, lo, scale, tables.astype(np.min_scalar_type(self.edges.shape[2])), table_offsets

    def subtree(self, k: int) -> list[int]:
        """Node ``k`` and its coarse descendants."""
        out, stack = [], [k]
        while stack:
            j = stack.pop()
            out.append(j)
            if self.first_child[j] >= 0:
                stack.extend((self.first_child[j], self.first_child[j] + 1))
        return sorted(out)


def sample_schema(sample: pa.Table, kinds: dict, target: str, where: str) -> Schema:
    """The exact schema of the sample alone (what the bootstrap trees are grown with)."""
    task = ProfileTask(kinds, target, None, where, exact=True, max_bins=0)
    return task.schema(TableSource(table=sample).run_pass(task, list(kinds) + [target]))


def bootstrap_trees(sample: pa.Table, schema: Schema, params: GrowParams, n_bootstrap: int, budget: int,
                    random_state: int) -> list[Tree]:
    """``n_bootstrap`` trees grown in memory on bootstrap samples (rows drawn with replacement)."""
    rng = np.random.default_rng(random_state)
    n = sample.num_rows
    trees = []
    for _ in range(n_bootstrap):
        idx = np.sort(rng.integers(0, n, n))
        tree, _ = grow_tree(TableSource(table=sample.take(pa.array(idx))), schema, params, budget, 65536, None,
                            n_rows=n)
        trees.append(tree)
    return trees


def build_coarse_tree(trees: list[Tree], boot_schema: Schema, schema: Schema, X: np.ndarray, n_total: int,
                      max_family_rows: int, max_depth, n_buckets: int, stable_rows: int | None = None) -> CoarseTree:
    """The coarse tree the bootstrap ``trees`` agree on, with bucket edges from the sample ``X``
    (encoded with the full data's ``schema``) routed down it; ``n_total`` rows in the data.  Nodes of
    at most ``max_family_rows`` rows are expanded only down to ``stable_rows`` (None: not at all) and
    only where their split is stable (:func:`held_share` at most :data:`STABLE_HELD_SHARE`)."""
    n_attr = len(schema.attributes)
    scale = n_total / max(len(X), 1)
    cat_map = _category_maps(boot_schema, schema)
    nodes = []  # (boot node per tree, sample rows, depth, parent)
    queue = [([0] * len(trees), np.arange(len(X)), 0, -1)]
    smallest = max_family_rows if stable_rows is None else min(stable_rows, max_family_rows)
    feature, lo, hi, routes, first_child, depth, edges, parent = [], [], [], [], [], [], [], []
    while queue:
        boots, rows, d, par = queue.pop(0)
        k = len(feature)
        nodes.append(k)
        parent.append(par)
        depth.append(d)
        split = None
        est = len(rows) * scale
        Xs = X[rows]  # the node's sample rows
        if (max_depth is None or d < max_depth) and est > smallest and trees:
            split = _agreed_split(trees, boots, schema, cat_map, Xs)
            if split is not None and est <= max_family_rows and held_share(split, Xs) > STABLE_HELD_SHARE:
                split = None  # fits in memory and not stable: a family
        node_edges = np.full((n_attr, n_buckets - 1), np.inf)
        if split is None:
            feature.append(-1)
            lo.append(np.nan)
            hi.append(np.nan)
            routes.append(None)
            first_child.append(-1)
            edges.append(node_edges)
            continue
        f, interval, route, goes_left = split
        feature.append(f)
        lo.append(interval[0])
        hi.append(interval[1])
        routes.append(route)
        for a, attr in enumerate(schema.attributes):
            if attr.kind != CATEGORICAL:
                node_edges[a] = bucket_edges(Xs[:, a], n_buckets, interval if a == f else None)
        edges.append(node_edges)
        first_child.append(-2)  # set below, once the children's numbers are known
        left = goes_left(Xs)
        for b, part in enumerate((rows[left], rows[~left])):
            queue.append(([int(t.first_child[i]) + b for t, i in zip(trees, boots)], part, d + 1, k))
    # breadth-first numbering: the children of the i-th split are 2 consecutive nodes after the splits before it
    fc = np.full(len(feature), -1, np.int32)
    nxt = 1
    for k in range(len(feature)):
        if first_child[k] == -2:
            fc[k] = nxt
            nxt += 2
    route_offset = np.full(len(feature), -1, np.int64)
    flat = []
    for k, r in enumerate(routes):
        if r is not None:
            route_offset[k] = sum(len(x) for x in flat)
            flat.append(r)
    return CoarseTree(np.asarray(feature, np.int32), np.asarray(lo, np.float64), np.asarray(hi, np.float64),
                      route_offset, np.concatenate(flat).astype(np.int32) if flat else np.zeros(0, np.int32),
                      fc, np.asarray(depth, np.int32), np.asarray(edges, np.float64).reshape(len(feature), n_attr, -1),
                      np.asarray(parent, np.int32))


def _category_maps(boot_schema: Schema, schema: Schema) -> list:
    """Per attribute, the bootstrap schema's code of each category of the full schema (-1: absent)."""
    out = []
    for ba, a in zip(boot_schema.attributes, schema.attributes):
        if a.kind != CATEGORICAL:
            out.append(None)
            continue
        code = {v: i for i, v in enumerate(ba.categories)}
        out.append(np.array([code.get(v, -1) for v in a.categories], np.int64))
    return out


def _agreed_split(trees, boots, schema, cat_map, Xs):
    """``(feature, (lo, hi), route, goes_left)`` when every tree splits its node alike, else None."""
    if any(t.first_child[i] < 0 or t.n_children[i] != 2 for t, i in zip(trees, boots)):
        return None
    feats = {int(t.feature[i]) for t, i in zip(trees, boots)}
    if len(feats) != 1:
        return None
    f = feats.pop()
    x = Xs[:, f]
    missing = np.isnan(x)
    if schema.attributes[f].kind != CATEGORICAL:
        thr = np.array([t.threshold[i] for t, i in zip(trees, boots)])
        if not np.all(np.isfinite(thr)):  # "missing vs the rest" splits cannot hold an interval
            return None
        mid = float(np.median(thr))
        miss_left = np.mean([t.missing_branch[i] == 0 for t, i in zip(trees, boots)]) >= 0.5
        return f, (float(thr.min()), float(thr.max())), None, \
            lambda Z: np.where(np.isnan(Z[:, f]), miss_left, Z[:, f] <= mid)
    n_cat = len(schema.attributes[f].categories)
    present = np.zeros(n_cat + 2, bool)
    codes = x[~missing].astype(np.int64)
    present[np.unique(codes)] = True
    present[n_cat + 1] = missing.any()
    route = np.full(n_cat + 2, -1, np.int32)
    cmap = cat_map[f]
    for c in np.flatnonzero(present):
        branches = set()
        for t, i in zip(trees, boots):
            off = t.cat_offset[i]
            if c == n_cat + 1:
                branches.add(int(t.missing_branch[i]))
            else:
                bc = cmap[c]
                branches.add(int(t.cat_branch[off + (bc if bc >= 0 else len(t.categories[f]))]))
        # a category the trees disagree on is held at the node like an interval's rows: the
        # exact subset routes it (a coarse criterion of the categories they agree on)
        route[c] = branches.pop() if len(branches) == 1 else -1
    if len(set(route[route >= 0].tolist())) < 2:
        return None
    return f, (np.nan, np.nan), route, \
        lambda Z: _routed(route, Z[:, f]) == 0


def held_share(split, Xs: np.ndarray) -> float:
    """The share of the node's sample rows ``Xs`` that the coarse ``split`` (of :func:`_agreed_split`)
    holds: missing or in the interval, or of a category the trees disagree on."""
    f, (lo, hi), route, _ = split
    x = Xs[:, f]
    if len(x) == 0:
        return 1.0
    if route is None:
        held = np.isnan(x) | ((x >= lo) & (x <= hi))
    else:
        held = _routed(route, x) < 0
    return float(held.mean())


def _routed(route: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Each category code of ``x``'s branch by a categorical coarse ``route`` (the last slot: missing; -1: held)."""
    return route[np.where(np.isnan(x), len(route) - 1, np.nan_to_num(x, nan=0)).astype(np.int64)]


def bucket_edges(x: np.ndarray, n_buckets: int, interval) -> np.ndarray:
    """At most ``n_buckets - 1`` edges: the sample's distinct values when few, else its quantiles.
    For the node's own split attribute, the edges skip the interval and bound it exactly (an edge
    just below ``lo`` and one at ``hi``), so no bucket mixes held rows with the others."""
    x = x[~np.isnan(x)]
    room = n_buckets - 1
    extra = []
    if interval is not None:
        lo, hi = interval
        x = x[(x < lo) | (x > hi)]
        extra = [np.nextafter(lo, -np.inf), hi]
        room -= 2
    u = np.unique(x)
    if len(u) > room:
        u = np.unique(np.quantile(x, np.arange(1, room + 1) / (room + 1), method="inverted_cdf"))
    e = np.unique(np.concatenate([u, extra]))
    out = np.full(n_buckets - 1, np.inf)
    out[:len(e)] = e
    return out
