"""The profiling pass: one pass that learns what every column holds.

It finds the label's classes, each categorical attribute's categories, each
numeric attribute's exact distinct values (exact mode) or quantile bin edges
(binned mode, from a uniform row sample chosen by a hash of the row's global
index, so the sample does not depend on batch sizes or file layout), and it
rejects bad data with an error that names the column and value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from .count_bins import EXACT_BINS, key_bin_count
from .errors import DataError
from .profile_data import (ColumnProfile, Profile, midpoint, midpoints, quantile_edges,  # noqa: F401 (public here too)
                           unique_sorted)
from .rowhash import row_hash
from .schema import (CATEGORICAL, NUMERIC, Attribute, Label, Schema, category_values, check_classes,
                     check_numeric_target, check_weight_total, numeric_values, plain_numbers, present_rows)
from .storage.arrow_numpy import arrow_values, read_only
from .storage.lazy import lazy_module
from .target_parts import target_grid
from .threads import run_ranges
from .value_keys import key_bins

pc = lazy_module("pyarrow.compute")  # not imported by fits that never call it (a fresh process's first fit)


@dataclass
class ProfileTask:
    """A :class:`rainforest.storage.PassTask` computing a :class:`Profile`."""

    kinds: dict  # column -> NUMERIC / CATEGORICAL
    target: str
    weight: str | None
    where: str
    exact: bool
    max_bins: int
    sample_rows: int = 200_000
    seed: int = 0
    regression: bool = False  # the target is a number to predict (its range is kept), not a class
    # exact mode: a numeric column with more distinct values than this keeps none of them; its rows are
    # encoded as value keys, counted in bins from the sample (rainforest.value_keys). None: keep them all
    key_cap: int | None = None
    # exact mode: the memory budget, where keyed columns are counted in more bins on more rows as it
    # allows (rainforest.count_bins.key_bin_count); None: in EXACT_BINS bins
    key_budget: int | None = None

    @property
    def sampled(self) -> bool:
        """Whether numeric columns are sampled (binned mode; exact mode where a column may be keyed)."""
        return not self.exact or self.key_cap is not None

    def _cap(self) -> int | None:
        """Distinct values a numeric column keeps at most (None: all)."""
        return self.key_cap if self.exact else self.max_bins

    @property
    def numeric(self) -> list[str]:
        return [c for c, k in self.kinds.items() if k == NUMERIC]

    def new_state(self) -> Profile:
        p = Profile(columns={c: ColumnProfile(k) for c, k in self.kinds.items()})
        p.sample = np.empty((0, len(self.numeric)), order="F")
        p.sample_columns = self.numeric
        return p

    def update(self, p: Profile, batch: pa.RecordBatch, first_row: int) -> Profile:
        p.n_rows += batch.num_rows  # every row read: a forest keeps and numbers them all
        rows = np.arange(first_row, first_row + batch.num_rows, dtype=np.uint64)  # their identities
        if self.weight is not None:
            w = numeric_values(batch.column(self.weight))
            bad = ~np.isfinite(w) | (w < 0)
            if bad.any():
                raise DataError(f"the weight column {self.weight!r} of {self.where} has a bad value "
                                f"{w[bad][0]!r} at row {first_row + int(np.argmax(bad))} (weights must be finite and >= 0)")
            p.weight_total = (p.weight_total or 0.0) + float(w.sum())
            p.fractional_weights = bool(p.fractional_weights) or bool(np.any(w != np.floor(w)))
            present = present_rows(w)
            if present is not None:  # the rest is learned from the rows that count
                batch, rows = batch.filter(pa.array(present)), rows[present]
        n = batch.num_rows
        self._update_label(p, batch.column(self.target))
        h = chosen = None
        if self.sampled:  # hash first: only rows that can enter the sample are copied
            h = row_hash(rows, self.seed)
            chosen = np.flatnonzero(h < p.hash_limit) if p.hash_limit is not None else None
            at = self._reserve(p, n if chosen is None else len(chosen))
            p.sample_hash[at:p.n_sample] = h if chosen is None else h[chosen]
        j = 0  # the numeric column's index in the sample
        distinct_jobs = []  # exact mode: (column profile, present values, type), sorted on threads below
        for name, cp in p.columns.items():
            col = batch.column(name)
            if cp.kind == CATEGORICAL:
                vc = pc.value_counts(category_values(col))
                for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
                    if v is not None:
                        cp.counts[v] = cp.counts.get(v, 0) + c
                        cp.nonmissing += c
                continue
            x = plain_numbers(col)  # integers stay integers: no float copy of the column
            present, inf = _present_values(x) if x.dtype.kind == "f" else (n, -1)
            if inf >= 0:
                raise DataError(f"column {name!r} of {self.where} holds {x[inf]} at row "
                                f"{int(rows[inf])}; infinite values cannot be split on "
                                f"(use null or NaN for missing values)")
            cp.nonmissing += present
            if cp.distinct is not None:
                ok = x if present == n else x[~np.isnan(x)]
                if self.exact:
                    distinct_jobs.append((cp, ok, col.type))
                else:  # only whether there are at most max_bins distinct values matters
                    cp.distinct = few_distinct(cp.distinct, _integer_distinct(ok, col.type), self.max_bins)
            if self.sampled:
                p.sample[at:p.n_sample, j] = x if chosen is None else x[chosen]
            j += 1
        run_ranges(len(distinct_jobs), lambda lo, hi: [_add_distinct(*job) for job in distinct_jobs[lo:hi]])
        if self.key_cap is not None:
            for cp, _, _ in distinct_jobs:  # pending parts repeat values: merged before a column is keyed
                if len(cp.distinct) + sum(len(u) for u in cp.pending) > self.key_cap \
                        and len(cp.distinct_values()) > self.key_cap:
                    cp.distinct, cp.pending = None, []  # keyed from here on: the sample gives its bins
        if self.sampled and p.n_sample > 2 * self.sample_rows:
            self._prune(p)
        return p

    def check_label(self, col) -> pa.Array:
        """The label column as a plain array; a DataError if it holds nulls or NaN."""
        arr = category_values(col)
        if arr.null_count:
            raise DataError(f"the target column {self.target!r} of {self.where} has null values; "
                            f"drop those rows or fill them")
        if pa.types.is_floating(arr.type) and pc.any(pc.is_nan(arr)).as_py():
            raise DataError(f"the target column {self.target!r} of {self.where} has NaN values")
        return arr

    def _update_label(self, p: Profile, col) -> None:
        arr = self.check_label(col)
        if self.regression:
            self.update_label_range(p, arr)
            return
        if pa.types.is_integer(arr.type) and len(arr):  # counted by value (fast), as value_counts would
            codes = arrow_values(arr)
            lo, hi = _value_range(codes)
            if hi - lo <= 1 << 16 and -(1 << 62) < int(lo) and int(hi) < 1 << 62:
                counts = np.bincount(codes.astype(np.int64) - int(lo))
                for k in np.flatnonzero(counts):
                    v = int(lo) + int(k)
                    p.label_counts[v] = p.label_counts.get(v, 0) + int(counts[k])
                return
        vc = pc.value_counts(arr)
        for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            p.label_counts[v] = p.label_counts.get(v, 0) + c

    def update_label_range(self, p: Profile, arr: pa.Array) -> None:
        """Widen a regressor's target range by the values ``arr`` (checked to be numbers)."""
        check_numeric_target(arr.type, self.target, self.where)
        if len(arr):
            lo, hi = (float(v.as_py()) if v.as_py() is not None else math.nan for v in pc.min_max(arr).values())
            if math.isinf(lo) or math.isinf(hi):
                raise DataError(f"the target column {self.target!r} of {self.where} holds an infinite value; a "
                                f"regressor needs finite numbers")
            if not math.isnan(lo):  # a batch of nulls and NaN only (refused when its rows are encoded)
                p.label_range = merged_range(p.label_range, (lo, hi))

    def _reserve(self, p: Profile, rows: int) -> int:
        """Make room for ``rows`` more sampled rows (pruning first, then growing the buffers only if
        that is not enough); the index of the first, with ``n_sample`` already counting them."""
        if p.n_sample + rows > len(p.sample_hash):
            self._prune(p)
        if p.n_sample + rows > len(p.sample_hash):
            size = max(p.n_sample + rows, 2 * self.sample_rows + rows)
            hashes, sample = np.empty(size, np.uint64), np.empty((size, p.sample.shape[1]), order="F")
            hashes[:p.n_sample], sample[:p.n_sample] = p.sample_hash[:p.n_sample], p.held_sample()
            p.sample_hash, p.sample = hashes, sample
        p.n_sample += rows
        return p.n_sample - rows

    def _prune(self, p: Profile) -> None:
        """Keep the ``sample_rows`` rows of smallest hash, in place and in the order they arrived."""
        if p.n_sample > self.sample_rows:
            kept = np.zeros(p.n_sample, np.bool_)  # ascending by a mask, not by sorting
            kept[np.argpartition(p.sample_hash[:p.n_sample], self.sample_rows)[:self.sample_rows]] = True
            keep = np.flatnonzero(kept)
            _keep_in_place(keep, p.sample_hash, p.sample)
            p.n_sample = self.sample_rows
        if p.n_sample >= self.sample_rows:
            p.hash_limit = int(p.sample_hash[:p.n_sample].max())

    @property
    def order_free(self) -> bool:
        """Whether profiles merged in any order are the same: without weights (classes and categories are
        sorted, the sample is the rows of smallest hash, counts are integers)."""
        return self.weight is None

    def shrink(self, p: Profile) -> Profile:
        """The profile as it leaves a Dask worker: the sample pruned to ``sample_rows`` rows and its
        buffers cut to the rows they hold (they are allocated for twice that, and more): the pickled
        profile of a partition of 500,000 Agrawal rows went from 53 MB to 16 MB.  The same profile,
        smaller."""
        if self.sampled:
            self._prune(p)
        if len(p.sample_hash) > p.n_sample:
            p.sample_hash, p.sample = p.sample_hash[:p.n_sample].copy(), np.asfortranarray(p.held_sample())
        return p

    def sql_aggregate(self, relation):
        """This pass as one aggregate query over a SQL relation (see :mod:`rainforest.pushdown`)."""
        from .pushdown import profile_query
        return profile_query(self, relation)

    def merge(self, a: Profile, b: Profile) -> Profile:
        a.n_rows += b.n_rows
        if b.weight_total is not None:
            a.weight_total = (a.weight_total or 0.0) + b.weight_total
        if b.fractional_weights is not None:
            a.fractional_weights = bool(a.fractional_weights) or b.fractional_weights
        for v, c in b.label_counts.items():
            a.label_counts[v] = a.label_counts.get(v, 0) + c
        a.label_range = merged_range(a.label_range, b.label_range)
        for name, cb in b.columns.items():
            ca = a.columns[name]
            ca.nonmissing += cb.nonmissing
            for v, c in cb.counts.items():
                ca.counts[v] = ca.counts.get(v, 0) + c
            if ca.distinct is None or cb.distinct is None:
                ca.distinct = None
            else:
                ca.pending.extend([cb.distinct] + cb.pending)
                ca.distinct_values()
                cap = self._cap()
                if cap is not None and len(ca.distinct) > cap:
                    ca.distinct = None
        if b.n_sample:
            self._prune(b)
            at = self._reserve(a, b.n_sample)
            a.sample_hash[at:a.n_sample], a.sample[at:a.n_sample] = b.sample_hash[:b.n_sample], b.held_sample()
            self._prune(a)
        return a

    def schema(self, p: Profile) -> Schema:
        """Turn the profile into the model's :class:`Schema`."""
        if p.n_rows == 0:
            raise DataError(f"{self.where} has no rows")
        if p.weight_total is not None:
            check_weight_total(p.weight_total, self.weight, self.where)
        if self.regression:
            if p.label_range is None:
                raise DataError(f"{self.where} has no rows of positive weight")
            shift = target_shift(*p.label_range)
            grid = target_grid(*p.label_range, shift, p.n_rows) if self.weight is None and not self.exact else None
            label = Label(self.target, [], shift=shift, grid=grid)
        elif len(p.label_counts) < 2:
            only = next(iter(p.label_counts), None)
            raise DataError(f"the target column {self.target!r} of {self.where} has a single class "
                            f"({only!r}); a classifier needs at least two")
        if not self.regression:
            check_classes(p.label_counts, self.target, self.where)
            label = Label(self.target, _sorted_values(p.label_counts, self.target))
        self._prune(p)
        sample = p.held_sample()[np.argsort(p.sample_hash[:p.n_sample], kind="stable")]
        attributes = []
        numeric_index = {c: i for i, c in enumerate(self.numeric)}
        n_bins = self._key_bins(p, label)
        for name, cp in p.columns.items():
            if cp.nonmissing == 0:
                raise DataError(f"column {name!r} of {self.where} is entirely null; drop it from the features")
            if cp.kind == CATEGORICAL:
                attributes.append(Attribute(name, CATEGORICAL, categories=_sorted_values(cp.counts, name)))
            elif self.exact and cp.distinct is None:
                col = sample[:, numeric_index[name]]
                attributes.append(Attribute(name, NUMERIC, exact=True, keys=key_bins(col[~np.isnan(col)], n_bins)))
            elif self.exact:
                attributes.append(Attribute(name, NUMERIC, exact=True, cuts=cp.distinct_values()))
            elif cp.distinct is not None:
                attributes.append(Attribute(name, NUMERIC, exact=False, cuts=midpoints(cp.distinct)))
            else:
                if p.sample_edges is not None:
                    cuts = p.sample_edges[name]
                else:
                    col = sample[:, numeric_index[name]]
                    cuts = quantile_edges(col[~np.isnan(col)], self.max_bins)
                attributes.append(Attribute(name, NUMERIC, exact=False, cuts=cuts))
        return Schema(attributes, label, self.weight, fractional_weights=p.fractional_weights)

    def _key_bins(self, p: Profile, label: Label) -> int:
        """The bins a keyed column is counted in (:func:`rainforest.count_bins.key_bin_count`): more on more
        rows where :attr:`key_budget` is set, else :data:`EXACT_BINS`.  The other columns' slots are
        those of an exact tree: categories, distinct values (counted in up to ``EXACT_BINS`` bins), one
        missing slot each."""
        n_keyed = sum(cp.kind != CATEGORICAL and cp.distinct is None for cp in p.columns.values())
        if self.key_budget is None or not self.exact or not n_keyed:
            return EXACT_BINS
        other = sum(len(cp.counts) + 1 if cp.kind == CATEGORICAL else min(len(cp.distinct_values()), EXACT_BINS) + 1
                    for cp in p.columns.values() if cp.kind == CATEGORICAL or cp.distinct is not None)
        # keyed columns are counted only by unit-weight classifiers (tree_setup.value_key_cap): a channel a class
        return key_bin_count(p.n_rows, self.key_budget, n_keyed, other, label.n_channels)


def merged_range(a: tuple | None, b: tuple | None) -> tuple | None:
    """The smallest and largest of two ``(low, high)`` ranges (None: an empty one)."""
    return b if a is None else a if b is None else (min(a[0], b[0]), max(a[1], b[1]))


def target_shift(low: float, high: float) -> float:
    """What a regressor's rows hold their target less: the middle of its range, so that sums of
    ``y - shift`` and their squares keep their precision when the mean is large against the spread.
    The range is known whatever the order the rows come in, so every source sums the same numbers."""
    return low / 2.0 + high / 2.0


@numba.njit(cache=True, nogil=True)
def _present_values(x):
    """How many values of ``x`` are not NaN, and the index of its first infinite value (-1: none):
    one read of the column, no temporary arrays."""
    nan = 0
    nan_or_inf = 0  # v - v is NaN for both; branch-free sums, so the loop vectorizes
    for i in range(x.shape[0]):
        v = x[i]
        nan += v != v
        d = v - v
        nan_or_inf += d != d
    if nan_or_inf > nan:
        for i in range(x.shape[0]):
            if x[i] == x[i] and x[i] - x[i] != 0.0:
                return x.shape[0] - nan, i
    return x.shape[0] - nan, -1


@numba.njit(cache=True, nogil=True)
def _keep_in_place(keep, hashes, sample):
    """Move the rows ``keep`` (ascending) of ``hashes`` and ``sample`` to the front, in order: row
    ``keep[i] >= i`` is read before anything is written over it."""
    for i in range(keep.shape[0]):
        hashes[i] = hashes[keep[i]]
    for j in range(sample.shape[1]):
        for i in range(keep.shape[0]):
            sample[i, j] = sample[keep[i], j]


@numba.njit(cache=True, nogil=True)
def _few_distinct(known, values, limit):
    """Sorted distinct values of ``known`` and ``values``, or an empty array with flag False past ``limit``.
    A value is new unless equal (``==``, so -0.0 is 0.0) to one held: an open-addressing table of the
    held values finds it in about one probe, where keeping them sorted moved half of them for each
    new one (a 1,000-row fit's continuous column: 27 us to reach the limit, now a few)."""
    size = 1
    while size < 2 * (limit + 1):
        size *= 2
    held = np.empty(limit + 1)
    slot = np.full(size, -1, np.int64)  # index into held, -1: empty
    k = 0
    for part in range(2):
        src = known if part == 0 else values
        for v in src:
            h = np.float64(v + 0.0).view(np.uint64)  # +0.0: -0.0 hashes as 0.0, the value it equals
            i = np.int64((h ^ (h >> np.uint64(29))) * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(40)) & (size - 1)
            while slot[i] >= 0 and held[slot[i]] != v:
                i = (i + 1) & (size - 1)
            if slot[i] >= 0:
                continue
            if k == limit:
                return held[:0], False
            slot[i] = k
            held[k] = v
            k += 1
    return np.sort(held[:k]), True


def _add_distinct(cp: ColumnProfile, values: np.ndarray, typ: pa.DataType) -> None:
    """Add a batch's distinct values to an exact column's profile, merging the pending ones once they
    outgrow the held ones.  Columns are independent: their sorts (which release the GIL) run on
    threads, :func:`rainforest.threads.run_ranges`, each column's in batch order."""
    cp.pending.append(_sorted_distinct(values, typ))
    if sum(len(u) for u in cp.pending) > max(len(cp.distinct), 1 << 16):
        cp.distinct_values()


def _sorted_distinct(values: np.ndarray, typ: pa.DataType) -> np.ndarray:
    """The sorted distinct values of a batch: by marking for integers in a small range, else by sorting
    (one sort and a compare: ``np.unique`` hashes first and sorts what it found, twice the work when
    most values are distinct, as continuous columns' are).  ``values`` holds no NaN."""
    marked = _integer_distinct(values, typ)
    return marked if marked is not values else unique_sorted(np.sort(values))


def _integer_distinct(values: np.ndarray, typ: pa.DataType) -> np.ndarray:
    """The distinct values of an integer column by marking them (fast), else the values unchanged."""
    if not pa.types.is_integer(typ) or len(values) == 0:
        return values
    lo, hi = _value_range(values)
    if float(hi) - float(lo) > 1 << 20:  # in floats: int64 extremes would wrap
        return values
    return np.flatnonzero(_marked(values, lo, int(hi - lo) + 1)) + lo


@numba.njit(cache=True, nogil=True)
def _value_range(values):
    lo = hi = values[0]
    for v in values:
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@numba.njit(cache=True, nogil=True)
def _marked(values, lo, n):
    seen = np.zeros(n, np.bool_)
    for v in values:
        seen[int(v - lo)] = True
    return seen


def few_distinct(known: np.ndarray, values: np.ndarray, limit: int) -> np.ndarray | None:
    """Merge the distinct ``values`` into ``known``; ``None`` once there are more than ``limit``."""
    # read-only whatever made them (a zero-copy Arrow view is): one specialization, and no copy
    out, ok = _few_distinct(read_only(np.asarray(known, np.float64)), read_only(np.asarray(values, np.float64)),
                            int(limit))
    return out if ok else None


def _sorted_values(counts: dict, name: str) -> list:
    try:
        return sorted(counts)
    except TypeError:
        raise DataError(f"column {name!r} mixes values of different types") from None
