"""The exactness oracle: a rainforest tree against scikit-learn's, node for node.

scikit-learn visits the attributes in a random order and keeps the first best
split, so where two attributes give exactly the same impurity decrease it may
pick either. At such a tie the oracle checks that the two decreases are equal,
then goes on comparing *our* children with the trees scikit-learn grows on the
rows that reach them (what scikit-learn would have built below the same
choice). So every node is either scikit-learn's split or a verified tie.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.tree import DecisionTreeClassifier as SkTree


@dataclass
class Comparison:
    equal_nodes: int = 0
    ties: int = 0
    mismatches: list = field(default_factory=list)


def _sk_gain(t, j):
    l, r, w = t.children_left[j], t.children_right[j], t.weighted_n_node_samples
    return w[j] * t.impurity[j] - w[l] * t.impurity[l] - w[r] * t.impurity[r]


def _our_gain(t, i):
    w = t.weighted_n_node_samples
    kids = range(t.first_child[i], t.first_child[i] + t.n_children[i])
    return w[i] * t.impurity[i] - sum(w[k] * t.impurity[k] for k in kids)


def compare_with_sklearn(tree, X, y, criterion="gini", max_depth=None, *, estimator=SkTree, sample_weight=None,
                         **sk_params) -> Comparison:
    """Compare ``tree`` (fitted on float32-exact ``X``, ``y``) with scikit-learn's tree on the same data
    (``estimator``: scikit-learn's ``DecisionTreeClassifier``, or its ``DecisionTreeRegressor`` for a
    regression tree; ``sample_weight``: the fit's)."""
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y)
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    leaves = tree.apply(X.astype(np.float64))
    out = Comparison()

    def fit(rows, depth):
        md = None if max_depth is None else max_depth - depth
        params = dict(sk_params)
        if "min_impurity_decrease" in params:  # scikit-learn weighs it by the share of all rows
            params["min_impurity_decrease"] *= len(y) / rows.sum()
        return estimator(criterion=criterion, max_depth=md, random_state=0, **params).fit(
            X[rows], y[rows], sample_weight=None if w is None else w[rows]).tree_

    def reaches(i):
        """Rows whose path passes through our node i."""
        sub = set()
        stack = [i]
        while stack:
            k = stack.pop()
            if tree.first_child[k] < 0:
                sub.add(k)
            else:
                stack.extend(range(tree.first_child[k], tree.first_child[k] + tree.n_children[k]))
        return np.isin(leaves, list(sub))

    def walk(i, sk, j, depth):
        our_leaf, sk_leaf = tree.first_child[i] < 0, sk.children_left[j] < 0
        if our_leaf or sk_leaf:
            if our_leaf and sk_leaf:
                out.equal_nodes += 1
            else:
                out.mismatches.append((i, "leaf vs split"))
            return
        if tree.feature[i] == sk.feature[j] and tree.threshold[i] == sk.threshold[j]:
            out.equal_nodes += 1
            walk(tree.first_child[i], sk, sk.children_left[j], depth + 1)
            walk(tree.first_child[i] + 1, sk, sk.children_right[j], depth + 1)
            return
        a, b = _our_gain(tree, i), _sk_gain(sk, j)
        if not np.isclose(a, b, rtol=1e-9, atol=1e-9):
            out.mismatches.append((i, f"x{tree.feature[i]} <= {tree.threshold[i]} (gain {a}) vs "
                                      f"x{sk.feature[j]} <= {sk.threshold[j]} (gain {b})"))
            return
        out.ties += 1
        for k in (tree.first_child[i], tree.first_child[i] + 1):
            if max_depth is not None and depth + 1 >= max_depth:  # scikit-learn makes it a leaf
                out.equal_nodes += tree.first_child[k] < 0
                if tree.first_child[k] >= 0:
                    out.mismatches.append((k, "split below max_depth"))
                continue
            sub = fit(reaches(k), depth + 1)
            walk(k, sub, 0, depth + 1)

    walk(0, fit(np.ones(len(y), bool), 0), 0, 0)
    return out
