"""What the profiling pass finds (:class:`Profile`, one :class:`ColumnProfile` per column) and
the bin edges made from it: shared by the pass over rows (:mod:`rainforest.profile`) and its SQL
form (:mod:`rainforest.pushdown`), which builds the same results in the database.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np


@dataclass
class ColumnProfile:
    kind: int
    nonmissing: int = 0
    distinct: np.ndarray | None = field(default_factory=lambda: np.empty(0))  # None once too many
    counts: dict = field(default_factory=dict)  # categorical value -> rows
    pending: list = field(default_factory=list)  # exact mode: batches' distinct values not merged yet

    def distinct_values(self) -> np.ndarray:
        """All distinct values seen (exact mode), merging the pending ones: amortised O(n log n), not
        one union per batch.  Every part is sorted and distinct already: the pending parts (together
        about as large as what is held) are merged by timsort, which merges sorted runs, then into
        what is held in one linear pass (a third faster than timsort over both, at 10M values)."""
        if self.pending:
            new = np.concatenate(self.pending)
            self.pending = []  # the parts are freed: a merge holds what it merges about three times, not five
            dtype = np.result_type(self.distinct.dtype, new.dtype)  # as one concatenation types them
            new = new.astype(dtype, copy=False)
            new.sort(kind="stable")  # timsort: it merges the sorted runs
            m, merged = _merge_distinct(self.distinct.astype(dtype, copy=False), unique_sorted(new))
            self.distinct = merged[:m]
        return self.distinct


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (``np.unique`` without its sort)."""
    if len(values) == 0:
        return values
    first = np.empty(len(values), np.bool_)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]


@numba.njit(cache=True, nogil=True)
def _merge_distinct(a, b):
    """The sorted union of two sorted arrays of distinct values: ``(m, buffer)``, the union being
    ``buffer[:m]``.  The buffer has room for both; it is returned as it is unless repeats left more
    than an eighth of it empty (then a copy of the union): no second copy of mostly distinct values."""
    out = np.empty(a.shape[0] + b.shape[0], a.dtype)
    i = j = m = 0
    while i < a.shape[0] and j < b.shape[0]:
        if a[i] < b[j]:
            out[m] = a[i]
            i += 1
        elif b[j] < a[i]:
            out[m] = b[j]
            j += 1
        else:
            out[m] = a[i]
            i += 1
            j += 1
        m += 1
    while i < a.shape[0]:
        out[m] = a[i]
        i += 1
        m += 1
    while j < b.shape[0]:
        out[m] = b[j]
        j += 1
        m += 1
    return m, out[:m].copy() if m * 8 < out.shape[0] * 7 else out


@dataclass
class Profile:
    """What the profiling pass found."""

    n_rows: int = 0
    label_counts: dict = field(default_factory=dict)  # a classifier's rows per class
    label_range: tuple | None = None  # a regressor's smallest and largest target (None: no row yet)
    weight_total: float | None = None  # the weight column's sum (None: not summed, e.g. pushed down)
    fractional_weights: bool | None = None  # whether a weight is not a whole number (None: not known)
    columns: dict = field(default_factory=dict)
    # the binning sample: its first ``n_sample`` rows (numeric columns, Fortran order) and their hashes;
    # the buffers are filled in place and pruned in place, so a pass allocates them a few times, not per batch
    sample_hash: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    sample: np.ndarray = field(default_factory=lambda: np.empty((0, 0), order="F"))
    n_sample: int = 0
    hash_limit: int | None = None  # rows with a smaller hash may enter; None while the sample is not full
    # a pushed-down profile's quantile bin edges per numeric column (found in the database)
    sample_edges: dict | None = None
    sample_columns: list = field(default_factory=list)  # the sample's columns, by name

    def held_sample(self) -> np.ndarray:
        """The sampled rows (rows x numeric columns) in the order they arrived."""
        return self.sample[:self.n_sample]

    def __getstate__(self) -> dict:
        """Pickled (a Dask worker's profile on its way to the merge): the held sample only, a column of
        few distinct values as one-byte codes (:func:`coded_column`; Agrawal's: 16 MB to 9 MB)."""
        state = dict(self.__dict__)
        held = self.held_sample()
        state["sample_hash"] = self.sample_hash[:self.n_sample]
        state["sample"] = [coded_column(held[:, j], self._known_values(j)) for j in range(held.shape[1])]
        return state

    def __setstate__(self, state: dict) -> None:
        columns = state.pop("sample")
        self.__dict__.update(state)
        self.sample = np.empty((self.n_sample, len(columns)), order="F")
        for j, column in enumerate(columns):
            self.sample[:, j] = decoded_column(column)

    def _known_values(self, j: int) -> np.ndarray | None:
        """The distinct values column ``j`` of the sample was seen to hold (None: too many to keep, or
        more than a coded column holds).  Exact mode's pending parts repeat values: they are merged
        first (:meth:`ColumnProfile.distinct_values`, bounded by its own merge rule), where their
        concatenation would pass :data:`CODED_VALUES` and leave a column of few values uncoded."""
        cp = self.columns.get(self.sample_columns[j]) if j < len(self.sample_columns) else None
        if cp is None or cp.distinct is None or len(cp.distinct) > CODED_VALUES:
            return None
        return cp.distinct_values()


CODED_VALUES = 256  # a coded sample column's distinct values at most (one-byte codes)


def coded_column(column: np.ndarray, known: np.ndarray | None):
    """``column`` (float64) as ``(values, codes)`` (uint8 codes into ``values``) when every one of its
    values is, bit for bit, one of at most :data:`CODED_VALUES` ``known`` values; else ``column``."""
    if known is None or not 0 < len(known) <= CODED_VALUES or len(column) == 0:
        return column
    values = np.unique(known.astype(np.float64))
    codes = np.minimum(np.searchsorted(values, column), len(values) - 1)
    if not np.array_equal(values[codes].view(np.uint64), np.ascontiguousarray(column).view(np.uint64)):
        return column  # NaN, -0.0 for 0.0, a value not among the known ones
    return values, codes.astype(np.uint8)


def decoded_column(column) -> np.ndarray:
    """The float64 column :func:`coded_column` was given."""
    return column if isinstance(column, np.ndarray) else column[0][column[1]]


def midpoint(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Halfway between ``a`` and the next value ``b`` (scikit-learn's formula: ``a`` when rounding reaches ``b``)."""
    t = a / 2.0 + b / 2.0
    return np.where(t == b, a, t)


def midpoints(values: np.ndarray) -> np.ndarray:
    """Edges halfway between consecutive distinct values."""
    return midpoint(values[:-1], values[1:])


def quantile_edges(values: np.ndarray, max_bins: int) -> np.ndarray:
    """At most ``max_bins`` bins of about equal weight from a sample (float64 values, no NaN); heavy
    values get bins of their own.  (:func:`rainforest.pushdown.profile_query` chooses the same edges
    in SQL.)

    The distinct values ``u`` with their counts, sorted; all their midpoints when there are at most
    ``max_bins``; else, for each ``k`` in ``1 .. max_bins - 1``, the cut after the first value whose
    cumulative count reaches ``total * k / max_bins``, once each and not after the last value.  One
    sort (numpy's: its vectorised sort is several times Numba's) and linear scans in a kernel, where
    numpy's ``unique`` and ``searchsorted`` took 110 us a column of a 1,000-row fit, a third of its
    time."""
    return _edges_of_sorted(np.sort(np.asarray(values, dtype=np.float64)), int(max_bins))


@numba.njit(cache=True, nogil=True)
def _edges_of_sorted(v, max_bins):
    u = np.empty(v.shape[0])
    cum = np.empty(v.shape[0], np.int64)  # the cumulative count up to each distinct value
    k = 0
    for i in range(v.shape[0]):
        if k > 0 and v[i] == u[k - 1]:
            cum[k - 1] += 1
        else:
            u[k] = v[i]
            cum[k] = (cum[k - 1] if k > 0 else 0) + 1
            k += 1
    if k <= max_bins:
        out = np.empty(max(k - 1, 0))
        for i in range(k - 1):
            out[i] = _midpoint(u[i], u[i + 1])
        return out
    total = cum[k - 1]
    out = np.empty(max_bins - 1)
    m = 0
    at = 0
    last = -1
    for j in range(1, max_bins):
        target = total * j / max_bins  # as numpy: an int64 product, then a true division
        while at < k and cum[at] < target:  # the targets grow: the search goes on from the last one
            at += 1
        if at != last and at < k - 1:
            out[m] = _midpoint(u[at], u[at + 1])
            m += 1
        last = at
    return out[:m]


@numba.njit(cache=True, nogil=True, inline="always")
def _midpoint(a, b):
    """:func:`midpoint` of two values, in a kernel (``test_quantile_edges_kernel_follows_the_numpy_rule``
    holds the two to the same floats, at float64's extremes too)."""
    t = a / 2.0 + b / 2.0
    return a if t == b else t
