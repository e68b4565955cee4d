"""Compiling the split search in a second process while the first compiles the rest.

Numba compiles each kernel on its first use, one at a time (its compiler holds a lock), and
caches the result on disk.  On a fresh install the first fit spends most of its time there; the
split search alone is about a third of it.  :func:`start` runs :func:`compile_search` in a child
process, which writes the search's kernels to Numba's cache while the parent generates data and
compiles the counting and routing kernels; the parent's search then loads them from the cache,
and so does its first prediction (:func:`compile_prediction`, the child's next task).
The child compiles the very specializations a fit uses: every argument of the search has the
same type whatever the data (the AVC-groups are float64, the layouts int64, the kinds int8), and
the numeric-only one (``max_exhaustive`` None) or the one with categorical code.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np


def compile_search(categorical: bool) -> None:
    """Compile (or load from the cache) the split search's kernels, as a fit over numeric attributes
    only (``categorical`` False) or with categorical ones calls them."""
    from .criteria import best_splits

    kinds = np.array([0, 1] if categorical else [0], np.int8)
    offsets = np.array([[0, 3, 6] if categorical else [0, 3]], np.int64)
    block = np.ones((int(offsets[0, -1]), 2))
    best_splits(block, np.array([0, len(block)], np.int64), offsets, kinds, 2, False, 0, False, 1.0, 0.0, 12, 3, 0)


def _split_root(n_classes: int):
    """A grown tree of three nodes: the root split on attribute 0 (slots up to 1 left, threshold 0.5)."""
    from .nodes import Nodes

    nodes = Nodes()
    for depth in (0, 1, 1):
        nodes.add_leaf(np.zeros(n_classes), 2, 0.0, depth)
    nodes.feature[0], nodes.first_child[0], nodes.n_children[0], nodes.slot_cut[0] = 0, 1, 2, 1
    nodes.threshold[0], nodes.missing_branch[0] = 0.5, 1
    return nodes


def compile_routing(n_attributes: int, n_classes: int) -> None:
    """Compile (or load from the cache) the kernels that move rows kept in memory down a level
    (:meth:`rainforest.rows.KeptRows.regroup`) as a binned, unweighted fit of ``n_attributes``
    attributes and ``n_classes`` classes calls them: one-byte slots, the class codes' type, the
    routing arrays of :meth:`rainforest.nodes.Nodes.slot_routing`.

    ``rainforest demo`` runs it before its first fit, while the child compiles the search: the fit
    then reaches its first search later, when the child has written it to the cache, instead of
    compiling part of it a second time."""
    from .rows import KeptRows, class_dtype

    kept = KeptRows([0], [4], 3, n_attributes, np.uint8, class_dtype(n_classes), False)
    kept.S[:] = np.arange(4, dtype=np.uint8)[:, None]
    kept.y[:] = np.arange(4) % n_classes
    kept.ends[:] = kept.limits
    nodes = _split_root(n_classes)
    routing = nodes.slot_routing(np.full(n_attributes, 255, np.int64))
    kept.regroup(routing, np.asarray(nodes.n_children, np.int64), np.array([False, True, True]))
    if not (kept.ends - kept.starts == 2).all():
        raise AssertionError("the warm-up regroup split its rows wrongly")


def compile_prediction() -> None:
    """Compile (or load from the cache) the routing of rows to leaves (:func:`rainforest.tree.route_rows`)
    as :meth:`rainforest.tree.Tree.apply` calls it: the child runs it once the search is compiled."""
    from .schema import NUMERIC, Attribute, Label, Schema

    schema = Schema([Attribute("a", NUMERIC, cuts=np.array([0.5]))], Label("y", [0, 1]))
    tree = _split_root(2).to_tree(schema, "gini")
    if tree.apply(np.array([[0.0], [1.0], [np.nan]])).tolist() != [1, 2, 2]:
        raise AssertionError("the warm-up tree routed its rows wrongly")


def start(categorical: bool) -> subprocess.Popen | None:
    """:func:`compile_search`, then :func:`compile_prediction`, in a child process (None where one
    cannot be started); the caller waits for it or stops it (:func:`stop`)."""
    try:
        return subprocess.Popen([sys.executable, "-m", "rainforest.warm_up", "1" if categorical else "0"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def stop(child: subprocess.Popen | None) -> None:
    """Stop the child (if it is still compiling, the cache keeps what it finished) and reap it."""
    if child is None:
        return
    if child.poll() is None:
        child.terminate()
    child.wait()


if __name__ == "__main__":
    compile_search(sys.argv[1:] == ["1"])
    compile_prediction()
