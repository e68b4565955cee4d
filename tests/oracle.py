"""Node-for-node comparison of a rainforest tree with a scikit-learn tree (the exactness oracle)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Comparison:
    equal_nodes: int = 0
    ties: list = field(default_factory=list)  # (our node, sklearn node) where the two chose equally good splits
    mismatches: list = field(default_factory=list)  # genuine differences


def sklearn_improvement(sk_tree, i):
    l, r = sk_tree.children_left[i], sk_tree.children_right[i]
    w = sk_tree.weighted_n_node_samples
    return w[i] * sk_tree.impurity[i] - w[l] * sk_tree.impurity[l] - w[r] * sk_tree.impurity[r]


def our_improvement(tree, i):
    w = tree.weighted_n_node_samples
    kids = range(tree.first_child[i], tree.first_child[i] + tree.n_children[i])
    return w[i] * tree.impurity[i] - sum(w[k] * tree.impurity[k] for k in kids)


def compare(tree, sk_tree, i=0, j=0, out=None) -> Comparison:
    """Walk both trees from the roots; ties are splits of equal impurity decrease on other attributes."""
    out = out or Comparison()
    our_leaf = tree.first_child[i] < 0
    sk_leaf = sk_tree.children_left[j] < 0
    if our_leaf and sk_leaf:
        out.equal_nodes += 1
        return out
    if our_leaf != sk_leaf:
        out.mismatches.append((i, j, "leaf vs split"))
        return out
    same = tree.feature[i] == sk_tree.feature[j] and tree.threshold[i] == sk_tree.threshold[j]
    if not same:
        a, b = our_improvement(tree, i), sklearn_improvement(sk_tree, j)
        if np.isclose(a, b, rtol=1e-9, atol=1e-9):
            out.ties.append((i, j))
        else:
            out.mismatches.append((i, j, f"feature {tree.feature[i]} <= {tree.threshold[i]} (gain {a}) vs "
                                         f"{sk_tree.feature[j]} <= {sk_tree.threshold[j]} (gain {b})"))
        return out
    out.equal_nodes += 1
    compare(tree, sk_tree, tree.first_child[i], sk_tree.children_left[j], out)
    compare(tree, sk_tree, tree.first_child[i] + 1, sk_tree.children_right[j], out)
    return out
