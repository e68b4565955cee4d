"""Oversized families made coarse: an update verifies their splits instead of regrowing them.

A coarse node whose interval holds more rows than memory does (``Finisher.held_rows_room``) is grown
by RainForest from its family, and would be again at every update: at 100M Agrawal F1 rows one node
inside the 40-60 age band held 24.6M rows, and regrowing its 26.5M-row family was half of each
update.  Once that subtree is grown its splits are known, so those of at least :func:`refile_floor`
rows become coarse nodes whose interval is the exact threshold itself (zero width: a node holds only
the rows equal to its threshold, or missing; a categorical split routes each category and missing
value its rows have as the exact split does, and holds the others).  The family's rows are read once
and filed again under those nodes, counted as the cleanup pass counts them (each node's buckets from
the BOAT sample's rows that reach it), so the next update verifies each split with BOAT's own bounds
and regrows only the subtrees below them whose rows changed or whose check fails.  The tree itself
does not change: the coarse nodes only say where an update's work starts.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from rainforest.schema import CATEGORICAL, Schema
from rainforest.storage import ParquetSource

from .assemble import Node
from .cleanup import NodeFiles, NodeStats, route_rows
from .coarse import CoarseTree, bucket_edges

REFILE_MIN_ROWS = 1000  # a split of fewer rows stays in its family whatever the budget


def refile_floor(room: int) -> int:
    """The fewest rows a finished split needs to become a coarse node: more than a coarse node may hold
    in memory (``room``, :meth:`rainforest.boat.finish.Finisher.held_rows_room`), where a family's
    regrowth is among the costliest; below it, regrowing a family costs less than verifying its splits."""
    return max(REFILE_MIN_ROWS, room)


def split_branch(x: np.ndarray, threshold: float, missing_branch: int, cat_table) -> np.ndarray:
    """Each value's branch at an exact split: a numeric value left when at most ``threshold``; a category
    code by ``cat_table`` (categories, then unseen ones); a missing value to ``missing_branch``."""
    miss = np.isnan(x)
    if cat_table is None:
        branch = np.where(x <= threshold, 0, 1)
    else:
        table = np.asarray(cat_table, np.int64)
        branch = table[np.minimum(np.nan_to_num(x, nan=0).astype(np.int64), len(table) - 1)]
    return np.where(miss, missing_branch, branch).astype(np.int64)


def coarse_splits(root: Node, floor: int) -> list[Node]:
    """The splits of ``root``'s subtree that become coarse nodes, breadth first (``root`` first, when it
    qualifies): binary, of at least ``floor`` rows, numeric ones at a finite threshold, each one's parent
    among them."""
    out = []
    queue = [root]
    for node in queue:  # grows while walked
        if len(node.children) == 2 and node.n >= floor and (node.cat_branch is not None or
                                                             np.isfinite(node.threshold)):
            out.append(node)
            queue.extend(node.children)
    return out


def sample_rows(root: Node, X: np.ndarray, schema: Schema) -> dict:
    """``{id(node): indices of the sample rows X that reach it}`` over the whole finished tree."""
    out = {}
    stack = [(root, np.arange(len(X)))]
    while stack:
        node, rows = stack.pop()
        out[id(node)] = rows
        if node.children:
            branch = split_branch(X[rows, node.feature], node.threshold, node.missing_branch,
                                  node.cat_branch if schema.attributes[node.feature].kind == CATEGORICAL else None)
            stack.extend((child, rows[branch == b]) for b, child in enumerate(node.children))
    return out


def extend(coarse: CoarseTree, k: int, splits: list[Node], schema: Schema, X: np.ndarray, at: dict,
           n_buckets: int) -> tuple[CoarseTree, list[int]]:
    """The coarse tree with frontier (or failed) node ``k`` split as ``splits[0]`` and the other
    ``splits`` below it, their children numbered from ``coarse.n_nodes`` on, two by two; ``k``'s old
    coarse descendants are left unreachable.  ``X[at[id(node)]]`` are the sample rows at a node (its
    buckets).  Also the coarse nodes of the new subtree, ``k`` first, in breadth-first order."""
    ids = {id(splits[0]): k}
    feature, lo, hi = list(coarse.feature), list(coarse.lo), list(coarse.hi)
    route_offset, first_child = list(coarse.route_offset), list(coarse.first_child)
    depth, parent, edges = list(coarse.depth), list(coarse.parent), list(coarse.edges)
    route = [coarse.route]
    n_route = len(coarse.route)
    order = [k]
    n_attr = len(schema.attributes)
    for j in coarse.subtree(k)[1:]:  # k's old coarse descendants: no row reaches them now
        feature[j], first_child[j] = -1, -1
    for node in splits:  # breadth first: a split's children are numbered before any grandchild
        g = ids[id(node)]
        f = node.feature
        numeric = schema.attributes[f].kind != CATEGORICAL
        feature[g] = f
        lo[g] = hi[g] = node.threshold if numeric else np.nan
        if numeric:
            route_offset[g] = -1
        else:
            n_cat = len(schema.attributes[f].categories)
            table = np.full(n_cat + 2, -1, np.int32)  # categories, unseen (held: none are), missing
            table[:n_cat] = node.cat_branch[:n_cat]
            table[n_cat + 1] = node.missing_branch
            route_offset[g] = n_route
            route.append(table)
            n_route += len(table)
        xs = X[at.get(id(node), np.zeros(0, np.int64))]
        node_edges = np.full((n_attr, n_buckets - 1), np.inf)
        for a, attr in enumerate(schema.attributes):
            if attr.kind != CATEGORICAL:
                node_edges[a] = bucket_edges(xs[:, a], n_buckets, (node.threshold, node.threshold)
                                             if a == f else None)
        edges[g] = node_edges
        first_child[g] = len(feature)
        for child in node.children:
            ids[id(child)] = len(feature)
            order.append(len(feature))
            feature.append(-1)
            lo.append(np.nan)
            hi.append(np.nan)
            route_offset.append(-1)
            first_child.append(-1)
            depth.append(depth[g] + 1)
            parent.append(g)
            edges.append(np.full((n_attr, n_buckets - 1), np.inf))
    tree = CoarseTree(np.asarray(feature, np.int32), np.asarray(lo, np.float64), np.asarray(hi, np.float64),
                      np.asarray(route_offset, np.int64), np.concatenate(route).astype(np.int32),
                      np.asarray(first_child, np.int32), np.asarray(depth, np.int32), np.stack(edges),
                      np.asarray(parent, np.int32))
    return tree, order


def local_tree(coarse: CoarseTree, order: list[int]) -> CoarseTree:
    """The coarse nodes ``order`` (a subtree, its root first) numbered ``0 ..`` in that order."""
    pos = {g: i for i, g in enumerate(order)}
    idx = np.asarray(order, np.int64)
    fc = np.array([pos[int(coarse.first_child[g])] if coarse.first_child[g] >= 0 else -1 for g in order], np.int32)
    par = np.array([pos.get(int(coarse.parent[g]), -1) for g in order], np.int32)
    return CoarseTree(coarse.feature[idx], coarse.lo[idx], coarse.hi[idx], coarse.route_offset[idx], coarse.route,
                      fc, coarse.depth[idx], coarse.edges[idx], par)


def refile(files: NodeFiles, coarse: CoarseTree, order: list[int], members: list[int], schema: Schema,
           offsets: np.ndarray, columns: list, batch_size: int) -> NodeStats:
    """Read the rows filed under the old coarse nodes ``members`` and file them again down the new
    subtree ``order`` of ``coarse`` (its root ``order[0]`` among the members); returns the new nodes'
    statistics, in ``order``.  Both or neither: an error or an interrupt leaves the old files as they were."""
    paths = [p for j in members for p in files.files(j)]
    local = local_tree(coarse, order)
    stats = NodeStats.zeros(len(order), int(offsets[-1]), len(schema.label.classes))
    to_global = np.asarray(order, np.int64)
    files.add_nodes(coarse.n_nodes)
    files.empty(members)
    try:
        if paths:
            for _, batch in ParquetSource(paths, partitioning=None).scan(columns, batch_size, prefetch=False):
                X = schema.encode(batch)
                y = schema.label.codes(batch.column(schema.label.name))
                node, _ = route_rows(local, schema, offsets, stats, X, y, np.zeros(len(y), np.int64))
                files.write(pa.Table.from_batches([batch]), to_global[node])
        files.commit()
    except BaseException:
        files.abort()
        raise
    files.remove(paths)
    return stats


def hold_absent_categories(coarse: CoarseTree, order: list[int], stats: NodeStats, schema: Schema,
                           offsets: np.ndarray) -> None:
    """A categorical coarse node holds the categories none of its rows has, and missing values when none
    of its rows misses one (an update's rows of those are routed by the exact split, which may send them
    elsewhere than the table the tree was grown with)."""
    for i, g in enumerate(order):
        f = int(coarse.feature[g])
        if f < 0 or schema.attributes[f].kind != CATEGORICAL:
            continue
        n_cat = len(schema.attributes[f].categories)
        seen = stats.counts[i, offsets[f]:offsets[f] + n_cat + 1].sum(axis=1) > 0  # categories, then missing
        table = coarse.route[coarse.route_offset[g]:coarse.route_offset[g] + n_cat + 2]
        table[:n_cat][~seen[:n_cat]] = -1
        if not seen[n_cat]:
            table[n_cat + 1] = -1


def refile_oversized(report, root: Node, coarse: CoarseTree, stats: NodeStats, files: NodeFiles, finisher,
                     sample_X: np.ndarray, n_buckets: int, batch_size: int) -> Iterator[tuple]:
    """Refile each family the finish (its ``report``, the finished tree's ``root``) grew because its coarse
    node held more interval rows than memory does and whose subtree has splits past :func:`refile_floor`.
    Yields, once each family's files are committed, the coarse tree and the cleanup statistics with its
    new nodes and the rows filed (an error in a later family leaves the earlier ones done); the
    ``finisher`` works on the new tree, its cache rid of the refiled nodes."""
    schema, offsets = finisher.schema, finisher.offsets
    floor = refile_floor(finisher.held_rows_room())
    grown = [(k, splits) for k, node in report.grown if k in report.oversized
             for splits in [coarse_splits(node, floor)] if splits]
    at = sample_rows(root, sample_X, schema) if grown else None
    for k, splits in grown:
        members = coarse.subtree(k)
        coarse, order = extend(coarse, k, splits, schema, sample_X, at, n_buckets)
        part = refile(files, coarse, order, members, schema, offsets, finisher.columns, batch_size)
        hold_absent_categories(coarse, order, part, schema, offsets)
        stats = stats.with_nodes(coarse.n_nodes)
        left = [j for j in members if j != k]  # unreachable now
        stats.put(left, NodeStats.zeros(len(left), stats.counts.shape[1], stats.counts.shape[2]))
        stats.put(order, part)
        finisher.coarse = coarse
        for j in members:
            finisher.cache.pop(j, None)
        yield coarse, stats, int(part.total[0].sum())
