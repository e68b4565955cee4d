"""The base every rainforest estimator shares: parameters, tags, the fit preamble, the fitted check.

Plain conventions, one place each:

* parameters: :class:`rainforest.params.ParamsMixin` (declared constraints, nested ``get_params``);
* scikit-learn tags: :class:`rainforest.sklearn_compat.ClassifierTags` / ``RegressorTags``;
* the fit preamble: :meth:`Estimator.fitting` checks the parameters, turns the input into a
  source, finds the attributes' kinds, runs the body with the estimator's Numba threads, then sets
  the fitted inputs (``classes_`` for a classifier, ``n_features_in_``, ``feature_names_in_``) and
  ``n_passes_``;
* not fitted yet: :meth:`Estimator._check_fitted`, a :class:`rainforest.NotFittedError`;
* a :class:`Classifier`'s ``predict``, ``predict_log_proba`` and ``score`` from ``predict_proba``; a
  :class:`Regressor`'s ``score``, R².
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .errors import DataError, NotFittedError
from .inputs import TrainingData, accuracy, attribute_kinds, in_memory_rows, target_values, training_data
from .params import ParamsMixin
from .regression_metrics import r2_score
from .sklearn_compat import ClassifierTags, RegressorTags
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


def check_in_memory_input(X, y, regression: bool = False) -> None:
    """Refuse, in scikit-learn's words, in-memory input no learner can take: a sparse matrix; for a
    classifier, continuous labels (floats that are not whole numbers); for a regressor, labels that
    are not numbers."""
    if hasattr(X, "tocsr") or hasattr(X, "sparse") and hasattr(getattr(X, "sparse", None), "to_dense"):
        raise TypeError("sparse input is not supported: pass a dense array, a DataFrame or a path")
    if y is None or isinstance(y, str):
        return
    labels = np.asarray(y)
    if regression:
        if labels.dtype.kind not in "iuf" and labels.size:
            raise ValueError(f"a regressor needs a numeric target, got values of type {labels.dtype} "
                             f"(for class labels use a classifier, e.g. DecisionTreeClassifier)")
        return
    if labels.dtype.kind == "f" and labels.size:
        finite = labels[np.isfinite(labels)]
        if not np.array_equal(finite, np.round(finite)):
            raise ValueError("Unknown label type: continuous (a classifier needs class labels, not real values; "
                             "for a numeric target use a regressor, e.g. DecisionTreeRegressor)")


class Estimator(ParamsMixin):
    """What every rainforest estimator shares: the fit preamble and the fitted check (see the module
    docstring); :class:`Classifier` and :class:`Regressor` add what their kind predicts."""

    #: the fitted attribute whose presence means "fitted"
    _fitted_attribute = "classes_"
    #: whether the estimator predicts numbers (a regressor) rather than classes
    _regression = False

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
        check_in_memory_input(X, y, self._regression)
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
        """``n_features_in_``, ``feature_names_in_`` and ``n_outputs_`` (a classifier adds its ``classes``)."""
        self.n_outputs_ = 1
        self.n_features_in_ = len(features)
        if has_names:
            self.feature_names_in_ = np.asarray(features, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # a refit on unnamed columns
            del self.feature_names_in_

    def _check_fitted(self) -> None:
        if not hasattr(self, self._fitted_attribute):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")


class Classifier(ClassifierTags, Estimator):
    """Base of every rainforest classifier (see the module docstring)."""

    def _set_fitted_inputs(self, classes, features, has_names: bool) -> None:
        self.classes_ = np.asarray(classes)
        self.n_classes_ = len(self.classes_)
        super()._set_fitted_inputs(classes, features, has_names)

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


class Regressor(RegressorTags, Estimator):
    """Base of every rainforest regressor: the fit preamble of :class:`Estimator` (its learner sets
    ``run.classes`` to the empty list a regressor's label has; there is no ``classes_``), and ``score``
    as R²."""

    _fitted_attribute = "n_features_in_"
    _regression = True

    def score(self, X, y=None, *, target=None, sample_weight=None) -> float:
        """The coefficient of determination R² of :meth:`predict` on ``X`` (scikit-learn's ``r2_score``);
        with a path or Source, the targets come from ``target``.

        ``sample_weight`` weighs the rows; it needs ``y``.
        """
        if y is None:
            if target is None:
                raise DataError("score needs y, or target= with a path or a Source")
            if sample_weight is not None:
                raise ValueError("score with sample_weight needs the targets as y")
            y = target_values(X, target)
        return r2_score(np.asarray(y, np.float64), np.asarray(self.predict(X), np.float64), sample_weight)
