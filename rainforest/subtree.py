"""Cutting a :class:`~rainforest.tree.Tree` down to a subtree, and the walks pruning needs.

:func:`prune` makes given nodes leaves and renumbers the kept nodes breadth first with contiguous
children, as the model format requires (the input tree is not changed); :func:`parents` and
:func:`depth_first_order` (scikit-learn's node numbering) serve the pruning methods of
:mod:`rainforest.pruning` and :mod:`rainforest.cost_complexity`.
"""
from __future__ import annotations

from dataclasses import replace

import numba
import numpy as np

from .tree import Tree


def prune(tree: Tree, to_leaf) -> Tree:
    """The tree with the nodes of ``to_leaf`` made leaves and their descendants removed.

    Parameters
    ----------
    tree : Tree
    to_leaf : array-like of bool, shape (node_count,)
        Nodes to make leaves; entries of nodes below another such node do not matter.

    Returns
    -------
    Tree
        The kept nodes renumbered breadth first (children contiguous), with their class
        counts, sample counts and impurities unchanged; a leaf keeps the class counts of
        the rows that reached it in training, so it predicts their majority.
    """
    to_leaf = np.asarray(to_leaf, dtype=bool)
    if to_leaf.shape != (tree.node_count,):
        raise ValueError(f"to_leaf must have one entry per node ({tree.node_count}), got shape {to_leaf.shape}")
    split = (tree.first_child >= 0) & ~to_leaf
    old, first_child = _renumber(tree.first_child, tree.n_children, split)
    inner = split[old]
    cat_offset = np.full(len(old), -1, np.int32)
    segments = []
    at = 0
    for k in np.flatnonzero(inner & (tree.cat_offset[old] >= 0)):  # categorical splits keep their branch table
        i = old[k]
        size = len(tree.categories[tree.feature[i]]) + 1  # categories seen in training, then unseen ones
        segments.append(tree.cat_branch[tree.cat_offset[i]:tree.cat_offset[i] + size])
        cat_offset[k] = at
        at += size
    cat_branch = np.concatenate(segments).astype(np.int32) if segments else np.empty(0, np.int32)
    return replace(
        tree,
        feature=np.where(inner, tree.feature[old], -2).astype(np.int32),
        threshold=np.where(inner, tree.threshold[old], -2.0),
        first_child=first_child,
        n_children=np.where(inner, tree.n_children[old], 0).astype(np.int32),
        missing_branch=np.where(inner, tree.missing_branch[old], -1).astype(np.int32),
        cat_offset=cat_offset, cat_branch=cat_branch, value=tree.value[old].copy(),
        n_node_samples=tree.n_node_samples[old].copy(),
        weighted_n_node_samples=tree.weighted_n_node_samples[old].copy(),
        impurity=tree.impurity[old].copy(), _depth=None)


def renumbered(tree: Tree) -> Tree:
    """The same tree numbered breadth first, children contiguous in branch order (:func:`prune` with
    no node made a leaf): growth may split a level's nodes in any order."""
    return prune(tree, np.zeros(tree.node_count, bool))


@numba.njit(cache=True)
def _renumber(first_child, n_children, split):
    """Breadth-first walk of the nodes kept when only ``split`` nodes keep their children: the old
    index of each new node and each new node's first child (-1 at leaves)."""
    old = np.empty(len(first_child), np.int64)
    new_first = np.full(len(first_child), -1, np.int32)
    old[0] = 0
    end = 1
    k = 0
    while k < end:  # old[k:end] is the queue
        i = old[k]
        if split[i]:
            new_first[k] = end
            for c in range(first_child[i], first_child[i] + n_children[i]):
                old[end] = c
                end += 1
        k += 1
    return old[:end], new_first[:end]


def parents(tree: Tree) -> np.ndarray:
    """Parent of each node, -1 at the root."""
    return _parents(tree.first_child, tree.n_children)


@numba.njit(cache=True)
def _parents(first_child, n_children):
    parent = np.full(len(first_child), -1, np.int64)
    for i in range(len(first_child)):
        for c in range(first_child[i], first_child[i] + n_children[i]):
            parent[c] = i
    return parent


def depth_first_order(tree: Tree) -> np.ndarray:
    """Nodes in depth-first pre-order, first child first: scikit-learn's node numbering."""
    return _depth_first_order(tree.first_child, tree.n_children)


@numba.njit(cache=True)
def _depth_first_order(first_child, n_children):
    n = len(first_child)
    order = np.empty(n, np.int64)
    stack = np.empty(n, np.int64)
    stack[0] = 0
    top = 1
    k = 0
    while top > 0:
        top -= 1
        i = stack[top]
        order[k] = i
        k += 1
        for c in range(first_child[i] + n_children[i] - 1, first_child[i] - 1, -1):  # first child on top
            stack[top] = c
            top += 1
    return order[:k]
