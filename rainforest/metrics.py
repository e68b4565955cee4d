"""Evaluation in one pass over data of any size: confusion matrix, precision/recall/F, ROC and AUC
(a regressor's MSE, MAE and R²: :mod:`rainforest.regression_evaluation`, which :func:`evaluate` dispatches to).

Everything a classifier's quality needs is a sum over rows, so one pass accumulates it batch by
batch (:class:`EvaluationTask`, a :class:`rainforest.storage.PassTask`: partial tallies of a distributed
source merge):

* the **confusion matrix** (weights, rows = true class, columns = predicted class), from which
  accuracy, error rate, precision, recall (sensitivity), specificity and F-beta follow, per class
  and averaged as scikit-learn averages them (``"macro"``, ``"weighted"``, ``"micro"``,
  ``"binary"``);
* for the **ROC curve**, per column of ``predict_proba``, the weight of the rows per distinct
  score, and of those the rows of that class.  A tree's scores take one value per leaf and a
  forest's few more, so this is small, and the ROC curve and AUC built from it are exact (the
  very points scikit-learn computes from all the rows).  Its memory grows with the distinct
  scores, not the rows; for scorers with continuous scores (Gaussian naive Bayes) give
  ``score_decimals`` to round them and bound it.

Labels in the data that the model never saw get a row of the confusion matrix (they are always
errors) but no ROC curve (the model has no score for them).  Classes are ordered as scikit-learn
orders them: sorted.

The metrics computed from these tallies, and :class:`Evaluation` itself, live in
:mod:`rainforest.classifier_metrics` (re-exported here).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .classifier_metrics import (AVERAGES, Evaluation, ScoreCounts, auc,  # noqa: F401 (re-exported)
                                 precision_recall_fscore, roc_from_counts, specificity)
from .errors import DataError
from .inputs import training_data
from .regression_evaluation import RegressionEvaluation, RegressionEvaluationTask
from .schema import checked_weights
from .tree import plain_value


# -- the pass ---------------------------------------------------------------------------------------
@dataclass
class Tally:
    """What an evaluation pass accumulates (a PassTask state)."""

    labels: list  # the model's classes, then labels only the data has, in order of appearance
    confusion: np.ndarray  # weights; rows true label, columns predicted label (indices into labels)
    scores: list  # one ScoreCounts per model class, or [] without ROC
    n_rows: int = 0
    n_missing_labels: int = 0  # rows whose label is null: skipped and counted

    def code(self, values: list) -> np.ndarray:
        """Indices of ``values`` into ``labels``, adding the new ones."""
        index = {v: i for i, v in enumerate(self.labels)}
        for v in values:
            if v not in index:
                index[v] = len(self.labels)
                self.labels.append(v)
        k = len(self.labels)
        if k > len(self.confusion):
            grown = np.zeros((k, k))
            grown[:len(self.confusion), :len(self.confusion)] = self.confusion
            self.confusion = grown
        return np.array([index[v] for v in values], np.int64)


@dataclass
class EvaluationTask:
    """A :class:`rainforest.storage.PassTask` scoring ``estimator`` on every row: a :class:`Tally`.

    ``threshold`` (two classes only): predict the positive class ``pos_index`` when its probability
    is at least ``threshold``; otherwise the most probable class (the first on ties, as ``predict``).
    """

    estimator: object
    features: list
    target: str
    where: str
    weight: str | None = None
    threshold: float | None = None
    pos_index: int = 1
    roc: bool = True
    score_decimals: int | None = None

    def new_state(self) -> Tally:
        classes = [plain_value(c) for c in self.estimator.classes_]
        k = len(classes)
        return Tally(classes, np.zeros((k, k)), [ScoreCounts() for _ in range(k)] if self.roc else [])

    def update(self, state: Tally, batch: pa.RecordBatch, first_row: int) -> Tally:
        if batch.num_rows == 0:
            return state
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        proba = np.asarray(self.estimator.predict_proba(table.select(self.features)), np.float64)
        self.add(state, proba, table.column(self.target), checked_weights(table, self.weight, self.where, first_row))
        return state

    def add(self, state: Tally, proba: np.ndarray, labels, w: np.ndarray) -> None:
        """Add rows with their class probabilities, true labels (an Arrow column) and weights."""
        labels = labels.combine_chunks() if isinstance(labels, pa.ChunkedArray) else labels
        if pa.types.is_dictionary(labels.type):
            labels = labels.dictionary_decode()
        if labels.null_count:  # a row without a label cannot be scored: skipped, and counted
            valid = pc.is_valid(labels)
            keep = valid.to_numpy(zero_copy_only=False)
            state.n_missing_labels += int(labels.null_count)
            labels, proba, w = labels.filter(valid), proba[keep], w[keep]
        uniq = pc.unique(labels)
        true = state.code(uniq.to_pylist())[pc.index_in(labels, value_set=uniq).to_numpy(zero_copy_only=False)]
        pred = predicted_index(proba, self.threshold, self.pos_index)
        k = len(state.labels)
        state.confusion += np.bincount(true * k + pred, w, k * k).reshape(k, k)
        state.n_rows += len(true)
        if self.score_decimals is not None:
            proba = np.round(proba, self.score_decimals)
        for c, counts in enumerate(state.scores):
            counts.add(proba[:, c], true == c, w)

    def merge(self, a: Tally, b: Tally) -> Tally:
        index = a.code(list(b.labels))
        ka = len(a.labels)
        cm = np.zeros((ka, ka))
        cm[np.ix_(index, index)] = b.confusion
        a.confusion += cm
        a.n_rows += b.n_rows
        a.n_missing_labels += b.n_missing_labels
        for x, y in zip(a.scores, b.scores):
            x.merge(y)
        return a

    def finish(self, state: Tally) -> "Evaluation":
        order = sorted(range(len(state.labels)), key=lambda i: _sort_key(state.labels[i]))
        labels = [state.labels[i] for i in order]
        model_classes = [plain_value(c) for c in self.estimator.classes_]
        curves = {model_classes[c]: s.flush() for c, s in enumerate(state.scores)}
        pos = labels.index(model_classes[self.pos_index]) if len(model_classes) == 2 else None
        return Evaluation(np.asarray(labels), state.confusion[np.ix_(order, order)], curves, state.n_rows, pos,
                          self.threshold, state.n_missing_labels)


def _sort_key(v):
    return (isinstance(v, str), v)


def predicted_index(proba: np.ndarray, threshold: float | None, pos_index: int) -> np.ndarray:
    """The predicted class index of each row: the most probable (the first on ties), or, with a
    ``threshold`` (two classes), ``pos_index`` when its probability reaches the threshold."""
    if threshold is None:
        return np.argmax(proba, axis=1)
    return np.where(proba[:, pos_index] >= threshold, pos_index, 1 - pos_index)


def positive_index(classes, pos_label) -> int:
    """Index of the positive class of a two-class model: ``pos_label``, by default the greater class (scikit-learn's)."""
    classes = list(classes)
    if len(classes) != 2:
        raise ValueError(f"a decision threshold needs a two-class model; this one has {len(classes)} classes")
    if pos_label is None:
        return 1
    if pos_label not in classes:
        raise ValueError(f"pos_label={pos_label!r} is not a class of the model; classes: {classes}")
    return classes.index(pos_label)


def model_features(estimator) -> list:
    """The columns a fitted model reads: its feature names, or ``x0, x1, ...`` when it was fitted on a bare array."""
    if not hasattr(estimator, "n_features_in_"):
        raise DataError(f"this {type(estimator).__name__} is not fitted yet; call fit first")
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    return [f"x{j}" for j in range(estimator.n_features_in_)]


# -- the entry point -----------------------------------------------------------------------------------
def evaluate(estimator, X, y=None, *, target=None, sample_weight=None, threshold=None, pos_label=None,
             roc: bool = True, score_decimals: int | None = None,
             batch_size: int = 65536) -> Evaluation | RegressionEvaluation:
    """Evaluate a fitted classifier or regressor on data of any size in one pass.

    Parameters
    ----------
    estimator : fitted classifier or regressor
        A classifier: anything with ``classes_`` and ``predict_proba`` (the tree, the forest, naive
        Bayes, AdaBoost); a regressor (the regression tree and forest): scored by ``predict``.
    X : path, list of paths, Source, pyarrow Table, DataFrame, Dask DataFrame or array-like
        The data, as ``fit`` takes it; paths and Sources are streamed batch by batch.
    y : array-like, optional
        Labels, when ``X`` holds only features.
    target : str, optional
        The label column, when ``X`` holds it.
    sample_weight : array-like or str, optional
        Row weights (a column name for streamed data): every count is weighted.
    threshold : float, optional
        Two-class models only: predict the positive class when its probability is ``>= threshold``
        (threshold moving); default: the most probable class.
    pos_label : label, optional
        The positive class (default: the greater of the two classes, as scikit-learn).
    roc : bool, default=True
        Also count the scores for the ROC curves.
    score_decimals : int, optional
        Round the scores to this many decimals before counting them (bounds the ROC counts for
        scorers with continuous scores).
    batch_size : int, default=65536
        Rows per batch.

    Returns
    -------
    Evaluation or RegressionEvaluation
        A classifier's confusion matrix, ROC curves and the metrics from them; a regressor's MSE,
        RMSE, MAE and R² (:mod:`rainforest.regression_evaluation`).
    """
    features = model_features(estimator)
    data = training_data(X, y, target, sample_weight, features)
    columns = list(dict.fromkeys(features + [data.target] + ([data.weight] if data.weight else [])))
    if getattr(estimator, "_regression", False):
        if threshold is not None or pos_label is not None:
            raise ValueError("threshold and pos_label are for classifiers; a regressor has no classes")
        task = RegressionEvaluationTask(estimator, list(features), data.target, data.source.description,
                                        data.weight)
        return task.finish(data.source.run_pass(task, columns, batch_size))
    pos = positive_index(estimator.classes_, pos_label) if (threshold is not None or pos_label is not None) else 1
    if threshold is not None and not (isinstance(threshold, (int, float)) and np.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    task = evaluation_task(estimator, features, data, threshold=threshold, pos_index=pos, roc=roc,
                           score_decimals=score_decimals)
    return task.finish(data.source.run_pass(task, columns, batch_size))


def evaluation_task(estimator, features, data, **kwargs) -> EvaluationTask:
    """The :class:`EvaluationTask` of ``estimator`` over resolved ``data`` (see :func:`rainforest.inputs.training_data`)."""
    return EvaluationTask(estimator, list(features), data.target, data.source.description, data.weight, **kwargs)
