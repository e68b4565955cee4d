"""Values standing for encoded slots, so that fitted trees route kept rows as they route raw ones.

Rows a fit keeps (in memory or spilled) hold slots, not values.  A later step that needs what a
fitted tree predicts for them (a forest's out-of-bag votes, a boosting round's errors) turns each
slot into one value the tree sends where it sends every value of that slot, and routes those
(:meth:`rainforest.tree.Tree.apply`), so the result is the one the raw rows would give.
"""
from __future__ import annotations

import numba
import numpy as np

from .schema import CATEGORICAL
from .value_keys import values_of


def slot_tables(attributes: list) -> tuple:
    """What :func:`slot_values` looks slots up in: one table of values per attribute laid end to end
    (its ``n_slots`` values; a keyed attribute has none, start -1), each table's start, and each
    attribute's ``n_slots`` (slots from there on are missing values)."""
    tables, starts, n_slots, at = [], np.full(len(attributes), -1, np.int64), np.zeros(len(attributes), np.int64), 0
    for j, a in enumerate(attributes):
        n_slots[j] = a.n_slots
        if a.kind != CATEGORICAL and a.keys is not None:
            continue
        slots = np.arange(a.n_slots)
        if a.kind == CATEGORICAL:
            table = slots.astype(np.float64)
        else:
            edges = np.append(np.asarray(a.cuts, np.float64), np.inf)
            table = edges[np.minimum(slots, len(edges) - 1)]
        tables.append(table)
        starts[j], at = at, at + len(table)
    return (np.concatenate(tables) if tables else np.empty(0)), starts, n_slots


@numba.njit(cache=True, parallel=True, nogil=True)
def _looked_up(S, table, starts, n_slots, X):
    """``X[i, j]``: slot ``S[i, j]``'s value in attribute ``j``'s table, NaN from ``n_slots[j]`` on
    (attributes of start -1 are left as they are)."""
    for i in numba.prange(S.shape[0]):
        for j in range(S.shape[1]):
            if starts[j] < 0:
                continue
            s = np.int64(S[i, j])
            X[i, j] = table[starts[j] + s] if s < n_slots[j] else np.nan


def slot_values(attributes: list, S: np.ndarray, tables: tuple | None = None) -> np.ndarray:
    """Feature values (as :meth:`rainforest.schema.Schema.encode` gives them) that a fitted tree routes
    as it routes the rows whose encoded slots ``S`` holds: a bin's upper edge (+inf above the last; a
    binned split's threshold is a bin edge), an exact attribute's value itself (its slot is the value's
    rank, or, keyed, its bits), a category's code, and NaN for a missing value.  ``tables``:
    :func:`slot_tables` of the attributes, made once for many calls (None: made here)."""
    table, starts, n_slots = slot_tables(attributes) if tables is None else tables
    X = np.empty(S.shape, np.float64)
    _looked_up(S, table, starts, n_slots, X)
    for j in np.flatnonzero(starts < 0):  # keyed: a slot is the value's bits
        slots = S[:, j].astype(np.int64)
        x = values_of(np.where(slots >= n_slots[j], 0, slots))
        x[slots >= n_slots[j]] = np.nan
        X[:, j] = x
    return X


def predicted_classes(tree, attributes: list, S: np.ndarray, tables: tuple | None = None) -> np.ndarray:
    """The class index ``tree`` (a :class:`rainforest.tree.Tree` fitted with these ``attributes``)
    predicts for each row of encoded slots ``S``: its leaf's largest class weight, the first on a tie,
    as :meth:`rainforest.DecisionTreeClassifier.predict` gives it for the raw rows.  ``tables``: as
    :func:`slot_values`'s."""
    leaf_class = np.argmax(tree.value, axis=1)  # per node: the same as per row, once
    return leaf_class[tree.apply(slot_values(attributes, S, tables))]
