"""The counting rule every AVC kernel shares: a row adds its weight to ``counts[node, slot,
class]`` and, where the AVC-group has one, one to the row-count channel of the same cell (unless its weight is 0: such
a row counts as absent, :func:`rainforest.schema.present_rows`).

The kernels differ in how they reach a row (one node per row: :func:`rainforest.avc.accumulate`,
:mod:`rainforest.compact`'s fill, BOAT's ``route_and_count``; per-tree copies with
bootstrap multiplicities: :func:`rainforest.in_bag.count_spans`, the forest's
:func:`rainforest.forest_kernels.count_forest`) and in which thread owns a cell (an attribute,
or a tree), which decides their speed; each calls :func:`add_row` on the cells of one node and
slot, so the rule and its summation order are written once.  Every cell is summed in row order
by one thread in every driver, so their results do not depend on the number of threads.
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import overload


def _add_to_class(cells, cell, c, weight, count_rows, rows_channel):
    cells[cell + c] += weight
    if count_rows and weight != 0.0:  # a row of weight 0 counts as absent (schema.present_rows)
        cells[cell + rows_channel] += 1.0


def _add_target(cells, cell, c, weight, count_rows, rows_channel):
    wy = weight * c  # scikit-learn's MSE: w y first, then w y * y
    cells[cell] += weight
    cells[cell + 1] += wy
    cells[cell + 2] += wy * c
    if count_rows and weight != 0.0:
        cells[cell + rows_channel] += 1.0


def add_row(cells, cell, c, weight, count_rows, rows_channel):
    """Add ``weight`` to class ``c`` of the cell starting at ``cells[cell]`` (``cells``: a node's
    AVC-group, flat, or a row of it) and, if ``count_rows``, one to its channel ``rows_channel``.

    A regressor's rows hold a float target ``c`` (less the label's shift) instead of a class code: the
    cell's channels are then ``(sum w, sum w y, sum w y**2)``.  In kernels Numba compiles one rule or
    the other for the type of ``c`` (:func:`_add_row`); called from Python, the value's type chooses.

    The index types are the caller's: unsigned ones spare numba's check for a negative index."""
    rule = _add_target if isinstance(c, (float, np.floating)) else _add_to_class
    rule(cells, cell, c, weight, count_rows, rows_channel)


@overload(add_row, inline="always", jit_options={"cache": True, "nogil": True})
def _add_row(cells, cell, c, weight, count_rows, rows_channel):
    """:func:`add_row` in kernels, chosen by the type of ``c``: a class code, or a regressor's target."""
    return _add_target if isinstance(c, types.Float) else _add_to_class


def narrowed_counts(counts: np.ndarray) -> np.ndarray:
    """``counts`` (float64) in the narrowest unsigned integer type that holds each of them exactly, when
    they are all whole numbers (unit weights: a classifier's counts), else ``counts`` itself (fractional
    weights, a regressor's sums).  An AVC-group crossing the network travels so: a half to an eighth of
    its bytes, and :func:`widened_counts` gives the float64 counts back bit for bit."""
    if counts.dtype != np.float64 or counts.size == 0:
        return counts
    low, high = counts.min(), counts.max()
    if not low >= 0 or not high < 2.0 ** 32:  # negative, too large, or NaN
        return counts
    kind = np.uint8 if high < 2 ** 8 else np.uint16 if high < 2 ** 16 else np.uint32
    narrow = counts.astype(kind)
    return narrow if np.array_equal(narrow, counts) else counts


def widened_counts(counts: np.ndarray) -> np.ndarray:
    """The float64 counts :func:`narrowed_counts` was given."""
    return counts if counts.dtype == np.float64 else counts.astype(np.float64)
