"""The one pass of naive Bayes: weighted class counts, category counts and per-class moments.

:class:`BayesPass` is a :class:`rainforest.storage.PassTask` whose state, :class:`BayesCounts`,
merges across batches and workers: numeric attributes keep, per class, the weighted count, mean
and sum of squared deviations, merged with the parallel (Chan et al.) formula by the Numba
kernels below.  The estimator built on these counts is :mod:`rainforest.bayes`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .bayes_sql import bayes_query
from .bayes_state import BayesCounts, Moments, merge_moments, moments_from_sums
from .errors import DataError
from .schema import CATEGORICAL, category_values, numeric_values, plain_numbers
from .storage.arrow_numpy import read_only


# -- the single pass ------------------------------------------------------------------
@dataclass
class BayesPass:
    """A :class:`rainforest.storage.PassTask` computing :class:`BayesCounts` in one pass."""

    kinds: dict
    target: str
    weight: str | None
    where: str

    def new_state(self) -> BayesCounts:
        return BayesCounts()

    def update(self, state: BayesCounts, batch: pa.RecordBatch, first_row: int) -> BayesCounts:
        if self.weight:
            self._check_weights(numeric_values(batch.column(self.weight)), first_row)
            # rows of weight 0 count as absent (scikit-learn's sample-weight equivalence): not in the
            # classes, the categories, nor the column's spread
            batch = batch.filter(pc.not_equal(batch.column(self.weight), 0))
        y = category_values(batch.column(self.target))
        if y.null_count:
            raise DataError(f"the target column {self.target!r} of {self.where} has null values")
        if pa.types.is_floating(y.type) and pc.any(pc.is_nan(y)).as_py():
            raise DataError(f"the target column {self.target!r} of {self.where} has NaN values")
        codes, labels, rows = _label_codes(y)
        k = len(labels)
        w = None  # unit weights
        if self.weight:
            w = numeric_values(batch.column(self.weight))
        state.n_rows += len(codes)
        for c, wc in zip(labels, rows if w is None else np.bincount(codes, weights=w, minlength=k)):
            state.class_weight[c] = state.class_weight.get(c, 0.0) + float(wc)
        numeric = [name for name, kind in self.kinds.items() if kind != CATEGORICAL]
        for name, kind in self.kinds.items():
            if kind == CATEGORICAL:
                self._count_categories(state, name, category_values(batch.column(name)), y, w)
        if numeric:
            self._moments(state, numeric, batch, codes, labels, rows.astype(np.float64), w, first_row)
        return state

    def _check_weights(self, w: np.ndarray, first_row: int) -> None:
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            raise DataError(f"the weight column {self.weight!r} of {self.where} has a bad value "
                            f"{w[bad][0]!r} at row {first_row + int(np.argmax(bad))}")

    def _count_categories(self, state, name, values, y, w):
        if w is None:
            grouped = pa.table({"v": values, "y": y}).group_by(["y", "v"]).aggregate([([], "count_all")])
        else:
            grouped = pa.table({"v": values, "y": y, "w": w}).group_by(["y", "v"]).aggregate([("w", "sum")])
        counts = state.categories.setdefault(name, {})
        for c, v, s in zip(grouped.column("y").to_pylist(), grouped.column("v").to_pylist(),
                           grouped.column(-1).to_pylist()):
            if v is not None:  # missing values are skipped
                counts[(c, v)] = counts.get((c, v), 0.0) + float(s)

    def _moments(self, state, names, batch, codes, labels, rows, w, first_row):
        for name in names:
            column = batch.column(name)
            x = plain_numbers(column)
            per_class = state.moments.setdefault(name, {})
            # the class means so far: a shift that lets one pass give accurate moments (not tried on
            # a column with nulls, whose NaN would only make it fail)
            shift = np.array([per_class[c].mean if c in per_class and per_class[c].w > 0 and not column.null_count
                              else np.nan for c in labels])
            W, mean, M2, spread = column_moments(x, codes, read_only(w), len(labels), shift, rows)
            if not np.isfinite(spread).all():
                W, mean, M2, spread = self._moments_of_huge(name, x, codes, w, len(labels), shift, rows, first_row)
            for k, c in enumerate(labels):
                per_class.setdefault(c, Moments()).merge(float(W[k]), float(mean[k]), float(M2[k]))
            if spread[0] > 0:
                state.spread.setdefault(name, Moments()).merge(*map(float, spread))

    def _moments_of_huge(self, name, x, codes, w, k, shift, rows, first_row):
        """:func:`column_moments` where the sums were not finite: an infinite value is refused (named);
        finite values whose sums overflowed (1.8e308 + 1.8e308) are summed scaled by a power of two
        (exact) and scaled back; a variance beyond float64 is refused, not taken for infinity."""
        inf = np.isinf(x)
        if inf.any():
            row = int(np.argmax(inf))
            raise DataError(f"column {name!r} of {self.where} holds {x[row]} at row "
                            f"{first_row + row}; infinite values are not allowed")
        big = float(np.nanmax(np.abs(x)))
        e = int(np.frexp(big)[1])  # |x| * 2**-e < 1
        W, mean, M2, spread = column_moments(np.ldexp(np.asarray(x, np.float64), -e), codes, read_only(w), k,
                                             np.ldexp(shift, -e), rows)
        with np.errstate(over="ignore"):
            mean, M2 = np.ldexp(mean, e), np.ldexp(M2, 2 * e)
            spread = np.array([spread[0], np.ldexp(spread[1], e), np.ldexp(spread[2], 2 * e)])
        if not (np.isfinite(M2).all() and np.isfinite(spread).all()):
            raise DataError(f"column {name!r} of {self.where} holds values as large as {big:g}, whose variance "
                            f"exceeds the largest float64; scale the column down (divide it by 1e100, say)")
        return W, mean, M2, spread

    def merge(self, a: BayesCounts, b: BayesCounts) -> BayesCounts:
        return a.merge(b)

    def sql_aggregate(self, relation):
        """This pass as one ``GROUPING SETS`` query over a SQL relation (unit weights), else None."""
        return bayes_query(self, relation)  # (rainforest/bayes_sql.py)


PARTIAL_SUMS = 4  # independent partial sums per class: consecutive rows of a class need not wait on each other


@numba.njit(cache=True, nogil=True)
def column_moments(x, codes, w, k, shift, rows):
    """Per class of ``codes``: the weighted count, mean and sum of squared deviations of the
    non-missing (non-NaN) values of ``x``; and the same unweighted over all classes (``spread``).

    With unit weights (``w`` None) and a known ``shift`` per class (the class mean of the earlier
    batches), one pass sums ``x - shift`` and its square, with the class's rows (``rows``) as
    count: about half the work of two passes.  Where that fails, :func:`_two_pass_moments`
    computes them instead: a missing (NaN) or infinite value makes the sums non-finite; a shift
    far from a class's values would make the difference cancel, losing digits; an unknown shift
    (a class's first batch) is NaN.  The spread is then the classes' moments merged."""
    if w is None:
        usable = True
        for c in range(k):
            usable = usable and shift[c] == shift[c]
        if usable:
            S, Q = _shifted_sums(x, codes, k, shift)
            W = np.zeros(k)
            mean = np.zeros(k)
            M2 = np.zeros(k)
            for c in range(k):
                W[c] = rows[c]
                if W[c] > 0:
                    mean[c], M2[c], good = moments_from_sums(W[c], S[c], Q[c], shift[c])
                    usable = usable and good
            if usable:
                return W, mean, M2, _merged_spread(W, mean, M2)
    return _two_pass_moments(x, codes, w, k)


#: up to this many classes, :func:`_shifted_sums` reads the column once per class, vectorised;
#: above it, once, adding each row to its class's sums (about 0.3-0.45 ns a value per class for
#: the first, against 0.8-1 ns for the second)
MASKED_CLASSES = 4


@numba.njit(cache=True, nogil=True)
def _shifted_sums(x, codes, k, shift):
    """Per class c of ``codes``: the sums of ``x - shift[c]`` and of its square over the class's rows
    (a NaN or infinite value makes them non-finite)."""
    S = np.zeros(k)
    Q = np.zeros(k)
    if k <= MASKED_CLASSES:
        for c in range(k):
            S[c], Q[c] = _class_shifted_sums(x, codes, c, shift[c])
        return S, Q
    L = PARTIAL_SUMS
    Sp = np.zeros((k, L))
    Qp = np.zeros((k, L))
    for i in range(x.shape[0]):
        r = i & (L - 1)
        c = codes[i]
        d = np.float64(x[i]) - shift[c]
        Sp[c, r] += d
        Qp[c, r] += d * d
    for c in range(k):
        S[c] = _sum_partials(Sp[c])
        Q[c] = _sum_partials(Qp[c])
    return S, Q


# reassoc lets LLVM sum in SIMD lanes (4x faster than in row order); the order then follows the
# CPU's vector width, so the last bits may differ between machines. No nnan/ninf: a NaN or an
# infinity must still reach the sums, where column_moments sees it and takes two passes.
@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz"})
def _class_shifted_sums(x, codes, c, shift):
    s = 0.0
    q = 0.0
    for i in range(x.shape[0]):
        d = np.float64(x[i]) - shift if codes[i] == c else 0.0
        s += d
        q += d * d
    return s, q


@numba.njit(cache=True, nogil=True)
def _merged_spread(W, mean, M2):
    """The unweighted moments of a column from its classes' moments (unit weights)."""
    spread = np.zeros(3)
    for c in range(W.shape[0]):
        merge_moments(spread, W[c], mean[c], M2[c])
    return spread


@numba.njit(cache=True, nogil=True)
def _two_pass_moments(x, codes, w, k):
    """:func:`column_moments` by two passes over the batch: the means, then the squared deviations
    from them, less the square of the deviations' sum (the corrected two-pass algorithm of Chan,
    Golub and LeVeque: it cancels the rounding of the means, which matters far from zero).

    Row ``i`` adds to partial sum ``i % PARTIAL_SUMS`` and the partial sums are added in a fixed
    order, which lets the additions overlap (consecutive rows of a class need not wait on each
    other) and keeps the result independent of anything but the rows."""
    L = PARTIAL_SUMS
    Wp = np.zeros((k, L))
    Sp = np.zeros((k, L))
    n = np.zeros(L)
    total = np.zeros(L)
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        if v == v:
            r = i & (L - 1)
            c = codes[i]
            if w is None:
                Wp[c, r] += 1.0
                Sp[c, r] += v
            else:
                Wp[c, r] += w[i]
                Sp[c, r] += w[i] * v
                n[r] += 1.0
                total[r] += v
    W = np.zeros(k)
    mean = np.zeros(k)
    for c in range(k):
        W[c] = _sum_partials(Wp[c])
        if W[c] > 0:
            mean[c] = _sum_partials(Sp[c]) / W[c]
    count = _sum_partials(n)
    grand = _sum_partials(total) / count if count > 0 else 0.0
    Mp = np.zeros((k, L))
    Dp = np.zeros((k, L))
    m2_all = np.zeros(L)
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        if v == v:
            r = i & (L - 1)
            c = codes[i]
            d = v - mean[c]
            if w is None:
                Mp[c, r] += d * d
                Dp[c, r] += d
            else:
                Mp[c, r] += w[i] * d * d
                Dp[c, r] += w[i] * d
                e = v - grand
                m2_all[r] += e * e
    M2 = np.zeros(k)
    for c in range(k):
        if W[c] > 0:
            drift = _sum_partials(Dp[c])
            M2[c] = max(_sum_partials(Mp[c]) - drift * drift / W[c], 0.0)
    if w is None:  # unit weights: the classes' moments merged are the column's
        return W, mean, M2, _merged_spread(W, mean, M2)
    return W, mean, M2, np.array([count, grand, _sum_partials(m2_all)])


@numba.njit(cache=True, nogil=True, inline="always")
def _sum_partials(parts):
    s = 0.0
    for r in range(parts.shape[0]):
        s += parts[r]
    return s


def _label_codes(y: pa.Array) -> tuple[np.ndarray, list, np.ndarray]:
    """Per-row class codes in this batch, in the narrowest type the kernels take (uint8 up to 256
    classes: an eighth of the memory traffic of int64); the class of each code; its rows."""
    if pa.types.is_integer(y.type) and len(y):
        v = y.to_numpy(zero_copy_only=False)
        lo, hi = int(v.min()), int(v.max())
        if hi - lo <= 1 << 16:
            codes = np.empty(len(v), _code_type(hi - lo + 1))
            rows = _dense_codes(v, lo, hi - lo, codes)
            present = np.flatnonzero(rows)
            return codes, (present + lo).tolist(), rows[present]
    encoded = pc.dictionary_encode(y)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    rows = np.bincount(codes, minlength=len(encoded.dictionary))
    return codes.astype(_code_type(len(rows)), copy=False), encoded.dictionary.to_pylist(), rows


def _code_type(n_codes: int) -> type:
    return np.uint8 if n_codes <= 256 else np.int64


@numba.njit(cache=True, nogil=True)
def _dense_codes(v, lo, span, codes):
    """Fill ``codes`` with the codes of integer labels ``v`` (all in ``lo .. lo + span``) in the
    order of their values; return the rows of each value (less ``lo``).  One pass, no wider copy
    of ``v``; a second one only where a value inside the range is absent from the batch."""
    parts = np.zeros((PARTIAL_SUMS, span + 1), np.int64)  # row i counts in part i % PARTIAL_SUMS
    for i in range(v.shape[0]):
        code = np.int64(v[i]) - lo
        codes[i] = code
        parts[i & (PARTIAL_SUMS - 1), code] += 1
    rows = parts.sum(axis=0)
    if (rows > 0).all():
        return rows
    lookup = np.cumsum(rows > 0) - 1
    for i in range(v.shape[0]):
        codes[i] = lookup[codes[i]]
    return rows
