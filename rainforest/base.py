"""The base every rainforest estimator shares: parameters, tags, the fit preamble, the fitted check.

Plain conventions, one place each:

* parameters: :class:`rainforest.params.ParamsMixin` (declared constraints, nested ``get_params``);
* scikit-learn tags: :class:`rainforest.sklearn_compat.ClassifierTags`;
* the fit preamble: :meth:`Classifier.fitting` checks the parameters, turns the input into a
  source, finds the attributes' kinds, runs the body with the estimator's Numba threads, then sets
  the fitted inputs (``classes_``, ``n_features_in_``, ``feature_names_in_``) and ``n_passes_``;
* not fitted yet: :meth:`Classifier._check_fitted`, a :class:`rainforest.NotFittedError`;
* ``predict``, ``predict_log_proba`` and ``score`` from ``predict_proba``.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .errors import NotFittedError
from .inputs import TrainingData, accuracy, attribute_kinds, in_memory_rows, training_data
from .params import ParamsMixin
from .sklearn_compat import ClassifierTags
from .threads import numba_threads


@dataclass
class FitRun:
    """What the fit preamble resolved, handed to the learner's own fitting."""

    data: TrainingData
    kinds: dict  # feature -> kind (rainforest.schema.NUMERIC / CATEGORICAL)
    passes_before: int
    classes: object = None  # the learner sets the classes it found
    extra_passes: int = 0  # passes made over other sources than ``data.source`` (boosting's weighted views)

    @property
    def source(self):
        return self.data.source


def check_in_memory_input(X, y) -> None:
    """Refuse, in scikit-learn's words, in-memory input no classifier can take: a sparse matrix, and
    continuous labels (floats that are not whole numbers)."""
    if hasattr(X, "tocsr") or hasattr(X, "sparse") and hasattr(getattr(X, "sparse", None), "to_dense"):
        raise TypeError("sparse input is not supported: pass a dense array, a DataFrame or a path")
    if y is None or isinstance(y, str):
        return
    labels = np.asarray(y)
    if labels.dtype.kind == "f" and labels.size:
        finite = labels[np.isfinite(labels)]
        if not np.array_equal(finite, np.round(finite)):
            raise ValueError("Unknown label type: continuous (a classifier needs class labels, not real values)")


class Classifier(ClassifierTags, ParamsMixin):
    """Base of every rainforest classifier (see the module docstring)."""

    #: the fitted attribute whose presence means "fitted"
    _fitted_attribute = "classes_"

    # -- fitting ---------------------------------------------------------------------------------
    @contextmanager
    def fitting(self, X, y=None, *, target=None, sample_weight=None, features=None, categorical_features=None,
                n_jobs=None):
        """The fit preamble and epilogue around a learner's own fitting (a context manager).

        Checks the parameters, resolves the input (:func:`rainforest.inputs.training_data`) and the
        attributes' kinds, and runs the body under the estimator's ``n_jobs`` Numba threads. When
        the body ends without an error, sets ``classes_`` (from ``run.classes``), the input
        attributes and ``n_passes_``. Inputs held in memory with few rows run on one thread
        (:mod:`rainforest.threads`).
        """
        self.validate_params()
        check_in_memory_input(X, y)
        data = training_data(X, y, target, sample_weight, features)
        cat = self.categorical_features if categorical_features is None else categorical_features
        run = FitRun(data, attribute_kinds(data.source, data.features, cat), data.source.n_passes)
        n_jobs = getattr(self, "n_jobs", -1) if n_jobs is None else n_jobs
        with numba_threads(n_jobs, rows=in_memory_rows(data.source)), data.source.during_fit():
            yield run
        if run.classes is not None:
            self._set_fitted_inputs(run.classes, data.features, data.has_names)
        self.n_passes_ = data.source.n_passes - run.passes_before + run.extra_passes

    def _set_fitted_inputs(self, classes, features, has_names: bool) -> None:
        self.classes_ = np.asarray(classes)
        self.n_classes_ = len(self.classes_)
        self.n_outputs_ = 1
        self.n_features_in_ = len(features)
        if has_names:
            self.feature_names_in_ = np.asarray(features, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # a refit on unnamed columns
            del self.feature_names_in_

    def _check_fitted(self) -> None:
        if not hasattr(self, self._fitted_attribute):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")

    # -- prediction from predict_proba -------------------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """The most probable class of each row (the first one on ties, as scikit-learn)."""
        proba = self.predict_proba(X)  # checks that the model is fitted before classes_ is read
        return self.classes_[np.argmax(proba, axis=1)]

    def predict_log_proba(self, X) -> np.ndarray:
        """The logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def score(self, X, y=None, *, target=None, sample_weight=None) -> float:
        """Accuracy on ``X``; with a path or Source, the labels come from ``target``.

        ``sample_weight`` weighs the rows (as scikit-learn's ``score``); it needs ``y``.
        """
        if sample_weight is None:
            return accuracy(self.predict, X, y, target)
        if y is None:
            raise ValueError("score with sample_weight needs the labels as y")
        w = np.asarray(sample_weight, dtype=np.float64)
        right = np.asarray(self.predict(X)) == np.asarray(y)
        return float(np.sum(w * right) / np.sum(w))
