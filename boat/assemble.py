"""Nodes as a linked structure, and their flat :class:`rainforest.tree.Tree` in growth order.

BOAT decides the top of the tree itself and grafts RainForest subtrees below; the final tree is
numbered breadth first, children in branch order, and categorical tables laid out in that order:
the numbering level-wise growth gives, so the model is the one RainForest builds, array for array.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rainforest.schema import CATEGORICAL, Schema
from rainforest.tree import KIND_NAMES, Tree


@dataclass
class Node:
    value: np.ndarray
    n: int
    impurity: float
    feature: int = -2
    threshold: float = -2.0
    missing_branch: int = -1
    cat_branch: list | None = None
    children: list = field(default_factory=list)


def tree_nodes(tree: Tree, i: int = 0) -> Node:
    """Node ``i`` of ``tree`` and its subtree as linked :class:`Node` objects."""
    def one(k):
        node = Node(tree.value[k].copy(), int(tree.n_node_samples[k]), float(tree.impurity[k]))
        if tree.first_child[k] >= 0:
            node.feature, node.threshold = int(tree.feature[k]), float(tree.threshold[k])
            node.missing_branch = int(tree.missing_branch[k])
            if tree.cat_offset[k] >= 0:
                width = len(tree.categories[node.feature]) + 1
                node.cat_branch = tree.cat_branch[tree.cat_offset[k]:tree.cat_offset[k] + width].tolist()
        return node

    root = one(i)
    stack = [(root, i)]
    while stack:
        node, k = stack.pop()
        if tree.first_child[k] >= 0:
            for c in range(tree.first_child[k], tree.first_child[k] + tree.n_children[k]):
                child = one(c)
                node.children.append(child)
                stack.append((child, c))
    return root


def nodes_to_tree(root: Node, schema: Schema, criterion: str) -> Tree:
    """The flat tree of ``root``, numbered breadth first."""
    order = [root]
    for node in order:  # grows while walked: breadth first
        order.extend(node.children)
    index = {id(n): i for i, n in enumerate(order)}
    n = len(order)
    feature = np.full(n, -2, np.int32)
    threshold = np.full(n, -2.0)
    first_child = np.full(n, -1, np.int32)
    n_children = np.zeros(n, np.int32)
    missing_branch = np.full(n, -1, np.int32)
    cat_offset = np.full(n, -1, np.int32)
    cat_branch: list = []
    for i, node in enumerate(order):
        if node.children:
            feature[i], threshold[i], missing_branch[i] = node.feature, node.threshold, node.missing_branch
            first_child[i], n_children[i] = index[id(node.children[0])], len(node.children)
            if node.cat_branch is not None:
                cat_offset[i] = len(cat_branch)
                cat_branch.extend(node.cat_branch)
    value = np.array([node.value for node in order], np.float64).reshape(n, len(schema.label.classes))
    cats = [list(a.categories) if a.kind == CATEGORICAL else None for a in schema.attributes]
    return Tree(feature_names=schema.names, feature_kinds=[KIND_NAMES[a.kind] for a in schema.attributes],
                categories=cats, classes=list(schema.label.classes), criterion=criterion, target=schema.label.name,
                feature=feature, threshold=threshold, first_child=first_child, n_children=n_children,
                missing_branch=missing_branch, cat_offset=cat_offset, cat_branch=np.asarray(cat_branch, np.int32),
                value=value, n_node_samples=np.array([node.n for node in order], np.int64),
                weighted_n_node_samples=value.sum(axis=1), impurity=np.array([node.impurity for node in order]))
