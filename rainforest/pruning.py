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
children, as the model format requires); the input tree is not changed.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

import numba
import numpy as np

from .errors import DataError
from .schema import Label
from .tree import Tree


# -- structure ---------------------------------------------------------------------------------
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


# -- cost-complexity -----------------------------------------------------------------------------
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
