"""The rules that make a tree scikit-learn's, written once for every learner that grows one.

The tree (:mod:`rainforest.grow`), the forest (:mod:`rainforest.forest_grow`) and BOAT's
finishing step (``rainforest.boat.finish``) all take their stopping rules, their impurity
improvement and their node totals from here, so that no copy can drift and one learner stop
matching scikit-learn while the others still do.

* :func:`pre_leaf`: the conditions that make a node a leaf before its split is searched
  (``max_depth``, ``min_samples_split``, ``min_samples_leaf``, ``min_weight_fraction_leaf``,
  purity), for one node or, elementwise, for arrays of nodes;
* :func:`impurity_decrease` and :func:`keeps_split`: scikit-learn's ``impurity_improvement``,
  operation for operation, and the ``min_impurity_decrease`` test;
* :func:`node_totals`: a node's class totals, rows, weight and impurity from one attribute's
  AVC-set (every row lies in exactly one of its slots);
* :func:`branch_totals`: each branch's counts from the split attribute's AVC-set.
"""
from __future__ import annotations

import numba
import numpy as np

from .criteria import ENTROPY, GAIN_RATIO, SQUARED_ERROR, impurity

EPSILON = np.finfo(np.float64).eps


def node_criterion(criterion: int) -> int:
    """The impurity of nodes under ``criterion``: entropy for the gain ratio, else the criterion."""
    return ENTROPY if criterion == GAIN_RATIO else criterion


def depth_limit(max_depth: int | None) -> float:
    """``max_depth`` as a number every depth compares with (infinite when None)."""
    return np.inf if max_depth is None else max_depth


def pre_leaf(depth, n, weight, node_impurity, params, max_depth, min_weight_leaf):
    """scikit-learn's conditions that make a node a leaf before its split is searched.

    Parameters
    ----------
    depth, n, weight, node_impurity : scalars or arrays
        The node's depth, rows (distinct rows: a bootstrap's multiplicities do not count), total
        class weight and impurity; arrays give the answer of every element.
    params : GrowParams
        ``min_samples_split`` and ``min_samples_leaf`` are read from it.
    max_depth : float
        :func:`depth_limit` of the tree's ``max_depth``.
    min_weight_leaf : float or array
        ``min_weight_fraction_leaf`` times the tree's total weight.

    Returns
    -------
    bool or numpy.ndarray of bool
    """
    return ((depth >= max_depth) | (n < params.min_samples_split) | (n < 2 * params.min_samples_leaf)
            | (weight < 2 * min_weight_leaf) | (node_impurity <= EPSILON))


@numba.njit(cache=True, nogil=True)
def impurity_decrease(parent_impurity, child_impurity, child_weight, weight):
    """scikit-learn's ``impurity_improvement`` before its weight factor, operation for operation:
    the parent's impurity less each child's, weighted by its share of ``weight`` (the children's
    total); two children are taken right first, as scikit-learn does."""
    nb = child_weight.shape[0]
    if nb == 2:
        return (parent_impurity - (child_weight[1] / weight * child_impurity[1])
                - (child_weight[0] / weight * child_impurity[0]))
    dec = parent_impurity
    for b in range(nb):
        dec -= child_weight[b] / weight * child_impurity[b]
    return dec


def keeps_split(decrease, weight, total_weight, min_impurity_decrease):
    """Whether a split is kept: its weighted impurity decrease ``weight / total_weight * decrease``
    reaches ``min_impurity_decrease`` (with scikit-learn's epsilon); scalars or arrays."""
    return (weight / total_weight * decrease) + EPSILON >= min_impurity_decrease


def value_weights(values: np.ndarray, criterion: int) -> np.ndarray:
    """The weight of each row of ``values`` (nodes' or branches' channels): its class counts' sum, or a
    regressor's first channel (``sum w``; :data:`rainforest.criteria.REGRESSION_CHANNELS`)."""
    values = np.asarray(values, np.float64)
    return values[:, 0].copy() if criterion == SQUARED_ERROR else values.sum(axis=1)


def split_outcome(node_impurity: float, child_value: np.ndarray, node_crit: int, total_weight: float,
                  min_impurity_decrease: float) -> tuple[list, bool]:
    """The children's impurities, and whether the split is kept (:func:`keeps_split`).

    Parameters
    ----------
    node_impurity : float
        The node's impurity.
    child_value : numpy.ndarray
        Class counts of each child, one row per child.
    node_crit : int
        The node impurity's criterion (:func:`node_criterion`).
    total_weight : float
        The whole tree's weight.
    min_impurity_decrease : float

    Returns
    -------
    list of float, bool
    """
    child_w = value_weights(child_value, node_crit)
    child_imp = [impurity(child_value[b], child_w[b], node_crit) for b in range(len(child_value))]
    wn = child_w.sum()
    dec = impurity_decrease(node_impurity, np.asarray(child_imp, np.float64), np.ascontiguousarray(child_w), wn)
    return child_imp, bool(keeps_split(dec, wn, total_weight, min_impurity_decrease))


def node_totals(block: np.ndarray, n_classes: int, node_crit: int) -> tuple:
    """A node's class totals, rows, weight and impurity from one attribute's AVC-set ``block``
    (slots x channels; every row of the node is in one slot).  A channel past the classes counts
    the rows themselves (weighted rows, bootstraps); without it the rows are the weight.

    Returns
    -------
    value : numpy.ndarray
    n : int
    weight : float
    impurity : float
    """
    totals = block.sum(axis=0)
    value = totals[:n_classes]
    weight = float(value_weights(value[None, :], node_crit)[0])
    n = int(round(totals[n_classes])) if block.shape[1] > n_classes else int(round(weight))
    return value, n, weight, impurity(value, weight, node_crit)


@numba.njit(cache=True, nogil=True)
def branch_totals(block, br, nb):
    """Each branch's counts: the counts of the slots going to it (``br[slot]``), summed in slot order."""
    out = np.zeros((nb, block.shape[1]))
    for s in range(block.shape[0]):
        for c in range(block.shape[1]):
            out[br[s], c] += block[s, c]
    return out


def branch_summary(block: np.ndarray, br: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """A numeric split's slots (``block``, branches ``br``, the missing slot last) reduced to one slot
    per branch, ``(br', block')``, that say what splitting needs of them: :func:`branch_totals` of
    them is the same, bit for bit (each total is added once to zero), and the missing slot's branch
    is still last.  An exact split's refined slots may number in the hundreds of thousands, and a
    level holds every node's best until it splits."""
    missing = int(br[-1])
    order = np.array([b for b in range(nb) if b != missing] + [missing], np.asarray(br).dtype)
    return order, branch_totals(block, br, nb)[order]
