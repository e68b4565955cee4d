"""The tree being grown, as growable node lists, and the routing arrays of trees still growing.

:class:`Nodes` is the one node-array builder of every learner that grows trees level by level
(the tree, each tree of a forest): leaves are added, split in place, and the whole turned into
a :class:`rainforest.tree.Tree` at the end.  :func:`slot_routing` / :func:`joined_routing` give
the arrays :func:`rainforest.rows.step` routes encoded rows with while the trees grow.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .pruning import renumbered
from .rules import pre_leaf
from .schema import CATEGORICAL, Schema
from .tree import KIND_NAMES, Tree


@dataclass
class Nodes:
    """The tree being grown, as growable lists (one entry per node)."""

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
    regression: bool = False  # values are a regressor's (sum w, sum w y, sum w y**2), not class counts

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

    def split(self, node: int, attribute, a: int, br: np.ndarray, nb: int, left_slot: int, right_slot: int,
              inf_thr: bool, majority: int) -> int:
        """Make leaf ``node`` split on attribute ``a`` (``attribute``): ``br`` maps each slot of its
        AVC-set (missing last) to one of ``nb`` branches; a numeric split's threshold lies between
        ``left_slot`` and ``right_slot`` (``inf_thr``: only missing values go right); ``majority`` is
        the branch of categories unseen in training.  Returns the index its children will have:
        the caller adds them next, in branch order (:meth:`add_leaf`)."""
        m = attribute.n_slots
        self.feature[node] = a
        self.n_children[node] = nb
        self.missing_branch[node] = int(br[-1])  # the missing slot is last (also in a compact AVC-set)
        if attribute.kind == CATEGORICAL:
            self.branch_offset[node] = len(self.slot_branch)
            self.slot_branch.extend(int(b) for b in br)
            self.threshold[node] = np.nan
            self.cat_offset[node] = len(self.cat_branch)
            self.cat_branch.extend(int(b) for b in br[:m])
            self.cat_branch.append(majority)  # categories unseen in training
        elif inf_thr:
            self.threshold[node] = np.inf
            self.slot_cut[node] = m  # every present value goes to the first child
        else:  # between the last slot going left and the first going right: the same partition by value
            self.threshold[node] = attribute.threshold(int(left_slot), int(right_slot))
            self.slot_cut[node] = int(left_slot)
        self.first_child[node] = len(self.feature)
        return len(self.feature)

    def pre_leaf(self, i: int, params, max_depth, min_weight_leaf) -> bool:
        """:func:`rainforest.rules.pre_leaf` of node ``i``."""
        weight = float(self.value[i][0]) if self.regression else float(np.sum(self.value[i]))
        return pre_leaf(self.depth[i], self.n_node_samples[i], weight, self.impurity[i], params, max_depth,
                        min_weight_leaf)

    def slot_routing(self, n_slots: np.ndarray) -> tuple:
        """The arrays :func:`rainforest.rows.descend` routes encoded rows with."""
        return (np.asarray(self.feature, np.int32), np.asarray(self.first_child, np.int32),
                np.asarray(self.slot_branch, np.int32), np.asarray(self.branch_offset, np.int32),
                np.asarray(self.slot_cut, np.int64), np.asarray(self.missing_branch, np.int32), n_slots)

    def to_tree(self, schema: Schema, criterion: str) -> Tree:
        """The model, numbered breadth first (children in branch order) whatever order growth split a
        level's nodes in: :func:`rainforest.pruning.renumbered` (the numbering :func:`prune` gives).

        A regressor's nodes get their mean target as value (one column, as scikit-learn's) and their
        ``sum w`` as weight."""
        value = np.asarray(self.value, np.float64).reshape(-1, schema.label.n_channels)
        weight = value.sum(axis=1)
        if self.regression:
            weight = value[:, 0].copy()
            with np.errstate(invalid="ignore", divide="ignore"):
                value = (value[:, 1] / weight + schema.label.shift)[:, None]
        cats = [list(a.categories) if a.kind == CATEGORICAL else None for a in schema.attributes]
        return renumbered(Tree(
            feature_names=schema.names, feature_kinds=[KIND_NAMES[a.kind] for a in schema.attributes],
            categories=cats, classes=list(schema.label.classes), criterion=criterion, target=schema.label.name,
            feature=np.asarray(self.feature, np.int32), threshold=np.asarray(self.threshold, np.float64),
            first_child=np.asarray(self.first_child, np.int32), n_children=np.asarray(self.n_children, np.int32),
            missing_branch=np.asarray(self.missing_branch, np.int32),
            cat_offset=np.asarray(self.cat_offset, np.int32), cat_branch=np.asarray(self.cat_branch, np.int32),
            value=value, n_node_samples=np.asarray(self.n_node_samples, np.int64),
            weighted_n_node_samples=weight, impurity=np.asarray(self.impurity, np.float64)))


def joined_routing(trees: list[Nodes], n_slots: np.ndarray) -> tuple[tuple, np.ndarray]:
    """The :func:`rainforest.rows.step` arrays of several trees in one (every tree's, concatenated,
    child and table indices shifted) and each tree's first node in them."""
    parts = [t.slot_routing(n_slots)[:6] for t in trees]
    base = np.zeros(len(trees) + 1, np.int64)
    base[1:] = np.cumsum([len(p[0]) for p in parts])
    table_base = np.concatenate([[0], np.cumsum([len(p[2]) for p in parts])]).astype(np.int64)
    feature = np.concatenate([p[0] for p in parts]).astype(np.int32)
    first_child = np.concatenate([np.where(p[1] >= 0, p[1] + base[t], -1)
                                  for t, p in enumerate(parts)]).astype(np.int32)
    slot_branch = np.concatenate([p[2] for p in parts]).astype(np.int32)
    branch_offset = np.concatenate([np.where(p[3] >= 0, p[3] + table_base[t], -1)
                                    for t, p in enumerate(parts)]).astype(np.int32)
    slot_cut = np.concatenate([p[4] for p in parts]).astype(np.int64)
    missing_branch = np.concatenate([p[5] for p in parts]).astype(np.int32)
    return (feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots), base
