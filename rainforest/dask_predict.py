"""Lazy prediction on Dask DataFrames: ``predict`` and friends map over the partitions.

An estimator class decorated with :func:`lazy_on_dask` answers a Dask DataFrame with
a Dask collection instead of a numpy array: ``predict`` gives a Dask Series aligned
with the input's partitions (so ``ddf.assign(pred=clf.predict(ddf))`` works), and
``predict_proba``, ``predict_log_proba``, ``decision_function`` give a Dask Array of
one row per input row (its chunk lengths unknown until computed, as for any filtered
DataFrame). Nothing is read until ``compute()``; each partition is then predicted by
the estimator's own method, on the worker that holds it. The fitted model travels
once per graph, as one literal that every partition task depends on.

Checks that can fail (not fitted, a missing feature column) run at once on the
DataFrame's empty metadata, so mistakes surface at the call, not at ``compute()``.
"""
from __future__ import annotations

import functools
import uuid

import numpy as np

from rainforest.storage.dask_frame import is_dask_dataframe

from .errors import DataError

#: method -> what it returns per row: one label, or one row of numbers
_METHODS = {"predict": "labels", "apply": "labels", "predict_proba": "matrix", "predict_log_proba": "matrix",
            "decision_function": "matrix"}


def lazy_on_dask(cls):
    """Class decorator: the prediction methods of ``cls`` (its own or inherited) become lazy on Dask DataFrames.

    Other inputs go to the original methods unchanged.
    """
    for name, kind in _METHODS.items():
        method = getattr(cls, name, None)  # its own or inherited (rainforest.params.ClassifierMixin)
        if method is not None:
            setattr(cls, name, _lazy_method(method, kind))
    return cls


def _lazy_method(method, kind: str):
    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        if is_dask_dataframe(X) and not args and not kwargs:
            return map_partitions(self, method.__name__, X, kind)
        return method(self, X, *args, **kwargs)

    return wrapper


def map_partitions(estimator, name: str, X, kind: str):
    """``estimator.<name>`` of every partition of the Dask DataFrame ``X``, as a lazy Dask collection."""
    from dask import delayed

    X = _features(estimator, X)
    sample = getattr(estimator, name)(X._meta)  # fails now if not fitted or a column is missing
    model = delayed(estimator, name=f"rainforest-model-{uuid.uuid4().hex[:12]}", traverse=False)
    if kind == "labels":
        meta = _as_series(np.asarray(sample), X._meta.index)
        return X.map_partitions(_predict_series, model, name, meta=meta)
    width = np.asarray(sample).shape[1] if np.ndim(sample) == 2 else 1
    meta = _as_frame(np.empty((0, width)), X._meta.index)
    return X.map_partitions(_predict_frame, model, name, meta=meta).to_dask_array()


def _features(estimator, X):
    """``X`` narrowed to the model's feature columns (so Parquet reads only those), or unchanged."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return X  # fitted on unnamed columns: the estimator matches them by position
    names = [str(n) for n in names]
    missing = [c for c in names if c not in X.columns]
    if missing:
        raise DataError(f"the Dask DataFrame lacks the feature column {missing[0]!r} the model was trained with")
    return X[names]


# -- what runs per partition ----------------------------------------------------------------
def _predict_series(frame, estimator, name):
    return _as_series(np.asarray(getattr(estimator, name)(frame)), frame.index)


def _predict_frame(frame, estimator, name):
    out = np.asarray(getattr(estimator, name)(frame))
    return _as_frame(out.reshape(len(frame), -1), frame.index)


def _as_series(values, index):
    import pandas as pd

    return pd.Series(values, index=index, name="prediction")


def _as_frame(values, index):
    import pandas as pd

    return pd.DataFrame(values, index=index, columns=list(range(values.shape[1])))
