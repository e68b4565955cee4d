"""Minimal cost-complexity pruning of a grown :class:`~rainforest.tree.Tree` (CART; scikit-learn's ``ccp_alpha``).

The weakest link, the internal node ``t`` with the smallest ``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``,
is made a leaf again and again, where ``R(t)`` is the node's weighted impurity
``weighted_n_node_samples[t] * impurity[t] / weighted_n_node_samples[0]`` and ``R(T_t)`` the sum of
it over the leaves below ``t``. The path and the pruned trees are scikit-learn's for the same tree
(see :mod:`rainforest.pruning`, which re-exports these names); no pass over the data.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numba
import numpy as np

from .subtree import depth_first_order, parents, prune
from .tree import Tree


@dataclass
class CostComplexityPath:
    """The minimal cost-complexity pruning path, as scikit-learn's ``cost_complexity_pruning_path``.

    Attributes
    ----------
    ccp_alphas : ndarray
        Effective alphas of the subtrees along the path, increasing; the first is 0.0 (the whole tree).
    impurities : ndarray
        Sum of the weighted leaf impurities of each subtree (scikit-learn's ``impurities``).
    n_leaves : ndarray
        Leaves of each subtree; the last is 1 (the root alone).

    Items can also be read as ``path["ccp_alphas"]``, like scikit-learn's ``Bunch``.
    """

    ccp_alphas: np.ndarray
    impurities: np.ndarray
    n_leaves: np.ndarray

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in ("ccp_alphas", "impurities", "n_leaves"):
            raise KeyError(key)
        return getattr(self, key)


@numba.njit(cache=True)
def _weakest_links(order, parent, first_child, n_children, r_node, ccp_alpha):
    """scikit-learn's ``_cost_complexity_prune`` with a heap: prune weakest links while their
    effective alpha is at most ``ccp_alpha``.

    ``order`` is the depth-first pre-order: leaves' impurities are summed into their ancestors
    in that order and ties go to the earliest node, as scikit-learn does on its own numbering.
    Returns the nodes made leaves, and the path (alphas, impurities, leaf counts).
    """
    n = len(order)
    rank = np.empty(n, np.int64)
    for k in range(n):
        rank[order[k]] = k
    r_branch = np.zeros(n)
    n_leaves = np.zeros(n, np.int64)  # leaves below an internal node (0 at leaves, as scikit-learn)
    for k in range(n):
        leaf = order[k]
        if first_child[leaf] >= 0:
            continue
        r_branch[leaf] = r_node[leaf]
        a = leaf
        while a != 0:
            a = parent[a]
            r_branch[a] += r_node[leaf]
            n_leaves[a] += 1
    candidate = first_child >= 0
    in_subtree = np.ones(n, np.bool_)
    to_leaf = np.zeros(n, np.bool_)
    version = np.zeros(n, np.int64)  # bumped when a node's alpha changes: older heap entries are stale
    n_inner = int(candidate.sum())
    alphas = np.empty(n_inner + 1)
    impurities = np.empty(n_inner + 1)
    leaves = np.empty(n_inner + 1, np.int64)
    alphas[0] = 0.0
    impurities[0] = r_branch[0]
    leaves[0] = max(n_leaves[0], 1)
    steps = 1
    heap = [(0.0, np.int64(0), np.int64(0))]  # (alpha, depth-first rank, version); typed by the seed
    heap.pop()
    for k in range(n):
        if candidate[order[k]]:
            i = order[k]
            heap.append(((r_node[i] - r_branch[i]) / max(n_leaves[i] - 1, 1), np.int64(k), np.int64(0)))
    heapq.heapify(heap)
    while candidate[0]:
        alpha, k, ver = heapq.heappop(heap)
        node = order[k]
        if not candidate[node] or ver != version[node]:  # pruned away, or its alpha has changed since
            continue
        if ccp_alpha < alpha:
            break
        stack = [node]  # its descendants leave the subtree
        while len(stack):
            d = stack.pop()
            if not in_subtree[d]:
                continue
            candidate[d] = False
            in_subtree[d] = False
            if first_child[d] >= 0:
                for c in range(first_child[d], first_child[d] + n_children[d]):
                    stack.append(c)
        in_subtree[node] = True
        to_leaf[node] = True
        n_pruned = n_leaves[node] - 1
        n_leaves[node] = 0
        r_diff = r_node[node] - r_branch[node]
        r_branch[node] = r_node[node]
        a = parent[node]
        while a != -1:
            n_leaves[a] -= n_pruned
            r_branch[a] += r_diff
            version[a] += 1
            heapq.heappush(heap, ((r_node[a] - r_branch[a]) / max(n_leaves[a] - 1, 1), rank[a], version[a]))
            a = parent[a]
        alphas[steps] = alpha
        impurities[steps] = r_branch[0]
        leaves[steps] = max(n_leaves[0], 1)
        steps += 1
    return to_leaf, alphas[:steps], impurities[:steps], leaves[:steps]


def _weakest_link_pruning(tree: Tree, ccp_alpha: float):
    w = tree.weighted_n_node_samples
    r_node = w * tree.impurity / w[0]  # scikit-learn's order of operations, so the same floats
    return _weakest_links(depth_first_order(tree), parents(tree), tree.first_child.astype(np.int64),
                          tree.n_children.astype(np.int64), r_node, float(ccp_alpha))


def cost_complexity_path(tree: Tree) -> CostComplexityPath:
    """The cost-complexity pruning path of a grown tree (no pass over the data).

    Parameters
    ----------
    tree : Tree

    Returns
    -------
    CostComplexityPath
        ``ccp_alphas`` and ``impurities`` as scikit-learn's ``cost_complexity_pruning_path``
        gives them for the same tree, and ``n_leaves`` of each subtree.
    """
    _, alphas, impurities, leaves = _weakest_link_pruning(tree, np.inf)
    return CostComplexityPath(alphas, impurities, leaves)


def cost_complexity_prune(tree: Tree, ccp_alpha: float) -> Tree:
    """The subtree of minimal cost-complexity for ``ccp_alpha``, as scikit-learn's ``ccp_alpha``.

    Weakest links are pruned while their effective alpha is at most ``ccp_alpha``; so the result is
    the subtree of the path with the largest effective alpha not above ``ccp_alpha``. ``0.0``
    returns the tree unchanged (scikit-learn does not prune then either, even links of alpha 0).
    """
    _check_ccp_alpha(ccp_alpha)
    if ccp_alpha == 0.0:
        return tree
    to_leaf, *_ = _weakest_link_pruning(tree, ccp_alpha)
    return prune(tree, to_leaf)


def _check_ccp_alpha(ccp_alpha) -> None:
    if isinstance(ccp_alpha, (bool, np.bool_)) or not isinstance(ccp_alpha, (int, float, np.integer, np.floating)) \
            or not ccp_alpha >= 0:
        raise ValueError(f"ccp_alpha must be a non-negative number, got {ccp_alpha!r}")
