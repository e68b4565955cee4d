"""What a regressor's predictions score against the targets: scikit-learn's ``r2_score``,
``mean_squared_error`` and ``mean_absolute_error``, weighted, over arrays (NumPy only)."""
from __future__ import annotations

import numpy as np


def _weights(y: np.ndarray, sample_weight) -> np.ndarray:
    if sample_weight is None:
        return np.ones(len(y))
    w = np.asarray(sample_weight, np.float64)
    if w.shape != y.shape:
        raise ValueError(f"sample_weight has shape {w.shape}, expected {y.shape}")
    return w


def _pair(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    y_true, y_pred = np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError(f"y_true {y_true.shape} and y_pred {y_pred.shape} must be 1-d and of one length")
    return y_true, y_pred


def r2_score(y_true, y_pred, sample_weight=None) -> float:
    """The coefficient of determination: 1 - (weighted squared errors) / (weighted squares about the
    weighted mean); as scikit-learn, 1.0 for perfect predictions of a constant target, else 0.0 there."""
    y_true, y_pred = _pair(y_true, y_pred)
    w = _weights(y_true, sample_weight)
    numerator = float(np.sum(w * (y_true - y_pred) ** 2))
    denominator = float(np.sum(w * (y_true - np.average(y_true, weights=w)) ** 2))
    if denominator == 0.0:
        return 1.0 if numerator == 0.0 else 0.0
    return 1.0 - numerator / denominator


def mean_squared_error(y_true, y_pred, sample_weight=None) -> float:
    """The weighted mean of the squared errors."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(np.average((y_true - y_pred) ** 2, weights=_weights(y_true, sample_weight)))


def mean_absolute_error(y_true, y_pred, sample_weight=None) -> float:
    """The weighted mean of the absolute errors."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(np.average(np.abs(y_true - y_pred), weights=_weights(y_true, sample_weight)))


__all__ = ["r2_score", "mean_squared_error", "mean_absolute_error"]
