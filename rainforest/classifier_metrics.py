"""A classifier's metrics from its tallies: confusion-matrix metrics, the exact ROC curve from per-score counts, and :class:`Evaluation`.

The tallies come from one pass over the data (:mod:`rainforest.metrics`); everything here works
on them alone, never on the rows: precision, recall (sensitivity), specificity and F-beta of a
confusion matrix, per class and averaged as scikit-learn averages them (``"macro"``,
``"weighted"``, ``"micro"``, ``"binary"``); the ROC curve and AUC from the weight of the rows per
distinct score (:class:`ScoreCounts`); and :class:`Evaluation`, which gathers them with a text
report and a PNG of the ROC curves.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from .errors import MissingDependency
from .atomic import atomic_path

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
            raise MissingDependency("writing a ROC curve needs matplotlib: pip install matplotlib") from None
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
