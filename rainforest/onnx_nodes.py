"""The node lists of an ``ai.onnx.ml`` tree ensemble (:mod:`rainforest.onnx`): each tree's splits as
ensemble nodes, and its leaves' weights (class distributions, or a regression tree's mean)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .tree import Tree


# -- the tree ensemble's node lists -----------------------------------------------------------
@dataclass
class EnsembleNodes:
    """The attribute lists of a ``TreeEnsembleClassifier`` or ``TreeEnsembleRegressor``, filled tree by tree;
    ``class_*`` are a regressor's ``target_*``."""

    treeids: list = field(default_factory=list)
    nodeids: list = field(default_factory=list)
    featureids: list = field(default_factory=list)
    modes: list = field(default_factory=list)
    values: list = field(default_factory=list)
    true: list = field(default_factory=list)
    false: list = field(default_factory=list)
    missing_true: list = field(default_factory=list)
    class_treeids: list = field(default_factory=list)
    class_nodeids: list = field(default_factory=list)
    class_ids: list = field(default_factory=list)
    class_weights: list = field(default_factory=list)

    def add(self, t, node, feature, mode, value, true, false, missing_true):
        self.treeids.append(t)
        self.nodeids.append(node)
        self.featureids.append(feature)
        self.modes.append(mode)
        self.values.append(value)
        self.true.append(true)
        self.false.append(false)
        self.missing_true.append(int(missing_true))


def _category_runs(tree: Tree, i: int) -> tuple[list, int]:
    """Categorical split ``i`` as runs ``[(branch, codes)]``, one per branch other than the branch of
    unseen categories (the *default*, where codes in no run go), and the default branch."""
    cats = tree.categories[tree.feature[i]]
    off = int(tree.cat_offset[i])
    branch = tree.cat_branch[off:off + len(cats) + 1]
    default = int(branch[len(cats)])
    runs = [(b, [c for c in range(len(cats)) if branch[c] == b]) for b in range(int(tree.n_children[i]))]
    return [(b, codes) for b, codes in runs if b != default and codes], default


def _node_sizes(tree: Tree) -> np.ndarray:
    """Ensemble nodes per tree node: 1 for leaves and numeric splits; for a categorical split, one per
    code in its runs and one separator after each run (at least one)."""
    sizes = np.ones(tree.node_count, np.int64)
    for i in np.flatnonzero((tree.first_child >= 0) & (tree.cat_offset >= 0)):
        runs, _ = _category_runs(tree, int(i))
        sizes[i] = sum(len(codes) + 1 for _, codes in runs) or 1  # runs, separators, the end node
    return sizes


def add_tree(nodes: EnsembleNodes, t: int, tree: Tree, column_of, weight: float, all_classes: bool) -> None:
    """Tree ``t``'s nodes and leaf weights (its class distribution, or a regression tree's mean, times
    ``weight``); ``column_of(f)``: the ensemble column of the tree's feature ``f``."""
    start = np.concatenate([[0], np.cumsum(_node_sizes(tree))])
    proba = tree.value[:, :1] if tree.regression else tree.leaf_proba()
    for i in range(tree.node_count):
        at = int(start[i])
        first = int(tree.first_child[i])
        if first < 0:
            nodes.add(t, at, 0, "LEAF", 0.0, 0, 0, False)
            for k in range(proba.shape[1]):
                if all_classes or proba[i, k] != 0:  # absent classes score 0
                    nodes.class_treeids.append(t)
                    nodes.class_nodeids.append(at)
                    nodes.class_ids.append(k)
                    nodes.class_weights.append(float(proba[i, k]) * weight)
            continue
        f = column_of(int(tree.feature[i]))
        child = lambda b: int(start[first + b])  # noqa: E731
        if tree.cat_offset[i] < 0:
            nodes.add(t, at, f, "BRANCH_LEQ", float(tree.threshold[i]), child(0), child(1),
                      tree.missing_branch[i] == 0)
            continue
        # Each run is BRANCH_EQ nodes on the code whose true edges share the branch's subtree (the
        # nodes of the missing values' branch also take NaN); an "x <= +inf" node follows each run,
        # both edges to what comes next: the next run, or after the last one the default branch
        # (and, when the missing values' branch has no run, false, i.e. NaN, to it). onnxruntime
        # lays out a node's false child right after it, so a subtree may have one false parent and
        # is shared through true edges only; and it fuses EQ nodes linked by false edges into one
        # set test, so runs of different branches are never adjacent.
        runs, default = _category_runs(tree, i)
        missing = int(tree.missing_branch[i])
        pos = at
        for r, (b, codes) in enumerate(runs):
            for c in codes:
                nodes.add(t, pos, f, "BRANCH_EQ", float(c), child(b), pos + 1, b == missing)
                pos += 1
            if r + 1 < len(runs):
                nodes.add(t, pos, f, "BRANCH_LEQ", math.inf, pos + 1, pos + 1, False)
                pos += 1
        nan_to = default if missing == default or any(b == missing for b, _ in runs) else missing
        nodes.add(t, pos, f, "BRANCH_LEQ", math.inf, child(default), child(nan_to), False)
