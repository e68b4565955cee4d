"""Evaluation in one pass over data of any size: confusion matrix, precision/recall/F, ROC and AUC.

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
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .atomic import atomic_path
from .errors import DataError
from .inputs import training_data
from .schema import numeric_values

AVERAGES = (None, "binary", "micro", "macro", "weighted")


# -- metrics of a confusion matrix ----------------------------------------------------------------
def _divide(num: np.ndarray, den: np.ndarray, zero_division: float) -> np.ndarray:
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    out = np.full(np.broadcast(num, den).shape, float(zero_division))
    np.divide(num, den, out=out, where=den != 0)
    return out


def _sums(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per class: true positives, predicted, true (support) and true negatives."""
    cm = np.asarray(cm, np.float64)
    tp = np.diag(cm)
    pred, true = cm.sum(axis=0), cm.sum(axis=1)
    return tp, pred, true, cm.sum() - pred - true + tp


def _average(values: np.ndarray, average, support: np.ndarray, pos_index: int | None):
    if average is None:
        return values
    if average == "binary":
        return float(values[pos_index])
    if average == "macro":
        return float(values.mean()) if len(values) else 0.0
    if average == "weighted":
        return float(np.average(values, weights=support)) if support.sum() > 0 else 0.0
    raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")


def _check_average(average, n_classes: int, pos_index: int | None) -> None:
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    if average == "binary" and (n_classes > 2 or pos_index is None):
        raise ValueError(f"average='binary' needs two classes and a positive class; there are {n_classes} classes: "
                         f"use average='macro', 'weighted', 'micro' or None")


def precision_recall_fscore(cm, *, beta: float = 1.0, average=None, pos_index: int | None = None,
                            zero_division: float = 0.0):
    """Precision, recall and F-beta of a confusion matrix, as :func:`sklearn.metrics.precision_recall_fscore_support`.

    Parameters
    ----------
    cm : ndarray of shape (n_classes, n_classes)
        Rows are true classes, columns predicted classes.
    beta : float, default=1.0
        Weight of recall against precision.
    average : {None, "binary", "micro", "macro", "weighted"}, default=None
        None: one value per class. ``"micro"``: from the counts summed over the classes (equal to
        accuracy in single-label problems); ``"macro"``: unweighted mean over classes;
        ``"weighted"``: mean weighted by support; ``"binary"``: the class ``pos_index``'s.
    pos_index : int, optional
        Index of the positive class for ``average="binary"``.
    zero_division : float, default=0.0
        The value of a ratio whose denominator is 0 (scikit-learn's ``zero_division=0``).

    Returns
    -------
    precision, recall, fbeta : float or ndarray
    """
    tp, pred, true, _ = _sums(cm)
    _check_average(average, len(tp), pos_index)
    if average == "micro":
        tp, pred, true = np.array([tp.sum()]), np.array([pred.sum()]), np.array([true.sum()])
    precision, recall = _divide(tp, pred, zero_division), _divide(tp, true, zero_division)
    if np.isposinf(beta):
        f = recall
    elif beta == 0:
        f = precision
    else:
        b2 = beta * beta
        f = _divide((1 + b2) * tp, b2 * true + pred, zero_division)
    if average == "micro":
        return float(precision[0]), float(recall[0]), float(f[0])
    return tuple(_average(v, average, true, pos_index) for v in (precision, recall, f))


def specificity(cm, *, average=None, pos_index: int | None = None, zero_division: float = 0.0):
    """True negative rate ``TN / (TN + FP)`` of each class (one-vs-rest), averaged as :func:`precision_recall_fscore`."""
    tp, pred, true, tn = _sums(cm)
    _check_average(average, len(tp), pos_index)
    negatives = tn + pred - tp
    if average == "micro":
        return float(_divide(tn.sum(), negatives.sum(), zero_division))
    return _average(_divide(tn, negatives, zero_division), average, true, pos_index)


def roc_from_counts(scores, positives, totals, *, drop_intermediate: bool = True):
    """The ROC curve from the weight of rows per distinct score, as :func:`sklearn.metrics.roc_curve`.

    Parameters
    ----------
    scores : ndarray
        Distinct scores, ascending.
    positives, totals : ndarray
        Weight of the positive rows, and of all rows, at each score.
    drop_intermediate : bool, default=True
        Drop thresholds whose point lies on a straight segment (scikit-learn's default).

    Returns
    -------
    fpr, tpr, thresholds : ndarray
        ``thresholds[0]`` is ``inf``; a row is predicted positive when its score is ``>=`` the threshold.
    """
    s = np.asarray(scores, np.float64)[::-1]
    tps = np.cumsum(np.asarray(positives, np.float64)[::-1])
    fps = np.cumsum(np.asarray(totals, np.float64)[::-1]) - tps
    if drop_intermediate and len(fps) > 2:
        keep = np.flatnonzero(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])
        s, tps, fps = s[keep], tps[keep], fps[keep]
    tps, fps = np.r_[0.0, tps], np.r_[0.0, fps]
    fpr = fps / fps[-1] if fps[-1] > 0 else np.full(fps.shape, np.nan)
    tpr = tps / tps[-1] if tps[-1] > 0 else np.full(tps.shape, np.nan)
    return fpr, tpr, np.r_[np.inf, s]


def auc(fpr, tpr) -> float:
    """Area under a curve by the trapezoidal rule (the ROC points in threshold order)."""
    return float(np.trapezoid(tpr, fpr))


# -- per distinct score counts ---------------------------------------------------------------------
@dataclass
class ScoreCounts:
    """The weight of the rows at each distinct score of one ``predict_proba`` column, and of its class's rows.

    Batches are added to a pending list and merged when it outgrows the merged part, so the cost is
    amortised ``O(d log d)`` for ``d`` distinct scores, and memory ``O(d)`` whatever the rows.
    """

    scores: np.ndarray = field(default_factory=lambda: np.empty(0))
    positives: np.ndarray = field(default_factory=lambda: np.empty(0))
    totals: np.ndarray = field(default_factory=lambda: np.empty(0))
    pending: list = field(default_factory=list)

    def add(self, scores: np.ndarray, positive: np.ndarray, weight: np.ndarray) -> None:
        u, inv = np.unique(scores, return_inverse=True)
        self.pending.append((u, np.bincount(inv, weight * positive, len(u)), np.bincount(inv, weight, len(u))))
        if sum(len(p[0]) for p in self.pending) > max(len(self.scores), 1 << 16):
            self.flush()

    def merge(self, other: "ScoreCounts") -> "ScoreCounts":
        self.pending.append((other.scores, other.positives, other.totals))
        self.pending.extend(other.pending)
        self.flush()
        return self

    def flush(self) -> "ScoreCounts":
        if self.pending:
            parts = [(self.scores, self.positives, self.totals)] + self.pending
            u, inv = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
            self.positives = np.bincount(inv, np.concatenate([p[1] for p in parts]), len(u))
            self.totals = np.bincount(inv, np.concatenate([p[2] for p in parts]), len(u))
            self.scores, self.pending = u, []
        return self


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
        classes = [_plain(c) for c in self.estimator.classes_]
        k = len(classes)
        return Tally(classes, np.zeros((k, k)), [ScoreCounts() for _ in range(k)] if self.roc else [])

    def update(self, state: Tally, batch: pa.RecordBatch, first_row: int) -> Tally:
        if batch.num_rows == 0:
            return state
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        proba = np.asarray(self.estimator.predict_proba(table.select(self.features)), np.float64)
        self.add(state, proba, table.column(self.target), self._weights(table, first_row))
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

    def _weights(self, table: pa.Table, first_row: int) -> np.ndarray:
        if self.weight is None:
            return np.ones(table.num_rows)
        w = numeric_values(table.column(self.weight))
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            raise DataError(f"the weight column {self.weight!r} of {self.where} has a bad value {w[bad][0]!r} "
                            f"at row {first_row + int(np.argmax(bad))} (weights must be finite and >= 0)")
        return w

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
        model_classes = [_plain(c) for c in self.estimator.classes_]
        curves = {model_classes[c]: s.flush() for c, s in enumerate(state.scores)}
        pos = labels.index(model_classes[self.pos_index]) if len(model_classes) == 2 else None
        return Evaluation(np.asarray(labels), state.confusion[np.ix_(order, order)], curves, state.n_rows, pos,
                          self.threshold, state.n_missing_labels)


def _sort_key(v):
    return (isinstance(v, str), v)


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


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
    if not hasattr(estimator, "classes_"):
        raise DataError(f"this {type(estimator).__name__} is not fitted yet; call fit first")
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    return [f"x{j}" for j in range(estimator.n_features_in_)]


# -- the result -------------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """A classifier's results on some data: the confusion matrix and the score counts of its ROC curves.

    Attributes
    ----------
    classes : ndarray
        The labels, sorted: the model's classes and any label found only in the data.
    confusion_matrix : ndarray of shape (n_classes, n_classes)
        Weight of rows of true class ``i`` (row) predicted ``j`` (column), as scikit-learn's.
    curves : dict
        Per model class, its :class:`ScoreCounts` (empty when evaluated without ROC).
    n_rows : int
        Rows evaluated.
    n_missing_labels : int
        Rows skipped because their label is null.
    pos_index : int or None
        For two-class models, the index (into ``classes``) of the positive class.
    threshold : float or None
        The decision threshold the predictions used, if any.
    """

    classes: np.ndarray
    confusion_matrix: np.ndarray
    curves: dict
    n_rows: int
    pos_index: int | None = None
    threshold: float | None = None
    n_missing_labels: int = 0

    def accuracy(self) -> float:
        total = self.confusion_matrix.sum()
        return float(np.trace(self.confusion_matrix) / total) if total > 0 else 0.0

    def error_rate(self) -> float:
        return 1.0 - self.accuracy()

    def _prf(self, beta, average, zero_division):
        return precision_recall_fscore(self.confusion_matrix, beta=beta, average=average, pos_index=self.pos_index,
                                       zero_division=zero_division)

    def precision(self, average=None, zero_division: float = 0.0):
        """Precision per class (``average=None``) or averaged; see :func:`precision_recall_fscore`."""
        return self._prf(1.0, average, zero_division)[0]

    def recall(self, average=None, zero_division: float = 0.0):
        """Recall (sensitivity, true positive rate) per class or averaged."""
        return self._prf(1.0, average, zero_division)[1]

    sensitivity = recall

    def specificity(self, average=None, zero_division: float = 0.0):
        """True negative rate per class (one-vs-rest) or averaged."""
        return specificity(self.confusion_matrix, average=average, pos_index=self.pos_index,
                           zero_division=zero_division)

    def f1(self, average=None, zero_division: float = 0.0):
        return self._prf(1.0, average, zero_division)[2]

    def fbeta(self, beta: float, average=None, zero_division: float = 0.0):
        return self._prf(beta, average, zero_division)[2]

    def balanced_accuracy(self) -> float:
        """Mean recall over the classes present in the data (scikit-learn's ``balanced_accuracy_score``)."""
        tp, _, true, _ = _sums(self.confusion_matrix)
        present = true > 0
        return float(np.mean(tp[present] / true[present])) if present.any() else 0.0

    def support(self) -> np.ndarray:
        return self.confusion_matrix.sum(axis=1)

    def _curve(self, label) -> ScoreCounts:
        if not self.curves:
            raise ValueError("this evaluation was made without ROC counts (roc=False)")
        if label not in self.curves:
            raise ValueError(f"no scores for class {label!r}; the model's classes: {list(self.curves)}")
        return self.curves[label]

    def _pos_label(self, pos_label):
        if pos_label is not None:
            return pos_label
        if len(self.curves) != 2:
            raise ValueError(f"the model has {len(self.curves)} classes: name the class with pos_label=")
        return list(self.curves)[1]

    def roc_curve(self, pos_label=None, *, drop_intermediate: bool = True):
        """ROC curve of one class against the rest: ``fpr, tpr, thresholds`` as :func:`sklearn.metrics.roc_curve`
        on the column ``pos_label`` of ``predict_proba`` (by default the greater of two classes)."""
        c = self._curve(self._pos_label(pos_label))
        return roc_from_counts(c.scores, c.positives, c.totals, drop_intermediate=drop_intermediate)

    def roc_auc(self, pos_label=None, *, average: str | None = "macro"):
        """Area under the ROC curve.

        Two classes: of the positive class's scores (``pos_label``, by default the greater class),
        as :func:`sklearn.metrics.roc_auc_score`. More classes: one-vs-rest per class, averaged
        (``"macro"``, or ``"weighted"`` by the classes' rows; ``None`` gives a dict per class), as
        ``roc_auc_score(..., multi_class="ovr")``; classes with no positive or no negative rows are
        left out of the average.
        """
        if len(self.curves) == 2 and pos_label is None and average is not None:
            return auc(*self.roc_curve()[:2])
        if pos_label is not None:
            return auc(*self.roc_curve(pos_label)[:2])
        per_class = {}
        weights = []
        for label, c in self.curves.items():
            pos = c.positives.sum()
            if pos > 0 and c.totals.sum() - pos > 0:
                per_class[label] = auc(*roc_from_counts(c.scores, c.positives, c.totals)[:2])
                weights.append(pos)
        if average is None:
            return per_class
        if not per_class:
            return float("nan")
        if average == "macro":
            return float(np.mean(list(per_class.values())))
        if average == "weighted":
            return float(np.average(list(per_class.values()), weights=weights))
        raise ValueError(f"average must be 'macro', 'weighted' or None, got {average!r}")

    def summary(self, beta: float = 1.0) -> dict:
        """Every metric, JSON-able: overall, per class and averaged (for reports and the CLI)."""
        per_class = {}
        p, r, f = self._prf(beta, None, 0.0)
        spec = self.specificity()
        for i, label in enumerate(self.classes):
            per_class[str(label)] = {"precision": float(p[i]), "recall": float(r[i]), "specificity": float(spec[i]),
                                     f"f{beta:g}": float(f[i]), "support": float(self.support()[i])}
        averages = {}
        for avg in ("macro", "weighted", "micro"):
            pa_, ra, fa = self._prf(beta, avg, 0.0)
            averages[avg] = {"precision": pa_, "recall": ra, "specificity": self.specificity(avg), f"f{beta:g}": fa}
        out = {"n_rows": self.n_rows, "accuracy": self.accuracy(), "error_rate": self.error_rate(),
               "balanced_accuracy": self.balanced_accuracy(), "classes": [str(c) for c in self.classes],
               "confusion_matrix": self.confusion_matrix.tolist(), "per_class": per_class, "averages": averages}
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.curves:
            out["roc_auc"] = self.roc_auc() if len(self.curves) == 2 else {
                "macro": self.roc_auc(), "weighted": self.roc_auc(average="weighted"),
                "per_class": {str(k): v for k, v in self.roc_auc(average=None).items()}}
        return out

    def report(self, digits: int = 3) -> str:
        """A text report like scikit-learn's ``classification_report``, with specificity and the AUC."""
        s = self.summary()
        width = max([len(c) for c in s["classes"]] + [12])
        head = f"{'':>{width}} {'precision':>10} {'recall':>10} {'specificity':>11} {'f1':>10} {'support':>10}"
        lines = [head, ""]
        for c, m in s["per_class"].items():
            lines.append(f"{c:>{width}} {m['precision']:>10.{digits}f} {m['recall']:>10.{digits}f} "
                         f"{m['specificity']:>11.{digits}f} {m['f1']:>10.{digits}f} {m['support']:>10.0f}")
        lines.append("")
        total = self.confusion_matrix.sum()
        for avg, m in s["averages"].items():
            lines.append(f"{avg + ' avg':>{width}} {m['precision']:>10.{digits}f} {m['recall']:>10.{digits}f} "
                         f"{m['specificity']:>11.{digits}f} {m['f1']:>10.{digits}f} {total:>10.0f}")
        lines += ["", f"accuracy {s['accuracy']:.{digits}f}   error rate {s['error_rate']:.{digits}f}   "
                      f"balanced accuracy {s['balanced_accuracy']:.{digits}f}"]
        if "roc_auc" in s:
            a = s["roc_auc"]
            lines.append(f"ROC AUC {a:.{digits}f}" if isinstance(a, float) else
                         f"ROC AUC (one-vs-rest) macro {a['macro']:.{digits}f}   weighted {a['weighted']:.{digits}f}")
        return "\n".join(lines)

    def plot_roc(self, path, *, title: str | None = None) -> str:
        """Write the ROC curves (two classes: the positive class; more: one per class, one-vs-rest) as a PNG.

        The file is written to a temporary name and renamed. matplotlib is imported here, with a clear
        error if it is missing.
        """
        try:
            import matplotlib
            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("writing a ROC curve needs matplotlib: pip install matplotlib") from None
        labels = [self._pos_label(None)] if len(self.curves) == 2 else list(self.curves)
        fig, ax = plt.subplots(figsize=(5, 5))
        try:
            for label in labels:
                fpr, tpr, _ = self.roc_curve(label)
                if np.isnan(fpr).any() or np.isnan(tpr).any():
                    continue
                ax.plot(fpr, tpr, label=f"{label} (AUC {auc(fpr, tpr):.3f})")
            ax.plot([0, 1], [0, 1], linestyle=":", color="grey")
            ax.set(xlabel="false positive rate", ylabel="true positive rate", title=title or "ROC curve",
                   xlim=(0, 1), ylim=(0, 1.01))
            ax.legend(loc="lower right", fontsize="small")
            _save_png(fig, path)
        finally:
            plt.close(fig)
        return os.fspath(path)


def _save_png(fig, path) -> None:
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=100)


# -- the entry point -----------------------------------------------------------------------------------
def evaluate(estimator, X, y=None, *, target=None, sample_weight=None, threshold=None, pos_label=None,
             roc: bool = True, score_decimals: int | None = None, batch_size: int = 65536) -> Evaluation:
    """Evaluate a fitted classifier on data of any size in one pass.

    Parameters
    ----------
    estimator : fitted classifier
        Anything with ``classes_`` and ``predict_proba`` (the tree, the forest, naive Bayes, AdaBoost).
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
    Evaluation
    """
    features = model_features(estimator)
    data = training_data(X, y, target, sample_weight, features)
    pos = positive_index(estimator.classes_, pos_label) if (threshold is not None or pos_label is not None) else 1
    if threshold is not None and not (isinstance(threshold, (int, float)) and np.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    task = evaluation_task(estimator, features, data, threshold=threshold, pos_index=pos, roc=roc,
                           score_decimals=score_decimals)
    columns = list(dict.fromkeys(features + [data.target] + ([data.weight] if data.weight else [])))
    return task.finish(data.source.run_pass(task, columns, batch_size))


def evaluation_task(estimator, features, data, **kwargs) -> EvaluationTask:
    """The :class:`EvaluationTask` of ``estimator`` over resolved ``data`` (see :func:`rainforest.inputs.training_data`)."""
    return EvaluationTask(estimator, list(features), data.target, data.source.description, data.weight, **kwargs)
