"""What every tree learner resolves before growth, from its parameters: shared by the decision tree,
the forest, boosted trees and BOAT, so none calls another's private methods.

Each function reads the parameters it needs off a tree-like estimator (``criterion``, ``max_depth``,
``min_samples_*``, ``max_bins``, ``sample_size``, ...) by name; an estimator without one of the
optional ones gets the tree's default.
"""
from __future__ import annotations

import math

import numpy as np

from .grow import GrowParams
from .params import is_int
from .profile import ProfileTask


def batch_size_for(est, budget: int, n_features: int) -> int:
    """``est.batch_size``, or rows per batch derived from the memory budget (a quarter of it)."""
    row_bytes = 8 * 4 * (n_features + 2)
    return est.batch_size or int(min(1 << 18, max(1024, budget // 4 // row_bytes)))


def profile_pass(est, data, kinds: dict, batch_size: int, seed: int, key_cap: int | None = None,
                 key_budget: int | None = None):
    """The profiling pass: the schema (classes or a regressor's target range, categories, cuts) and what it
    counted.

    Numeric attributes with more than ``est.max_bins`` distinct values get bin edges from a sample
    of ``est.sample_size`` rows, drawn by a hash of the row number with ``seed``.  In exact mode, those
    with more than ``key_cap`` distinct values (:func:`value_key_cap`) are keyed, their bins from the
    same sample: more bins on more rows, as the memory budget ``key_budget`` allows, where it is given
    (:func:`rainforest.count_bins.key_bin_count`), else :data:`rainforest.count_bins.EXACT_BINS`.
    """
    task = ProfileTask(kinds, data.target, data.weight, data.source.description, exact=est.max_bins is None,
                       max_bins=est.max_bins or 0, sample_rows=est.sample_size, seed=int(seed),
                       regression=getattr(est, "_regression", False), key_cap=key_cap, key_budget=key_budget)
    columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
    profile = data.source.run_pass(task, columns, batch_size)
    return task.schema(profile), profile


#: exact mode: a column with more distinct values than this is keyed (rainforest.value_keys) where allowed
KEY_CAP = 1 << 20


def value_key_cap(est, data) -> int | None:
    """How many distinct values an exact tree's profile keeps of a numeric column before it keys the
    column instead (:mod:`rainforest.value_keys`): :data:`KEY_CAP` where growth counts such columns in bins and
    gathers the values of the few that matter (:func:`rainforest.plan.counted_slots_for`): a
    classifier, unit weights (no weight column, no ``class_weight``: other weights' sums depend on
    their order, so those trees count one slot per value), rows that a level reads again cheaply
    (``algorithm`` ``"hybrid"`` or ``"write"``; not SQL rows kept in the database).  Else None: every
    distinct value is kept, as the one-slot-per-value counting needs.  ``est`` without ``max_bins``
    (BOAT, whose subtrees are always exact) counts as exact."""
    source = data.source
    if getattr(est, "max_bins", None) is not None or getattr(est, "_regression", False) or data.weight is not None \
            or getattr(est, "class_weight", None) is not None \
            or getattr(est, "algorithm", "hybrid") not in ("hybrid", "write") \
            or (getattr(source, "transfer_mode", None) is not None and getattr(source, "distributed", False)) \
            or not GrowParams().exact_bins:  # growth told to count one slot per value (exact_bins=0)
        return None
    return KEY_CAP


def class_weights(class_weight, classes, counts: dict, n_rows: int) -> np.ndarray | None:
    """The weight of each class (``classes`` order) from a ``class_weight`` parameter, or None."""
    cw = class_weight
    if cw is None:
        return None
    if isinstance(cw, str):
        if cw != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
        return np.array([n_rows / (len(classes) * counts[c]) for c in classes], dtype=np.float64)
    if not isinstance(cw, dict):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
    for k in cw:
        if k not in counts:
            raise ValueError(f"class_weight names class {k!r}, which is not in the target")
    weights = np.array([float(cw.get(c, 1.0)) for c in classes], dtype=np.float64)
    if not weights.any():
        raise ValueError(f"class_weight gives every class a weight of 0: {cw!r}")
    return weights


def grow_params(est, n_rows: int, *, algorithm: str | None = None, spill_dir=None) -> GrowParams:
    """The growth parameters of ``est`` on ``n_rows`` rows (fractional ``min_samples_*`` resolved).

    ``algorithm`` and ``spill_dir`` default to ``est``'s own (``"hybrid"`` and None without them).
    """
    algorithm = algorithm or getattr(est, "algorithm", "hybrid")
    return GrowParams(criterion=est.criterion, multiway=getattr(est, "categorical_split", "binary") == "multiway",
                      max_depth=est.max_depth,
                      min_samples_split=resolve_count(est.min_samples_split, n_rows, 2),
                      min_samples_leaf=resolve_count(est.min_samples_leaf, n_rows, 1),
                      min_weight_fraction_leaf=getattr(est, "min_weight_fraction_leaf", 0.0),
                      min_impurity_decrease=getattr(est, "min_impurity_decrease", 0.0),
                      hybrid=algorithm == "hybrid", write=algorithm in ("hybrid", "write"),
                      vertical=algorithm != "read",
                      spill_dir=spill_dir if spill_dir is not None else getattr(est, "spill_dir", None))


def resolve_count(v, n_rows: int, least: int) -> int:
    """A count parameter (an integer, or a fraction of ``n_rows``) as a count."""
    return int(v) if is_int(v) else max(least, int(math.ceil(v * n_rows)))
