"""Forest-RC: features that are random linear combinations of numeric attributes, drawn from a
tree's seed so that every machine draws the same."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bootstrap import node_features
from .rowhash import M32, row_hash
from .schema import NUMERIC, Attribute

_COMBO_SALT = 0x165667B1


@dataclass
class Combinations:
    """Forest-RC's features: ``values[:, q] = sum_l coefficients[q, l] * X[:, features[q, l]]`` over
    raw numeric attribute values (missing if any term is missing), with bin edges ``cuts``."""

    features: np.ndarray  # (Q, L) base attribute indices
    coefficients: np.ndarray  # (Q, L)
    cuts: list = field(default_factory=list)  # per combination, its bin edges

    def values(self, X: np.ndarray) -> np.ndarray:
        """The combinations' values for the raw matrix ``X`` (one row per row), in a fixed order of operations."""
        out = X[:, self.features[:, 0]] * self.coefficients[:, 0]
        for j in range(1, self.features.shape[1]):
            out = out + X[:, self.features[:, j]] * self.coefficients[:, j]
        return out

    def attributes(self, names: list[str]) -> list[Attribute]:
        return [Attribute(combination_name(f, c, names), NUMERIC, exact=False, cuts=np.asarray(k, np.float64))
                for f, c, k in zip(self.features, self.coefficients, self.cuts)]

    def take(self, rows) -> "Combinations":
        return Combinations(self.features[rows], self.coefficients[rows], [self.cuts[r] for r in rows])


def combination_name(features, coefficients, names) -> str:
    return "(" + " ".join(f"{c:+.4g}*{names[f]}" for f, c in zip(features, coefficients)) + ")"


def draw_combinations(seed: int, numeric: np.ndarray, count: int, n_combined: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` combinations of ``n_combined`` distinct attributes of ``numeric`` with coefficients
    uniform in [-1, 1], drawn from the tree's seed with :func:`rainforest.rowhash.row_hash` (so the
    same on every machine)."""
    s = (int(seed) ^ _COMBO_SALT) & M32
    picks = node_features(s, np.arange(count), len(numeric), n_combined)
    u = row_hash(np.arange(count * n_combined, dtype=np.int64), (s + 1) & M32).astype(np.float64) / float(1 << 63)
    return numeric[picks], (2.0 * u - 1.0).reshape(count, n_combined)
