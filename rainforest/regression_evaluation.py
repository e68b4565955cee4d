"""A regressor's evaluation in one pass over data of any size: MSE, RMSE, MAE and R².

Each is a sum over rows, so one pass accumulates them batch by batch (:class:`RegressionEvaluationTask`,
a :class:`rainforest.storage.PassTask` whose partial tallies merge, as a distributed source needs):
the weight, the weighted squared and absolute errors, and the target's weighted mean and sum of
squares about it.  The last two are kept as ``(weight, mean, M2)`` and merged by Chan et al.'s
formula, not as raw sums of ``y`` and ``y**2``, so R² keeps its precision when the mean is large
against the spread (a raw ``sum(y**2) - sum(y)**2 / n`` cancels to nothing there).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import DataError
from .schema import check_numeric_target, checked_weights, numeric_values


@dataclass
class RegressionTally:
    """What a regressor's evaluation pass accumulates (a PassTask state)."""

    weight: float = 0.0  # of the rows scored
    mean: float = 0.0  # the target's weighted mean
    m2: float = 0.0  # the target's weighted sum of squares about its mean
    squared_error: float = 0.0  # weighted
    absolute_error: float = 0.0  # weighted
    n_rows: int = 0
    n_missing_labels: int = 0  # rows whose target is null: skipped and counted

    def add(self, y: np.ndarray, prediction: np.ndarray, w: np.ndarray) -> None:
        """Add rows with their targets, predictions and weights."""
        weight = float(w.sum())
        if weight > 0:
            mean = float(np.dot(w, y) / weight)
            self.merge(RegressionTally(weight, mean, float(np.dot(w, (y - mean) ** 2))))
        error = y - prediction
        self.squared_error += float(np.dot(w, error * error))
        self.absolute_error += float(np.dot(w, np.abs(error)))
        self.n_rows += len(y)

    def merge(self, other: "RegressionTally") -> "RegressionTally":
        """Add ``other``'s rows (Chan et al.'s update of the mean and the sum of squares)."""
        total = self.weight + other.weight
        if other.weight > 0:
            delta = other.mean - self.mean
            self.m2 += other.m2 + delta * delta * self.weight * other.weight / total
            self.mean += delta * other.weight / total
        self.weight = total
        self.squared_error += other.squared_error
        self.absolute_error += other.absolute_error
        self.n_rows += other.n_rows
        self.n_missing_labels += other.n_missing_labels
        return self


@dataclass
class RegressionEvaluation:
    """A regressor's scores on some data (weighted when the evaluation was)."""

    n_rows: int
    weight: float
    mse: float  # mean squared error
    mae: float  # mean absolute error
    r2: float  # coefficient of determination (scikit-learn's r2_score)
    n_missing_labels: int = 0

    @property
    def rmse(self) -> float:
        return float(np.sqrt(self.mse))

    @classmethod
    def from_tally(cls, tally: RegressionTally) -> "RegressionEvaluation":
        if tally.weight <= 0:
            raise DataError("no row with a target and a weight above 0 to evaluate on")
        if tally.m2 > 0:
            r2 = 1.0 - tally.squared_error / tally.m2
        else:  # a constant target, as scikit-learn: 1.0 for perfect predictions, else 0.0
            r2 = 1.0 if tally.squared_error == 0 else 0.0
        return cls(tally.n_rows, tally.weight, tally.squared_error / tally.weight, tally.absolute_error / tally.weight,
                   r2, tally.n_missing_labels)

    def report(self, digits: int = 6) -> str:
        """The scores, one per line."""
        return "\n".join([f"rows:  {self.n_rows:,}" + (f" ({self.n_missing_labels:,} rows with a missing target "
                                                      f"skipped)" if self.n_missing_labels else ""),
                          f"MSE:   {self.mse:.{digits}g}", f"RMSE:  {self.rmse:.{digits}g}",
                          f"MAE:   {self.mae:.{digits}g}", f"R²:    {self.r2:.{digits}f}"])


@dataclass
class RegressionEvaluationTask:
    """A :class:`rainforest.storage.PassTask` scoring a regressor's ``predict`` on every row: a
    :class:`RegressionTally`."""

    estimator: object
    features: list
    target: str
    where: str
    weight: str | None = None

    def new_state(self) -> RegressionTally:
        return RegressionTally()

    def update(self, state: RegressionTally, batch: pa.RecordBatch, first_row: int) -> RegressionTally:
        if batch.num_rows == 0:
            return state
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        column = table.column(self.target)
        if column.null_count:  # a row without a target cannot be scored: skipped, and counted
            state.n_missing_labels += column.null_count
            table = table.filter(pc.is_valid(column))
            column = table.column(self.target)
        if table.num_rows == 0:
            return state
        y = _target_values(column, self.target, self.where)
        w = checked_weights(table, self.weight, self.where, first_row)
        state.add(y, np.asarray(self.estimator.predict(table.select(self.features)), np.float64), w)
        return state

    def merge(self, a: RegressionTally, b: RegressionTally) -> RegressionTally:
        return a.merge(b)

    def finish(self, state: RegressionTally) -> RegressionEvaluation:
        return RegressionEvaluation.from_tally(state)


def _target_values(column, target: str, where: str) -> np.ndarray:
    check_numeric_target(column.type, target, where)
    y = numeric_values(column)
    if not np.isfinite(y).all():
        raise DataError(f"the target column {target!r} of {where} holds a value that is not finite")
    return y

