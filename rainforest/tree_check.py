"""The tree document (its format, version and node arrays), and its check: trees read from model
files are untrusted, so a tree document is checked whole before use.

The prediction kernels trust a tree's arrays: a child index past the last node is a read out of
bounds, a child that points back to its parent a loop that never ends. :func:`check_tree` checks
types, every index in range, children numbered after their parents (so no cycle can exist),
array lengths that agree and known kinds and versions; what is wrong raises one
:class:`~rainforest.errors.ModelError` naming the file and the field, e.g.
``tree.nodes.first_child[3]``. ``Tree.from_dict`` calls it; the learners' documents are checked
by :mod:`rainforest.model_check`, which uses it for every tree they hold.
"""
from __future__ import annotations

import numpy as np

from .model_fields import (MAX_COUNT, At, check_labels, check_list, check_str, check_version, float_array, int_array,
                           matrix)
from .schema import CATEGORICAL, NUMERIC

FORMAT = "rainforest.tree"
VERSION = 1
KIND_NAMES = {NUMERIC: "numeric", CATEGORICAL: "categorical"}
NODE_ARRAYS = {"feature": np.int32, "threshold": np.float64, "first_child": np.int32, "n_children": np.int32,
                "missing_branch": np.int32, "cat_offset": np.int32, "n_node_samples": np.int64,
                "weighted_n_node_samples": np.float64, "impurity": np.float64}


def node_depths(first_child: np.ndarray, n_children: np.ndarray) -> np.ndarray:
    """Depth of each node (the root's is 0), level by level; nodes no walk from the root reaches
    (only in a corrupt tree) keep -1."""
    n = len(first_child)
    depth = np.full(n, -1, np.int32)
    level = np.zeros(1, np.int64)
    for d in range(n):  # a tree has at most n levels; a cycle cannot keep this going
        if not len(level):
            break
        depth[level] = d
        inner = level[first_child[level] >= 0]
        lengths = n_children[inner].astype(np.int64)
        ends = np.cumsum(lengths)
        kids = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - lengths, lengths) \
            + np.repeat(first_child[inner].astype(np.int64), lengths)
        level = kids[(kids >= 0) & (kids < n)]
        level = level[depth[level] < 0]
    return depth

MAX_NODES = 2**31 - 1  # node indices are int32


# -- tree ----------------------------------------------------------------------------------------
def check_tree(d, at: At) -> dict:
    """Check a tree document (``Tree.to_dict``); return its node arrays, parsed, and its depth.

    Returns
    -------
    dict
        The node arrays by name (int64 / float64), ``value`` of shape (nodes, classes), and
        ``depth`` of each node.
    """
    check_version(at, d, FORMAT, VERSION, "tree")
    check_str(at / "criterion", at.get(d, "criterion"))
    check_str(at / "target", at.get(d, "target"))
    regression = d.get("task", "classification") if isinstance(d, dict) else "classification"
    if regression not in ("classification", "regression"):
        (at / "task").fail(f"unknown task {regression!r}; expected 'classification' or 'regression'")
    regression = regression == "regression"
    # a regressor's tree has no classes: one value a node, its mean target
    classes = check_labels(at / "classes", at.get(d, "classes"), least=0 if regression else 2)
    if regression and classes:
        (at / "classes").fail("a regression tree has no classes (expected [])")
    features = check_list(at / "features", at.get(d, "features"), least=1)
    n_categories = []
    for k, f in enumerate(features):
        fat = at / "features" / k
        check_str(fat / "name", fat.get(f, "name"))
        kind = fat.get(f, "kind")
        if kind not in KIND_NAMES.values():
            (fat / "kind").fail(f"unknown kind {kind!r}; expected one of {sorted(KIND_NAMES.values())}")
        cats = fat.get(f, "categories")
        if kind == "categorical":
            n_categories.append(len(check_labels(fat / "categories", cats, least=0)))
        elif cats is not None:
            (fat / "categories").fail("a numeric feature has no categories (expected null)")
        else:
            n_categories.append(-1)
    names = [f["name"] for f in features]
    if len(set(names)) != len(names):
        (at / "features").fail("names a feature twice")

    nodes = at.get(d, "nodes")
    nat = at / "nodes"
    n = len(check_list(nat / "feature", nat.get(nodes, "feature"), least=1))
    if n > MAX_NODES:
        (nat / "feature").fail(f"{n} nodes is more than {MAX_NODES}")
    out = {}
    for key, dtype in NODE_ARRAYS.items():
        if key == "threshold":
            out[key] = float_array(nat / key, nat.get(nodes, key), n, special=True)
        elif np.dtype(dtype).kind == "f":
            out[key] = float_array(nat / key, nat.get(nodes, key), n, least=0 if key != "impurity" else None,
                                   most=MAX_COUNT)
        else:
            out[key] = int_array(nat / key, nat.get(nodes, key), n, least=-2 if key == "feature" else -1,
                                 most=None if key == "n_node_samples" else MAX_NODES)
    out["value"] = matrix(nat / "value", nat.get(nodes, "value"), n, 1 if regression else len(classes),
                          signed=regression)
    cat_branch = out["cat_branch"] = int_array(nat / "cat_branch", nat.get(nodes, "cat_branch"), least=0,
                                               most=MAX_NODES)
    _check_structure(nat, out, np.asarray(n_categories, np.int64), len(cat_branch))
    out["depth"] = node_depths(out["first_child"], out["n_children"])
    return out


def _check_structure(at: At, a: dict, n_categories: np.ndarray, n_cat_branch: int) -> None:
    """Children after their parents, each node but the root the child of exactly one node, every
    index (feature, child, branch, category offset) in range."""
    n = len(a["feature"])
    first, count = a["first_child"], a["n_children"]
    inner = np.flatnonzero(first != -1)
    fc, nc = first[inner], count[inner]

    def fail_at(key, mask, problem):
        k = int(inner[np.argmax(mask)])
        (at / key / k).fail(problem(k))

    for key, mask, problem in [
        ("first_child", fc <= inner, lambda k: f"{first[k]} does not come after its parent {k}: a tree numbers "
                                               "children after their parents"),
        ("n_children", nc < 2, lambda k: f"a split node has {count[k]} children, at least 2 expected"),
        ("first_child", fc + nc > n, lambda k: f"children {first[k]} to {first[k] + count[k] - 1} run past the last "
                                               f"node {n - 1}"),
    ]:
        if mask.any():
            fail_at(key, mask, problem)
    kids = _ranges(fc, nc)
    parents = np.bincount(kids, minlength=n) if len(kids) else np.zeros(n, np.int64)
    if parents[0] or (parents[1:] != 1).any():
        k = int(np.argmax(parents != np.r_[0, np.ones(n - 1, np.int64)]))
        (at / "first_child").fail(f"node {k} is the child of {parents[k]} nodes; every node but the root must be "
                                  "the child of exactly one")
    f = a["feature"][inner]
    if ((f < 0) | (f >= len(n_categories))).any():
        fail_at("feature", (f < 0) | (f >= len(n_categories)),
                lambda k: f"{a['feature'][k]} is not a feature index (0 to {len(n_categories) - 1})")
    miss = a["missing_branch"][inner]
    if ((miss < 0) | (miss >= nc)).any():
        fail_at("missing_branch", (miss < 0) | (miss >= nc),
                lambda k: f"{a['missing_branch'][k]} is not a branch of a node with {count[k]} children")
    cats = n_categories[f]
    off = a["cat_offset"][inner]
    numeric = cats < 0
    for key, mask, problem in [
        ("cat_offset", numeric & (off != -1), lambda k: "a split on a numeric feature has no category offset "
                                                         "(expected -1)"),
        ("n_children", numeric & (nc != 2), lambda k: f"a split on a numeric feature has {count[k]} children, not 2"),
        ("threshold", numeric & np.isnan(a["threshold"][inner]), lambda k: "a numeric split has no threshold"),
        ("cat_offset", ~numeric & ((off < 0) | (off + cats + 1 > n_cat_branch)),
         lambda k: f"{a['cat_offset'][k]}: the node's {n_categories[a['feature'][k]] + 1} branches do not lie in "
                   f"cat_branch (length {n_cat_branch})"),
    ]:
        if mask.any():
            fail_at(key, mask, problem)
    cat_nodes = ~numeric
    where = _ranges(off[cat_nodes], cats[cat_nodes] + 1)
    limit = np.repeat(nc[cat_nodes], cats[cat_nodes] + 1)
    bad = a["cat_branch"][where] >= limit
    if bad.any():
        k = int(where[np.argmax(bad)])
        (at / "cat_branch" / k).fail(f"{a['cat_branch'][k]} is not a branch of its node")


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``range(s, s + l)`` for each start and length."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total) - np.repeat(ends - lengths, lengths) + np.repeat(starts, lengths)


def check_trees_agree(at: At, trees: list, classes: list, n_shared: int) -> None:
    """Trees of one ensemble: the same classes and the same first ``n_shared`` features (which one
    encoder reads for all of them)."""
    shared = trees[0]["features"][:n_shared]
    for t, d in enumerate(trees):
        if d["classes"] != classes:
            (at / t / "classes").fail(f"{d['classes']!r}"[:100] + f" differ from the model's classes {classes!r}"[:100])
        if d["features"][:n_shared] != shared:
            (at / t / "features").fail("differ from the other trees' features")
