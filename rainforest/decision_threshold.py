"""A two-class model's decision threshold: chosen on validation data in one pass, and predictions with it.

:mod:`rainforest.evaluation` re-exports these names.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import positive_index, predicted_index, roc_from_counts
from .tree import plain_value


@dataclass
class ThresholdChoice:
    """A decision threshold chosen on validation data: predict ``pos_label`` when its probability is ``>= threshold``.

    ``thresholds`` (descending, the distinct validation scores, then ``inf`` for "never") and
    ``values`` (the objective at each) describe the whole trade-off.
    """

    threshold: float
    value: float
    objective: str
    pos_label: object
    thresholds: np.ndarray
    values: np.ndarray


OBJECTIVES = ("f1", "fbeta", "cost", "accuracy", "balanced_accuracy")


def choose_threshold(estimator, X, y=None, *, target=None, sample_weight=None, objective: str = "f1",
                     beta: float = 1.0, cost_fp: float = 1.0, cost_fn: float = 1.0, pos_label=None,
                     batch_size: int = 65536) -> ThresholdChoice:
    """Choose a two-class model's decision threshold on validation data, in one pass.

    Every distinct score of the positive class on the validation data is a candidate (a row is
    predicted positive when its score is ``>=`` the threshold); the one giving the best
    ``objective`` wins (ties: the highest threshold).

    Parameters
    ----------
    estimator : fitted two-class classifier
    X, y, target, sample_weight
        The validation data, as :func:`rainforest.metrics.evaluate` takes it.
    objective : {"f1", "fbeta", "cost", "accuracy", "balanced_accuracy"}, default="f1"
        ``"cost"`` minimizes ``cost_fp * FP + cost_fn * FN`` (a cost ratio); the others are maximized.
    beta : float, default=1.0
        For ``"fbeta"``.
    cost_fp, cost_fn : float, default=1.0
        Costs of a false positive and of a false negative. With calibrated probabilities the
        optimal threshold is ``cost_fp / (cost_fp + cost_fn)``; here it is measured on the data.
    pos_label : label, optional
        The positive class (default: the greater class).

    Returns
    -------
    ThresholdChoice
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if cost_fp < 0 or cost_fn < 0 or cost_fp + cost_fn == 0:
        raise ValueError(f"costs must be >= 0 and not both 0, got cost_fp={cost_fp!r}, cost_fn={cost_fn!r}")
    from .metrics import evaluate

    pos = positive_index(estimator.classes_, pos_label)
    label = estimator.classes_[pos]
    ev = evaluate(estimator, X, y, target=target, sample_weight=sample_weight, pos_label=label, batch_size=batch_size)
    c = ev.curves[plain_value(label)]
    fpr, tpr, thresholds = roc_from_counts(c.scores, c.positives, c.totals, drop_intermediate=False)
    p, n = c.positives.sum(), c.totals.sum() - c.positives.sum()
    tp, fp = np.nan_to_num(tpr) * p, np.nan_to_num(fpr) * n
    fn, tn = p - tp, n - fp
    # candidates: each distinct score (descending), then "never positive" (the ROC curve's first point)
    tp, fp, fn, tn, thresholds = (np.r_[v[1:], v[0]] for v in (tp, fp, fn, tn, thresholds))
    with np.errstate(divide="ignore", invalid="ignore"):
        if objective in ("f1", "fbeta"):
            b2 = 1.0 if objective == "f1" else beta * beta
            values = np.nan_to_num((1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp))
        elif objective == "cost":
            values = cost_fp * fp + cost_fn * fn
        elif objective == "accuracy":
            values = (tp + tn) / (p + n)
        else:
            values = np.nan_to_num(tp / p) / 2 + np.nan_to_num(tn / n) / 2
    best = int(np.argmin(values) if objective == "cost" else np.argmax(values))
    return ThresholdChoice(float(thresholds[best]), float(values[best]), objective, label, thresholds, values)


def predict_threshold(estimator, X, threshold: float, *, pos_label=None) -> np.ndarray:
    """Predictions of a two-class model with a decision threshold: ``pos_label`` (default the
    greater class) when its probability is ``>= threshold``, else the other class."""
    pos = positive_index(estimator.classes_, pos_label)
    return np.asarray(estimator.classes_)[predicted_index(np.asarray(estimator.predict_proba(X)), threshold, pos)]
