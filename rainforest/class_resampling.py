"""Class imbalance: over- and undersampling by weights from the hash of each row's identity, nothing copied.

:mod:`rainforest.evaluation` re-exports these names.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from rainforest.storage.selection import ClassRateRule, RowSelection, select_rows, weight_rows

from .errors import DataError
from .inputs import training_data


@dataclass
class LabelCounts:
    """A PassTask counting the rows of each label."""

    target: str

    def new_state(self) -> dict:
        return {}

    def update(self, state: dict, batch: pa.RecordBatch, first_row: int) -> dict:
        col = batch.column(self.target)
        if col.null_count:
            raise DataError(f"the target column {self.target!r} has null values")
        vc = pc.value_counts(col.dictionary_decode() if pa.types.is_dictionary(col.type) else col)
        for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            state[v] = state.get(v, 0) + c
        return state

    def merge(self, a: dict, b: dict) -> dict:
        for v, c in b.items():
            a[v] = a.get(v, 0) + c
        return a


def sampling_rates(counts: dict, strategy: str = "undersample") -> dict:
    """Per class, the rate that balances the classes: ``"undersample"`` brings every class down to
    the smallest one (rate ``min / n_c``), ``"oversample"`` up to the largest (``max / n_c``)."""
    if strategy not in ("undersample", "oversample"):
        raise ValueError(f"strategy must be 'undersample' or 'oversample', got {strategy!r}")
    present = {c: n for c, n in counts.items() if n > 0}
    goal = min(present.values()) if strategy == "undersample" else max(present.values())
    return {c: goal / n for c, n in present.items()}


def resample(X, *, target: str, rates: dict | None = None, strategy: str = "undersample", seed: int = 0,
             sample_weight: str | None = None) -> RowSelection:
    """The data with each class resampled at a rate, by weights from the hash of each row's identity.

    A row of class ``c`` counts ``floor(r) + (u < frac(r))`` times (``r = rates[c]``, ``u`` uniform
    from the row's hash): deterministic for a seed, the same on every source and batch size, with
    mean exactly ``r``; nothing is copied.

    Parameters
    ----------
    X : path, Source or table
        The data, holding the label column ``target``.
    rates : dict, optional
        Class -> rate (0.25 keeps a quarter of the class, 3 counts each row three times); classes
        not named count once. Default: :func:`sampling_rates` of the class counts (one more pass).
    strategy : {"undersample", "oversample"}, default="undersample"
        How the default rates balance the classes.
    seed : int, default=0
    sample_weight : str, optional
        A weight column the resampling weights multiply.

    Returns
    -------
    rainforest.storage.selection.RowSelection
        A Source: rows of weight 0 are dropped, and when some rate exceeds 1 (or ``sample_weight``
        is given) the weights are the column ``result.column``; fit with
        ``sample_weight=result.column``.
    """
    data = training_data(X, None, target, sample_weight, None)
    if rates is None:
        rates = sampling_rates(data.source.run_pass(LabelCounts(data.target), [data.target]), strategy)
    rule = ClassRateRule(data.target, tuple(rates.items()), seed)
    if all(r <= 1 for r in rates.values()) and data.weight is None:
        return select_rows(data.source, rule)  # weights 0 or 1: a plain selection, unit weights
    return weight_rows(data.source, rule, base_weight=data.weight)
