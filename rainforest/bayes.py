"""Naive Bayes from one pass: the root AVC-group plus per-class moments *is* the model.

Categorical attributes keep weighted class counts per category (Laplace
correction ``alpha``); numeric attributes keep, per class, the weighted count,
mean and sum of squared deviations, merged across batches with the parallel
(Chan et al.) formula, so Gaussian naive Bayes needs exactly one pass over data
of any size and ``partial_fit`` is the same merge.  ``numeric="binned"`` counts
numeric attributes per quantile bin instead; bin edges need the profiling pass,
so it takes two passes.  Missing values are skipped attribute by attribute, in
training and in prediction; a category never seen in training is skipped too.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .avc import root_avc
from .dask_predict import lazy_on_dask
from .errors import DataError
from .base import Classifier
from .inputs import feature_tables
from .model_file import params_from_json, plain, register_reader, write_model
from .constraints import NAIVE_BAYES_PARAMS
from .model_check import check_document
from .profile import ProfileTask
from .schema import (CATEGORICAL, NUMERIC, Attribute, Label, Schema, category_values, check_classes, check_weight_total,
                     numeric_values, plain_numbers)

#: the naive Bayes part of a model file (also embedded, once per round, in a boosted model)
BAYES_FORMAT = "rainforest.naive_bayes"
BAYES_VERSION = 1


# -- the single pass ------------------------------------------------------------------
@dataclass
class Moments:
    """Weighted count, mean and sum of squared deviations of one attribute in one class."""

    w: float = 0.0
    mean: float = 0.0
    m2: float = 0.0

    def merge(self, w: float, mean: float, m2: float) -> None:
        into = np.array([self.w, self.mean, self.m2])
        _merge_moments(into, w, mean, m2)  # the formula the kernels merge classes with
        self.w, self.mean, self.m2 = (float(v) for v in into)

    @property
    def var(self) -> float:
        return self.m2 / self.w if self.w > 0 else 0.0


@dataclass
class BayesCounts:
    """The mergeable state of the pass: class weights, category counts, numeric moments."""

    class_weight: dict = field(default_factory=dict)  # class -> weight
    categories: dict = field(default_factory=dict)  # attribute -> {(class, value): weight}
    moments: dict = field(default_factory=dict)  # attribute -> {class: Moments}
    spread: dict = field(default_factory=dict)  # attribute -> Moments over all rows, unweighted
    n_rows: int = 0

    def check_columns(self, kinds: dict, where: str) -> None:
        """Refuse an attribute without a single value (entirely null), as the tree's profiling pass
        does: its numeric moments or category counts are then empty."""
        for name, kind in kinds.items():
            if not (self.categories.get(name) if kind == CATEGORICAL else name in self.spread):
                raise DataError(f"column {name!r} of {where} is entirely null; drop it from the features")

    def merge(self, other: BayesCounts) -> BayesCounts:
        self.n_rows += other.n_rows
        for c, w in other.class_weight.items():
            self.class_weight[c] = self.class_weight.get(c, 0.0) + w
        for a, cnt in other.categories.items():
            mine = self.categories.setdefault(a, {})
            for k, w in cnt.items():
                mine[k] = mine.get(k, 0.0) + w
        for a, per_class in other.moments.items():
            mine = self.moments.setdefault(a, {})
            for c, m in per_class.items():
                mine.setdefault(c, Moments()).merge(m.w, m.mean, m.m2)
        for a, m in other.spread.items():
            self.spread.setdefault(a, Moments()).merge(m.w, m.mean, m.m2)
        return self


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
            W, mean, M2, spread = column_moments(x, codes, w, len(labels), shift, rows)
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
        W, mean, M2, spread = column_moments(np.ldexp(np.asarray(x, np.float64), -e), codes, w, k,
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
        from .pushdown import bayes_query
        return bayes_query(self, relation)


PARTIAL_SUMS = 4  # independent partial sums per class: consecutive rows of a class need not wait on each other


#: the one-pass moments are kept while sum((x - shift)^2) is at most this many times the sum of squared
#: deviations: the rounding error of their difference is then within about 2e-13 of it
SHIFTED_CANCELLATION = 1024.0


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
                    s = S[c]
                    q = Q[c]
                    mean[c] = shift[c] + s / W[c]
                    M2[c] = q - s * s / W[c]
                    # NaN fails this too; so does M2 ~ 0 from rounding (two passes give it exactly)
                    usable = usable and q <= SHIFTED_CANCELLATION * M2[c]
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
        _merge_moments(spread, W[c], mean[c], M2[c])
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


@numba.njit(cache=True, nogil=True)
def _merge_moments(into, w, mean, m2):
    """Merge (w, mean, m2) into ``into`` = [w, mean, m2] by the parallel (Chan et al.) formula: for
    :meth:`Moments.merge` and for a column's spread from its classes."""
    if w <= 0:
        return
    if into[0] <= 0:
        into[0], into[1], into[2] = w, mean, m2
        return
    total = into[0] + w
    delta = mean - into[1]
    into[1] += delta * w / total
    into[2] += m2 + delta * delta * into[0] * w / total
    into[0] = total


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


# -- the estimator --------------------------------------------------------------------------
@lazy_on_dask  # a Dask DataFrame in, a lazy Dask collection out (rainforest/dask_predict.py)
class NaiveBayesClassifier(Classifier):
    """Naive Bayes over data of any size, trained in one pass.

    Parameters
    ----------
    alpha : float, default=1.0
        Laplace (additive) correction of the category counts; 0 disables it.
    numeric : {"gaussian", "binned"}, default="gaussian"
        Numeric attributes as per-class normal distributions (one pass), or
        discretized into at most ``max_bins`` quantile bins and counted like
        categories (two passes: the bins need the profiling pass).
    var_smoothing : float, default=1e-9
        Added to every Gaussian variance: this fraction of the largest
        variance of any numeric attribute (as scikit-learn's ``GaussianNB``).
    max_bins : int, default=255
        Bins per numeric attribute with ``numeric="binned"``.
    categorical_features : "auto" or list, default="auto"
        Integer columns to treat as categorical (strings and booleans always are).
    batch_size : int, default=262144
        Rows per record batch; the model does not depend on it.
    n_jobs : int or None, default=-1
        Threads for the binned mode's Numba kernels.

    Attributes
    ----------
    classes_ : ndarray
    class_count_ : ndarray
        Weighted rows per class.
    class_log_prior_ : ndarray
    theta_, var_ : ndarray of shape (n_classes, n_numeric)
        Per-class means and variances of the Gaussian attributes (``numeric_features_`` order).
    feature_log_prob_ : list of ndarray of shape (n_classes, n_values)
        Smoothed log P(value | class) of each counted attribute (``counted_features_`` order).
    n_passes_ : int
        Passes over the data made by the last ``fit`` (1 with Gaussian numerics).
    feature_names_in_ : ndarray of str
        The feature columns.
    target_ : str
        The label column.

    Notes
    -----
    :meth:`save` writes the counts themselves (Gaussian mode) or the count
    tables and bin edges (binned mode), so a loaded model predicts bit for bit
    as the saved one and ``partial_fit`` goes on counting where it stopped.

    Examples
    --------
    >>> from rainforest import NaiveBayesClassifier
    >>> nb = NaiveBayesClassifier().fit("data/train/", target="label")  # doctest: +SKIP
    >>> nb.n_passes_  # doctest: +SKIP
    1
    """

    def __init__(self, *, alpha=1.0, numeric="gaussian", var_smoothing=1e-9, max_bins=255,
                 categorical_features="auto", batch_size=262144, n_jobs=-1):
        self.alpha = alpha
        self.numeric = numeric
        self.var_smoothing = var_smoothing
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.batch_size = batch_size
        self.n_jobs = n_jobs

    _parameter_constraints = NAIVE_BAYES_PARAMS
    _fitted_attribute = "classes_"

    def fit(self, X, y=None, *, target=None, sample_weight=None, features=None):
        """Count everything in one pass (two with ``numeric="binned"``) and set the model.

        Parameters are those of :meth:`DecisionTreeClassifier.fit`.
        """
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features) as run:
            self._kinds, self._target = run.kinds, run.data.target
            if self.numeric == "binned":
                self._fit_binned(run.data, run.kinds)
            else:
                self._set_gaussian_model(self._one_pass(run.data, run.kinds))
            self._set_inputs()
        return self

    def partial_fit(self, X, y=None, *, target=None, sample_weight=None, features=None, classes=None):
        """Add a batch of rows to the counts; any split of the data gives the model of one ``fit``.

        Parameters
        ----------
        X, y, target, sample_weight, features
            As :meth:`fit`.
        classes : array-like, optional
            Every class the calls will see (scikit-learn's convention). Classes not in this batch
            get zero counts, so ``classes_`` holds them all from the first call on; a batch with
            a class not listed is an error.

        Returns
        -------
        self
        """
        if self.numeric != "gaussian":
            raise ValueError("partial_fit needs numeric='gaussian' (bin edges are fixed by a profiling pass)")
        passes = getattr(self, "n_passes_", None) if hasattr(self, "_counts") else None
        with self.fitting(X, y, target=target, sample_weight=sample_weight, features=features) as run:
            counts = self._one_pass(run.data, run.kinds)
            if hasattr(self, "_counts"):
                if run.kinds != self._kinds:
                    raise DataError("partial_fit got other feature columns or kinds than before")
                counts = self._counts.merge(counts)
            if classes is not None:
                counts = _with_classes(counts, classes)
            self._kinds, self._target = run.kinds, run.data.target
            self._set_gaussian_model(counts)
            self._set_inputs()
        if passes is not None:  # the passes of every partial_fit since the model began
            self.n_passes_ += passes
        return self

    @classmethod
    def from_counts(cls, counts: BayesCounts, kinds: dict, target: str, **params) -> "NaiveBayesClassifier":
        """The Gaussian model of ``counts`` (what :class:`BayesPass` counted over the attributes ``kinds``
        and the label column ``target``), with ``params``: how a learner counted by another pass
        (boosting's) is built.

        Returns
        -------
        NaiveBayesClassifier
            Fitted; ``n_passes_`` is not set (the passes were someone else's).
        """
        est = cls(**params)
        est._kinds, est._target = dict(kinds), target
        est._set_gaussian_model(counts)
        est._set_inputs()
        return est

    def _set_inputs(self):
        """The fitted attributes describing the input columns (all in ``_kinds``, in order)."""
        self.n_features_in_ = len(self._kinds)
        self.feature_names_in_ = np.asarray(list(self._kinds), dtype=object)
        self.n_classes_ = len(self.classes_)
        self.n_outputs_ = 1
        self.target_ = self._target

    def _one_pass(self, data, kinds) -> BayesCounts:
        task = BayesPass(kinds, data.target, data.weight, data.source.description)
        columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
        counts = data.source.run_pass(task, columns, self.batch_size)
        check_weight_total(sum(counts.class_weight.values()), data.weight, data.source.description)
        if counts.n_rows == 0:
            raise DataError(f"{data.source.description} has no rows")
        check_classes(counts.class_weight, data.target, data.source.description)
        counts.check_columns(kinds, data.source.description)
        return counts

    # -- turning counts into the model -------------------------------------------------
    def _set_classes(self, class_weight: dict):
        self.classes_ = np.asarray(sorted(class_weight))
        self.class_count_ = np.array([class_weight[c] for c in self.classes_], dtype=np.float64)
        if len(self.classes_) < 2:
            raise DataError(f"the target has a single class ({self.classes_[0]!r}); a classifier needs two")
        self.class_log_prior_ = np.log(self.class_count_) - np.log(self.class_count_.sum())

    def _set_gaussian_model(self, counts: BayesCounts):
        self._counts = counts  # kept: partial_fit and save go on from them
        self._set_classes(counts.class_weight)
        classes = list(self.classes_)
        self.numeric_features_ = [a for a, k in self._kinds.items() if k != CATEGORICAL]
        self.counted_features_ = [a for a, k in self._kinds.items() if k == CATEGORICAL]
        n = len(classes)
        self.theta_ = np.zeros((n, len(self.numeric_features_)))
        self.var_ = np.zeros((n, len(self.numeric_features_)))
        for j, a in enumerate(self.numeric_features_):
            per_class = counts.moments.get(a, {})
            for i, c in enumerate(classes):
                m = per_class.get(c, Moments())
                self.theta_[i, j], self.var_[i, j] = m.mean, m.var
        spread = [counts.spread[a].var for a in self.numeric_features_ if a in counts.spread]
        self.epsilon_ = self.var_smoothing * (max(spread) if spread else 0.0)
        self.var_ = self.var_ + self.epsilon_
        self.categories_ = []
        self.category_count_ = []
        for a in self.counted_features_:
            cnt = counts.categories.get(a, {})
            values = sorted({v for _, v in cnt})
            index = {v: k for k, v in enumerate(values)}
            table = np.zeros((n, len(values)))
            for (c, v), w in cnt.items():
                table[classes.index(c), index[v]] += w
            self.categories_.append(values)
            self.category_count_.append(table)
        self._set_log_probs()

    def _set_log_probs(self):
        self.feature_log_prob_ = []
        for table in self.category_count_:
            smoothed = table + self.alpha
            with np.errstate(divide="ignore"):
                self.feature_log_prob_.append(np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True)))

    def _fit_binned(self, data, kinds):
        task = ProfileTask(kinds, data.target, data.weight, data.source.description, exact=False,
                           max_bins=self.max_bins)
        columns = list(kinds) + [data.target] + ([data.weight] if data.weight else [])
        schema = task.schema(data.source.run_pass(task, columns, self.batch_size))  # under fit's threads
        n_classes = len(schema.label.classes)
        avc = root_avc(data.source, schema, self.batch_size)
        offsets = schema.slot_offsets()
        first = avc[offsets[0]:offsets[1], :n_classes].sum(axis=0)
        # the AVC-set of each attribute, its missing slot dropped, is its count table
        tables = [avc[offsets[j]:offsets[j + 1] - 1, :n_classes].T.copy() for j in range(len(schema.attributes))]
        self._set_binned_model(schema, dict(zip(schema.label.classes, first)), tables)

    def _set_binned_model(self, schema: Schema, class_weight: dict, tables: list):
        """The binned model from its attributes (bin edges, categories), class weights and count tables."""
        if hasattr(self, "_counts"):  # a refit in binned mode: nothing left to partial_fit on
            del self._counts
        self._set_classes(class_weight)
        self._schema = schema
        self.numeric_features_ = []
        self.counted_features_ = schema.names
        self.theta_ = self.var_ = np.zeros((len(self.classes_), 0))
        self.category_count_ = tables
        self.categories_ = [a.categories if a.kind == CATEGORICAL else list(a.cuts) for a in schema.attributes]
        self._set_log_probs()

    # -- persistence ------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the model as versioned JSON (no pickle), atomically; :func:`rainforest.load` reads it.

        Parameters
        ----------
        path : str or path-like
            The file; written to a temporary file in its folder, then renamed over it.
        """
        self._check_fitted()
        write_model(path, self, getattr(self, "n_passes_", None), naive_bayes=self.model_dict())

    @classmethod
    def from_document(cls, doc: dict, path: str = "<document>") -> NaiveBayesClassifier:
        """The estimator saved in ``doc`` (a parsed model file whose estimator is this class).

        Raises
        ------
        ValueError
            If ``doc`` holds no valid naive Bayes model (the message names ``path``).
        """
        check_document(doc, path, cls)
        with reading_model(doc, cls.__name__, path):
            est = cls.from_model_dict(doc["naive_bayes"], **params_from_json(doc["params"]))
            if doc.get("n_passes") is not None:  # a model built by partial_fit alone has none
                est.n_passes_ = int(doc["n_passes"])
        return est

    def model_dict(self) -> dict:
        """What prediction and ``partial_fit`` need, as JSON: lists of pairs where a dict would be keyed
        by a class or a value (JSON keys are strings only; the values keep their types)."""
        d = {"format": BAYES_FORMAT, "version": BAYES_VERSION, "target": self._target,
             "features": [[name, int(kind)] for name, kind in self._kinds.items()]}
        if hasattr(self, "_counts"):  # Gaussian: the counts are the model
            c = self._counts
            d["counts"] = {
                "n_rows": int(c.n_rows),
                "class_weight": [[plain(k), float(w)] for k, w in c.class_weight.items()],
                "categories": [[a, [[plain(k), plain(v), float(w)] for (k, v), w in cnt.items()]]
                               for a, cnt in c.categories.items()],
                "moments": [[a, [[plain(k), *_moments_list(m)] for k, m in per_class.items()]]
                            for a, per_class in c.moments.items()],
                "spread": [[a, *_moments_list(m)] for a, m in c.spread.items()]}
            return d
        d["class_weight"] = [[plain(k), float(w)] for k, w in zip(self.classes_, self.class_count_)]
        d["attributes"] = [{"name": a.name, "kind": int(a.kind), "counts": table.tolist(),
                            "values": [plain(v) for v in a.categories] if a.kind == CATEGORICAL
                            else [float(x) for x in a.cuts]}
                           for a, table in zip(self._schema.attributes, self.category_count_)]
        return d

    @classmethod
    def from_model_dict(cls, d: dict, **params) -> "NaiveBayesClassifier":
        """The fitted model of :meth:`model_dict`'s output, with ``params`` (ValueError, KeyError, ...
        if ``d`` is malformed)."""
        est = cls(**params)
        est._set_model_dict(d)
        return est

    def _set_model_dict(self, d: dict) -> None:
        if d.get("format") != BAYES_FORMAT:
            raise ValueError(f"no naive Bayes model in it (format {d.get('format')!r})")
        if d.get("version") != BAYES_VERSION:
            raise ValueError(f"naive Bayes format version {d.get('version')!r}; this build reads {BAYES_VERSION}")
        kinds = {}
        for name, kind in d["features"]:
            if not isinstance(name, str) or kind not in (NUMERIC, CATEGORICAL) or isinstance(kind, bool):
                raise ValueError(f"feature {name!r} has an unknown kind {kind!r}")
            kinds[name] = kind
        self._kinds, self._target = kinds, d["target"]
        if "counts" in d:
            self._set_gaussian_model(_counts_from_dict(d["counts"]))
        else:
            class_weight = {k: float(w) for k, w in d["class_weight"]}
            attributes, tables = [], []
            for a in d["attributes"]:
                numeric = a["kind"] == NUMERIC
                attributes.append(Attribute(a["name"], a["kind"], exact=False,
                                            cuts=np.asarray(a["values"] if numeric else [], np.float64),
                                            categories=[] if numeric else list(a["values"])))
                tables.append(np.asarray(a["counts"], np.float64))
                if tables[-1].shape != (len(class_weight), attributes[-1].n_slots):
                    raise ValueError(f"the count table of {a['name']!r} has shape {tables[-1].shape}")
            schema = Schema(attributes, Label(self._target, sorted(class_weight)))
            self._set_binned_model(schema, class_weight, tables)
        self._set_inputs()

    # -- prediction ------------------------------------------------------------------------
    def _joint_log_likelihood(self, table: pa.Table) -> np.ndarray:
        n = table.num_rows
        jll = np.tile(self.class_log_prior_, (n, 1))
        for j, a in enumerate(self.numeric_features_):
            x = numeric_values(table.column(a))
            ok = ~np.isnan(x)
            var = self.var_[:, j]
            term = -0.5 * np.log(2.0 * np.pi * var)[None, :] - 0.5 * (x[:, None] - self.theta_[None, :, j]) ** 2 / var
            jll[ok] += term[ok]
        for j, a in enumerate(self.counted_features_):
            codes = self._codes(j, a, table.column(a))
            ok = codes >= 0  # missing and unseen values are skipped
            jll[ok] += self.feature_log_prob_[j][:, codes[ok]].T
        return jll

    def _codes(self, j: int, name: str, col) -> np.ndarray:
        if self.numeric == "binned" and self._schema.attributes[j].kind != CATEGORICAL:
            x = numeric_values(col)
            codes = np.searchsorted(np.asarray(self.categories_[j]), x, side="left").astype(np.int64)
            codes[np.isnan(x)] = -1
            return codes
        values = category_values(col)
        cats = self.categories_[j]
        idx = pc.index_in(values, value_set=pa.array(cats, type=values.type) if cats else pa.array([], values.type))
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    def predict_joint_log_proba(self, X) -> np.ndarray:
        """log P(x, c) = log P(c) + sum_i log P(x_i | c) for every row and class."""
        self._check_fitted()
        parts = [self._joint_log_likelihood(t) for t in feature_tables(
            X, list(self.feature_names_in_), strict_names=False, batch_size=self.batch_size)]
        return np.concatenate(parts) if parts else np.empty((0, len(self.classes_)))

    def predict_log_proba(self, X) -> np.ndarray:
        """log P(c | x), normalised in log space."""
        jll = self.predict_joint_log_proba(X)
        top = jll.max(axis=1, keepdims=True)
        return jll - (top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True)))

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row."""
        jll = self.predict_joint_log_proba(X)  # checks that the model is fitted before classes_ is read
        return self.classes_[np.argmax(jll, axis=1)]


# -- model files ------------------------------------------------------------------------------
@contextmanager
def reading_model(doc, estimator: str, path: str):
    """Read a parsed model file of ``estimator``: whatever is malformed in it becomes one
    ValueError naming the file (the top-level format and version are checked by ``load``)."""
    if not isinstance(doc, dict) or doc.get("estimator") != estimator:
        raise ValueError(f"{path!r} holds no {estimator} model")
    try:
        yield
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        why = f"the entry {exc} is missing" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"{path!r} holds a corrupt {estimator} model: {why}") from None


def _moments_list(m: Moments) -> list:
    return [float(m.w), float(m.mean), float(m.m2)]


def _counts_from_dict(d: dict) -> BayesCounts:
    """:class:`BayesCounts` from the ``counts`` part of :meth:`NaiveBayesClassifier.model_dict`."""
    counts = BayesCounts(n_rows=int(d["n_rows"]))
    counts.class_weight = {k: float(w) for k, w in d["class_weight"]}
    counts.categories = {a: {(k, v): float(w) for k, v, w in cells} for a, cells in d["categories"]}
    counts.moments = {a: {k: Moments(float(w), float(mean), float(m2)) for k, w, mean, m2 in per_class}
                      for a, per_class in d["moments"]}
    counts.spread = {a: Moments(float(w), float(mean), float(m2)) for a, w, mean, m2 in d["spread"]}
    return counts


def _with_classes(counts: BayesCounts, classes) -> BayesCounts:
    """``counts`` holding every class of ``classes`` (zero weight for those not seen); a class seen
    but not listed is a DataError."""
    listed = [plain(c) for c in np.asarray(classes).tolist()]
    unknown = [c for c in counts.class_weight if c not in listed]
    if unknown:
        raise DataError(f"partial_fit saw class {unknown[0]!r}, which is not in classes={listed!r}")
    for c in listed:
        counts.class_weight.setdefault(c, 0.0)
    return counts


register_reader("NaiveBayesClassifier", NaiveBayesClassifier.from_document)
