"""Random forests' bootstrap: per-tree seeds and per-node feature draws, from the row hash.

A random forest's tree ``t`` sees row ``r`` ``m`` times, where ``m`` is the Poisson draw of
:mod:`rainforest.storage.poisson` keyed by the tree's seed (re-exported here with the rest of
that module's public names, so that the forest's modules find the bootstrap in one place).

* :func:`tree_seeds` derives each tree's seed from ``random_state`` and the tree's index
  (not from the number of trees, so ``warm_start`` grows the trees a larger fit would), and
  :func:`node_features` draws the attributes a node searches (Forest-RI) from the tree's seed
  and the node's id.
"""
from __future__ import annotations

import numpy as np

from rainforest.storage.poisson import (MAX_MULTIPLICITY, bootstrap_counts, multiplicity, multiplicity_sql,
                                        poisson_thresholds)
from rainforest.storage.rowhash import HASH_SPAN, M32, row_hash, seed_keys

__all__ = ["HASH_SPAN", "MAX_MULTIPLICITY", "bootstrap_counts", "multiplicity", "multiplicity_sql", "poisson_thresholds",
           "seed_keys", "tree_seeds", "node_features"]

_FEATURE_SALT = 0x5BD1E995  # feature draws use a hash independent of the bootstrap's
_TREE_SALT = 0x27D4EB2F


def tree_seeds(random_state: int, start: int, stop: int) -> np.ndarray:
    """Seeds (32-bit) of the trees ``start .. stop - 1`` of a forest seeded with ``random_state``.

    A tree's seed depends only on ``random_state`` and its index, so a forest grown in two
    ``warm_start`` steps has the trees of one fit."""
    h = row_hash(np.arange(start, stop, dtype=np.int64), (int(random_state) ^ _TREE_SALT) & M32)
    return (h.astype(np.int64) & M32).astype(np.int64)


def node_features(seed: int, nodes: np.ndarray, n_candidates: int, k: int) -> np.ndarray:
    """Forest-RI's draw: for each node id in ``nodes`` of the tree seeded ``seed``, ``k`` distinct
    candidates out of ``n_candidates``, sorted; shape ``(len(nodes), k)``.

    Each (node, candidate) pair gets a hash; a node takes its ``k`` candidates with the smallest
    hashes (a uniform random subset), the same whatever else is grown in the pass."""
    nodes = np.asarray(nodes, np.int64)
    if k >= n_candidates:
        return np.broadcast_to(np.arange(n_candidates), (len(nodes), n_candidates)).copy()
    ids = nodes[:, None] * n_candidates + np.arange(n_candidates)[None, :]
    keys = row_hash(ids.ravel(), (int(seed) ^ _FEATURE_SALT) & M32).reshape(ids.shape)
    picked = np.argsort(keys, axis=1, kind="stable")[:, :k]
    return np.sort(picked, axis=1)
