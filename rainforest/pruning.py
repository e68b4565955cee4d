"""Pruning a grown :class:`~rainforest.tree.Tree`: cost-complexity, C4.5 pessimistic and reduced-error.

All three work on the tree alone, from the class counts every node keeps (``value``), so
none of them reads the training data again:

* **Cost-complexity** (CART, Breiman et al. 1984; scikit-learn's ``ccp_alpha``): the weakest
  link, the internal node ``t`` with the smallest ``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``, is
  made a leaf again and again, where ``R(t)`` is the node's weighted impurity
  ``weighted_n_node_samples[t] * impurity[t] / weighted_n_node_samples[0]`` and ``R(T_t)`` the sum
  of it over the leaves below ``t``. The sequence (the *pruning path*) and the pruned trees are
  scikit-learn's for the same tree: ties between links go to the node that comes first in
  depth-first order (scikit-learn's node numbering), and the sums are made in its order too.
  A heap replaces scikit-learn's scan over all nodes per step, so big trees prune in
  ``O(n log n)``, not ``O(n^2)``.
* **Pessimistic** (C4.5, Quinlan 1993): a node with ``N`` training rows of which ``E`` are not
  of its majority class is estimated to make ``E + add_errors(N, E, CF)`` errors on unseen
  rows, ``N * U_CF(E, N)``, the upper limit of a binomial confidence interval at level
  ``CF`` (C4.5's own approximation, :func:`c45_added_errors`). Bottom-up, a subtree is
  replaced by a leaf when the leaf's estimate is at most the subtree's (the sum over its
  leaves). No *subtree raising* (replacing a node by its largest branch): that needs the
  training rows of the whole node sent down the branch, a pass over the data.
* **Reduced error** (Quinlan 1987): one pass over validation rows counts the rows of every
  class that reach each node, then, bottom-up, a subtree is replaced by a leaf when the node,
  predicting its training majority class, makes no more validation errors than the subtree.

Each returns a new tree (:func:`prune` renumbers the kept nodes breadth first with contiguous
children, as the model format requires); the input tree is not changed. Cost-complexity lives in
:mod:`rainforest.cost_complexity` and the cutting of a tree in :mod:`rainforest.subtree`; both are
re-exported here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from .cost_complexity import (CostComplexityPath, cost_complexity_path,  # noqa: F401 (re-exported)
                              cost_complexity_prune)
from .errors import DataError
from .schema import Label
from .subtree import depth_first_order, parents, prune, renumbered  # noqa: F401 (re-exported)
from .tree import Tree


# -- pruning bottom-up ---------------------------------------------------------------------------
@numba.njit(cache=True)
def _subtree_sums(first_child, n_children, x):
    """``x`` of each leaf, and of each internal node the sum over its children (bottom up, in place)."""
    for i in range(len(first_child) - 1, -1, -1):  # children come after their parent
        if first_child[i] >= 0:
            x[i] = 0
            for c in range(first_child[i], first_child[i] + n_children[i]):
                x[i] += x[c]
    return x


@numba.njit(cache=True)
def _prune_bottom_up(first_child, n_children, leaf_cost):
    """Make a leaf of every node whose cost as a leaf is at most that of its (pruned) subtree.

    Returns the nodes made leaves and each node's cost after pruning below it.
    """
    n = len(first_child)
    cost = np.empty(n)
    to_leaf = np.zeros(n, np.bool_)
    for i in range(n - 1, -1, -1):
        if first_child[i] < 0:
            cost[i] = leaf_cost[i]
            continue
        below = 0.0
        for c in range(first_child[i], first_child[i] + n_children[i]):
            below += cost[c]
        if leaf_cost[i] <= below:  # ties prune: the smaller tree
            to_leaf[i] = True
            cost[i] = leaf_cost[i]
        else:
            cost[i] = below
    return to_leaf, cost


# -- pessimistic (C4.5) ------------------------------------------------------------------------
# C4.5 release 8 (Prune.c / Stats.c): the normal deviate for CF is interpolated in this table.
_C45_CONFIDENCE = (0.0, 0.001, 0.005, 0.01, 0.05, 0.10, 0.20, 0.40, 1.00)
_C45_DEVIATE = (4.0, 3.09, 2.58, 2.33, 1.65, 1.28, 0.84, 0.25, 0.00)


def _c45_coefficient(confidence: float) -> float:
    """The squared normal deviate C4.5 uses for ``confidence`` (linear interpolation in its table)."""
    i = 1
    while confidence > _C45_CONFIDENCE[i]:
        i += 1
    v0, v1 = _C45_CONFIDENCE[i - 1], _C45_CONFIDENCE[i]
    d0, d1 = _C45_DEVIATE[i - 1], _C45_DEVIATE[i]
    z = d0 + (d1 - d0) * (confidence - v0) / (v1 - v0)
    return z * z


def c45_added_errors(n: float, e: float, confidence: float = 0.25) -> float:
    """C4.5's ``AddErrs``: the errors to add to ``e`` observed errors among ``n`` rows.

    ``e + c45_added_errors(n, e, CF)`` is ``n * U_CF(e, n)``, the upper limit of the confidence
    interval at level ``CF`` of the binomial error rate: exact for ``e = 0``
    (``1 - CF ** (1 / n)``), interpolated linearly for ``0 < e < 1`` (fractional rows),
    C4.5's ``0.67 * (n - e)`` when ``e + 0.5 >= n``, and otherwise the normal approximation with
    continuity correction, with C4.5's tabled deviate. So Quinlan's book figures come out:
    ``U_25%(0, 6) = 0.206``, ``U_25%(1, 16) = 0.157``.

    Parameters
    ----------
    n : float
        (Weighted) rows at the node; 0 gives 0.
    e : float
        (Weighted) rows not of the node's majority class.
    confidence : float, default=0.25
        C4.5's CF, in (0, 1); smaller prunes more.
    """
    _check_confidence(confidence)
    return float(_added_errors(float(n), float(e), float(confidence), _c45_coefficient(confidence)))


@numba.njit(cache=True)
def _added_errors(n, e, confidence, coeff):
    if n <= 0:
        return 0.0
    zero = n * (1 - math.exp(math.log(confidence) / n))
    if e < 1e-6:
        return zero
    if e < 0.9999:  # fractional errors: between none and one
        return zero + e * (_added_errors_normal(n, 1.0, coeff) - zero)
    return _added_errors_normal(n, e, coeff)


@numba.njit(cache=True)
def _added_errors_normal(n, e, coeff):
    if e + 0.5 >= n:
        return 0.67 * (n - e)
    pr = (e + 0.5 + coeff / 2 + math.sqrt(coeff * ((e + 0.5) * (1 - (e + 0.5) / n) + coeff / 4))) / (n + coeff)
    return n * pr - e


@numba.njit(cache=True)
def _leaf_estimates(value, confidence, coeff):
    out = np.empty(value.shape[0])
    for i in range(value.shape[0]):
        n = value[i].sum()
        e = n - value[i].max() if value.shape[1] else 0.0
        out[i] = e + _added_errors(n, e, confidence, coeff)
    return out


def _check_confidence(confidence) -> None:
    if isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, (int, float, np.integer, np.floating)) \
            or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1) (C4.5's CF), got {confidence!r}")


def leaf_error_estimates(tree: Tree, confidence: float = 0.25) -> np.ndarray:
    """C4.5's estimated errors of each node as a leaf: ``E + add_errors(N, E, CF)``."""
    _check_confidence(confidence)
    return _leaf_estimates(np.ascontiguousarray(tree.value, np.float64), float(confidence),
                           _c45_coefficient(confidence))


def estimated_errors(tree: Tree, confidence: float = 0.25) -> float:
    """C4.5's estimated errors of the whole tree: the sum over its leaves of their estimates."""
    return float(leaf_error_estimates(tree, confidence)[tree.is_leaf].sum())


def pessimistic_prune(tree: Tree, confidence: float = 0.25) -> Tree:
    """C4.5's error-based pruning by subtree replacement (no subtree raising).

    Bottom-up, a node becomes a leaf when its estimated errors as a leaf
    (:func:`leaf_error_estimates`) are at most the sum of the estimates of its pruned
    subtree's leaves. C4.5 also allows a slack of 0.1 error here; this does not, so pruning
    never increases :func:`estimated_errors`, and the result is the subtree with the least
    estimated errors (ties go to the smaller tree).

    Parameters
    ----------
    tree : Tree
    confidence : float, default=0.25
        C4.5's confidence factor CF, in (0, 1); smaller prunes more.

    Returns
    -------
    Tree
    """
    to_leaf, _ = _prune_bottom_up(tree.first_child, tree.n_children, leaf_error_estimates(tree, confidence))
    return prune(tree, to_leaf)


# -- reduced error -------------------------------------------------------------------------------
@dataclass
class NodeClassCounts:
    """A :class:`rainforest.storage.PassTask` counting, per leaf of ``tree``, the (weighted) rows of each class
    that reach it; the state is a ``(node_count, n_classes)`` array (internal nodes stay zero)."""

    tree: Tree
    target: str
    weight: str | None = None

    def new_state(self) -> np.ndarray:
        return np.zeros((self.tree.node_count, self.tree.n_classes))

    def update(self, state: np.ndarray, batch, first_row: int) -> np.ndarray:
        tree = self.tree
        leaves = tree.apply(tree.encoder().encode(batch))
        y = _label_codes(Label(self.target, list(tree.classes)), batch.column(self.target))
        w = None
        if self.weight is not None:
            w = batch.column(self.weight).to_numpy(zero_copy_only=False).astype(np.float64)
            bad = ~(np.isfinite(w) & (w >= 0))
            if bad.any():
                raise DataError(f"the weight column {self.weight!r} has a value {w[bad][0]!r} (row "
                                f"{first_row + int(np.flatnonzero(bad)[0])}); weights must be finite and >= 0")
        k = tree.n_classes
        state += np.bincount(leaves * k + y, weights=w, minlength=tree.node_count * k).reshape(-1, k)
        return state

    def merge(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b


def _label_codes(label: Label, column) -> np.ndarray:
    try:
        return label.codes(column)
    except DataError as exc:
        raise DataError(f"validation data: {exc} (the tree's classes: {label.classes})") from None
    except (TypeError, ValueError) as exc:  # Arrow cannot compare the labels with the classes at all
        raise DataError(f"validation data: the target column {label.name!r} ({column.type}) does not hold the "
                        f"tree's classes {label.classes}: {exc}") from None


def validation_counts(tree: Tree, source, target: str, weight: str | None = None,
                      batch_size: int = 65536) -> np.ndarray:
    """Per node, the (weighted) validation rows of each class whose path passes through it.

    One pass over ``source`` (a :class:`rainforest.storage.Source`): each row is routed to its leaf and
    counted there; a node's counts are then the sums over its leaves, which is the same as
    counting every row at every node on its path.
    """
    columns = list(dict.fromkeys(list(tree.feature_names) + [target] + ([weight] if weight else [])))
    counts = source.run_pass(NodeClassCounts(tree, target, weight), columns, batch_size)
    return _subtree_sums(tree.first_child, tree.n_children, counts)


def validation_errors(tree: Tree, counts: np.ndarray) -> np.ndarray:
    """Validation errors of each node as a leaf predicting its training majority class, from
    :func:`validation_counts`."""
    predicted = np.argmax(tree.value, axis=1)
    return counts.sum(axis=1) - counts[np.arange(tree.node_count), predicted]


def reduced_error_prune(tree: Tree, counts: np.ndarray) -> tuple[Tree, float]:
    """Reduced-error pruning: bottom-up, make a leaf of every node that as a leaf makes no more
    validation errors than its pruned subtree.

    Parameters
    ----------
    tree : Tree
    counts : ndarray of shape (node_count, n_classes)
        Validation class counts per node (:func:`validation_counts`).

    Returns
    -------
    pruned : Tree
        Ties prune, so a node that no validation row reaches becomes a leaf (Quinlan's rule).
    errors : float
        The (weighted) validation errors of ``pruned``: at most those of ``tree``, and the
        fewest of any pruning of it.

    Notes
    -----
    A leaf keeps predicting the majority of its *training* rows; the validation rows decide only
    which nodes stay.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != (tree.node_count, tree.n_classes):
        raise ValueError(f"counts must have shape {(tree.node_count, tree.n_classes)}, got {counts.shape}")
    to_leaf, errors = _prune_bottom_up(tree.first_child, tree.n_children, validation_errors(tree, counts))
    return prune(tree, to_leaf), float(errors[0])
