"""Values standing for encoded slots, so that fitted trees route kept rows as they route raw ones.

Rows a fit keeps (in memory or spilled) hold slots, not values.  A later step that needs what a
fitted tree predicts for them (a forest's out-of-bag votes, a boosting round's errors) turns each
slot into one value the tree sends where it sends every value of that slot, and routes those
(:meth:`rainforest.tree.Tree.apply`), so the result is the one the raw rows would give.
"""
from __future__ import annotations

import numpy as np

from .schema import CATEGORICAL
from .value_keys import values_of


def slot_values(attributes: list, S: np.ndarray) -> np.ndarray:
    """Feature values (as :meth:`rainforest.schema.Schema.encode` gives them) that a fitted tree routes
    as it routes the rows whose encoded slots ``S`` holds: a bin's upper edge (+inf above the last; a
    binned split's threshold is a bin edge), an exact attribute's value itself (its slot is the value's
    rank, or, keyed, its bits), a category's code, and NaN for a missing value."""
    X = np.empty(S.shape, np.float64)
    for j, a in enumerate(attributes):
        slots = S[:, j].astype(np.int64)
        if a.kind == CATEGORICAL:
            x = slots.astype(np.float64)
        elif a.keys is not None:
            x = values_of(np.where(slots >= a.n_slots, 0, slots))
        else:
            edges = np.append(np.asarray(a.cuts, np.float64), np.inf)
            x = edges[np.minimum(slots, len(edges) - 1)]
        x[slots >= a.n_slots] = np.nan
        X[:, j] = x
    return X


def predicted_classes(tree, attributes: list, S: np.ndarray) -> np.ndarray:
    """The class index ``tree`` (a :class:`rainforest.tree.Tree` fitted with these ``attributes``)
    predicts for each row of encoded slots ``S``: its leaf's largest class weight, the first on a tie,
    as :meth:`rainforest.DecisionTreeClassifier.predict` gives it for the raw rows."""
    leaves = tree.apply(np.ascontiguousarray(slot_values(attributes, S)))
    return np.argmax(tree.value[leaves], axis=1)
