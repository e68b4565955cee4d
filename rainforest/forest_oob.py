"""The random forest's out-of-bag pass: each row's votes from the trees whose bootstrap left it out.

A row's multiplicity in a tree's bootstrap is recomputed from its hash and the tree's seed
(:mod:`rainforest.bootstrap`), so the pass needs no stored sample: it routes every row down
the trees where its multiplicity is 0 and sums what their leaves predict (class distributions,
or a regressor's mean targets).

Where the fit kept every encoded row in memory (RF-Hybrid) or in its spill folder,
:func:`oob_from_rows` reads them there instead of passing over the data again: each slot stands
for a value the trees route as they route every value of that slot (:func:`slot_values`), so the
votes are the pass's, row for row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa

from .bootstrap import seed_keys
from .forest_kernels import bootstrap_block
from .schema import Label, Schema, numeric_values
from .slot_values import slot_tables, slot_values


def tree_input(combinations, X: np.ndarray) -> np.ndarray:
    """``X`` (raw, C-ordered) with a tree's Forest-RC ``combinations`` appended (None: ``X`` as is)."""
    if combinations is None:
        return X
    return np.ascontiguousarray(np.hstack([X, combinations.values(X)]))


@dataclass
class OobPass:
    """A :class:`rainforest.storage.PassTask` summing, for every row, what the leaves it reaches predict (class
    distributions, or mean targets) in the trees whose bootstrap left it out (multiplicity 0), in tree
    order; the state is the list of ``(first_row, votes, n_trees, targets, counted)`` blocks: targets are
    class codes, or a regressor's target values; rows of weight 0 do not count."""

    encoder: Schema  # encodes raw batches of the forest's feature columns
    trees: list  # the fitted trees (rainforest.tree.Tree)
    tree_seeds: np.ndarray  # each tree's bootstrap seed
    combinations: list  # each tree's Forest-RC combinations, or None
    leaf_values: Callable[[int], np.ndarray]  # tree t -> what each of its leaves predicts, n_outputs columns
    thresholds: np.ndarray  # the bootstrap's Poisson thresholds
    n_outputs: int
    label: Label
    weight: str | None = None  # rows of weight 0 count as absent

    def new_state(self) -> list:
        return []

    def update(self, state: list, batch: pa.RecordBatch, first_row: int) -> list:
        X = np.ascontiguousarray(self.encoder.encode(batch))
        absent = numeric_values(batch.column(self.weight)) == 0 if self.weight else None
        label = batch.column(self.label.name)
        # a regressor's target as given, not less the shift (the fit refused bad targets in these rows)
        y = numeric_values(label) if self.label.regression else self.label.codes(label, absent=absent)
        counted = np.ones(len(y), bool) if absent is None else ~absent
        state.append(self.block(first_row, X, y, counted))
        return state

    def block(self, first_row: int, X: np.ndarray, y: np.ndarray, counted: np.ndarray, inputs=None) -> tuple:
        """The state's block of the rows from ``first_row`` whose feature values are ``X``; ``inputs`` (tree
        index -> columns of ``X``), where ``X`` holds every tree's Forest-RC combinations already."""
        n = len(y)
        votes = np.zeros((n, self.n_outputs))
        n_oob = np.zeros(n, np.int64)
        m = np.empty(n, np.uint8)
        for t, tree in enumerate(self.trees):
            s1, s2 = seed_keys(int(self.tree_seeds[t]))
            bootstrap_block(np.int64(first_row), s1, s2, self.thresholds, m)
            out = np.flatnonzero(m == 0)
            if len(out):
                rows = tree_input(self.combinations[t], X[out]) if inputs is None else X[out][:, inputs[t]]
                leaves = tree.apply(np.ascontiguousarray(rows))
                votes[out] += self.leaf_values(t)[leaves]
                n_oob[out] += 1
        return first_row, votes, n_oob, y, counted

    def merge(self, a: list, b: list) -> list:
        return a + b


def kept_blocks(rows, block: int = 65536):
    """``(first_row, S, y, w)`` of the rows kept in memory in row order (a :class:`rainforest.rows.KeptRows`
    of one group, the forest's RF-Hybrid rows)."""
    if list(rows.nodes) != [0]:  # not in row order
        return
    for lo in range(0, rows.size, block):
        hi = min(rows.size, lo + block)
        yield lo, rows.S[lo:hi], rows.y[lo:hi], rows.w[lo:hi] if len(rows.w) else rows.w


def spilled_blocks(spill, batch_size: int):
    """``(first_row, S, y, w)`` of the rows the forest spilled, every row in row order (partition 0)."""
    for first, rows in spill.in_row_order(batch_size):
        yield first, rows.S, rows.y, rows.w


def oob_from_rows(task: OobPass, blocks, attributes: list, n_rows: int, inputs=None) -> list | None:
    """:class:`OobPass`'s state from the encoded rows of the fit (``blocks``: :func:`kept_blocks` or
    :func:`spilled_blocks`) instead of a pass: a classifier's, whose kept class codes are the pass's;
    None where a row has weight 0 (its slot may not say how the trees route its value: see
    ``ForestEstimator._set_oob``) or the blocks do not hold the ``n_rows`` rows.  ``attributes``: the
    kept columns' (Forest-RC's combinations after the features); ``inputs``: each tree's columns among
    them (None: the features, every tree)."""
    state, seen, tables = [], 0, slot_tables(attributes)
    for first, S, y, w in blocks:
        if first != seen or (len(w) and not np.all(w != 0)):
            return None
        X = slot_values(attributes, S, tables)
        state.append(task.block(first, X, y.astype(np.int32), np.ones(len(y), bool), inputs))
        seen += len(y)
    return state if seen == n_rows else None


def oob_estimates(blocks: list, n_outputs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """From the state of an :class:`OobPass`, in row order: each row's out-of-bag estimate (the mean over
    its out-of-bag trees; 0 without one), its target, whether it counts (a row of weight 0 counts as
    absent; the others count once, as in scikit-learn), and whether some row that counts has no
    out-of-bag tree."""
    blocks = sorted(blocks, key=lambda b: b[0])
    votes = np.concatenate([b[1] for b in blocks]) if blocks else np.empty((0, n_outputs))
    n_oob = np.concatenate([b[2] for b in blocks]) if blocks else np.empty(0, np.int64)
    y = np.concatenate([b[3] for b in blocks]) if blocks else np.empty(0)
    counted = np.concatenate([b[4] for b in blocks]) if blocks else np.empty(0, bool)
    return votes / np.maximum(n_oob, 1)[:, None], y, counted, bool((n_oob[counted] == 0).any())
