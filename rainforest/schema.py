"""Attribute kinds, the label's classes, and the encoders that turn columns into codes.

A batch is encoded once, as a float64 matrix: numeric attributes as their
values, categorical attributes as category codes ``0..V-1`` (``V`` = a category
unseen in training), missing values (null, NaN) as NaN. The same matrix is
routed through the tree (training and prediction alike) and counted: the
counting kernel turns a numeric value into its *slot* on the fly, the index
``searchsorted(cuts, x, "left")`` (a bin in binned mode, the rank of the exact
value in exact mode).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from .errors import DataError
from .profile_data import midpoint
from .split_scores import REGRESSION_CHANNELS
from .storage.arrow_numpy import arrow_values, numpy_column, read_only
from .storage.lazy import lazy_module
from .value_keys import KEY_MISSING, KeyBins, value_of_key

pc = lazy_module("pyarrow.compute")  # its import builds every compute function's wrapper: 40 ms of a fresh process

NUMERIC = 0
CATEGORICAL = 1


def arrow_kind(name: str, typ: pa.DataType, where: str) -> int:
    """The default kind of an Arrow type, or a DataError naming the column and its type.

    Numeric: integers, floats (half to double), decimals of any precision, dates, times,
    timestamps of every unit and time zone, durations.  Categorical: strings (also large and
    view strings) and booleans.  Dictionaries take their values' kind.  Anything else (binary,
    intervals, lists, structs, maps, null) is refused.
    """
    value_type = typ.value_type if pa.types.is_dictionary(typ) else typ
    if pa.types.is_integer(value_type) or pa.types.is_floating(value_type) or pa.types.is_decimal(value_type) \
            or (pa.types.is_temporal(value_type) and not pa.types.is_interval(value_type)):
        return NUMERIC
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or pa.types.is_boolean(value_type) \
            or getattr(pa.types, "is_string_view", lambda t: False)(value_type):
        return CATEGORICAL
    raise DataError(f"column {name!r} of {where} has type {typ}, which cannot be split on; "
                    f"drop it or cast it to a number or a string")


def numeric_values(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """float64 values of a numeric (or temporal) column, NaN for nulls.

    A temporal value is its integer count of the type's unit since the epoch (or midnight): a
    timestamp[ns] of today is about 1.7e18, beyond float64's exact integers, so its float64 is
    the nearest double (order kept; instants a few hundred ns apart may share one)."""
    typ = arr.type
    if pa.types.is_dictionary(typ):
        arr = arr.cast(typ.value_type) if isinstance(arr, pa.ChunkedArray) else arr.dictionary_decode()
        typ = arr.type
    if pa.types.is_temporal(typ):
        narrow = pa.types.is_date32(typ) or pa.types.is_time32(typ)
        arr = pc.cast(arr, pa.int32() if narrow else pa.int64())
        typ = arr.type
    if typ != pa.float64():
        # unsafe: the nearest double of a large integer or decimal, not an error (rounding only)
        arr = pc.cast(arr, pa.float64(), safe=False)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arrow_values(arr)


def plain_numbers(arr) -> np.ndarray:
    """A numeric column's values as numpy, without a copy where Arrow allows it (a null-free integer
    or floating column, in its own type; kernels convert as they read), else float64 with NaN for
    nulls.  Always read-only, so that a kernel is compiled once per value type, not per flag."""
    if isinstance(arr, pa.ChunkedArray) and arr.num_chunks == 1:
        arr = arr.chunk(0)
    typ = arr.type
    if isinstance(arr, pa.Array) and not arr.null_count and (
            (pa.types.is_integer(typ) or pa.types.is_floating(typ)) and typ != pa.float16()):
        values = arrow_values(arr)
    else:
        values = numeric_values(arr)
    return read_only(values)


def category_values(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A categorical column as a plain (non-dictionary) Arrow array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


@dataclass
class Attribute:
    """One attribute: its kind and what its slots mean.

    ``cuts`` for numeric attributes are the sorted exact values (exact mode)
    or the bin edges (binned mode); a value's slot is
    ``searchsorted(cuts, x, "left")``.  An exact attribute whose distinct values the profile did not
    keep has ``keys`` instead (:class:`rainforest.value_keys.KeyBins`): a value's slot is its key.
    ``categories`` for categorical attributes are the sorted values seen in training; a value's
    code is its index there, unknown values get ``len(categories)``.
    """

    name: str
    kind: int
    exact: bool = True
    cuts: np.ndarray = field(default_factory=lambda: np.empty(0))
    categories: list = field(default_factory=list)
    keys: KeyBins | None = None

    @property
    def n_slots(self) -> int:
        """Value slots, not counting the trailing missing-value slot (a keyed attribute's: its missing
        slot, above every key)."""
        if self.kind == CATEGORICAL:
            return len(self.categories)
        if self.keys is not None:
            return KEY_MISSING
        return len(self.cuts) if self.exact else len(self.cuts) + 1

    def threshold(self, left_slot: int, right_slot: int) -> float:
        """The numeric threshold between the last slot going left and the first going right."""
        if self.keys is not None:
            return float(midpoint(value_of_key(left_slot), value_of_key(right_slot)))
        if self.exact:
            return float(midpoint(float(self.cuts[left_slot]), float(self.cuts[right_slot])))
        return float(self.cuts[left_slot])

    def _category_index(self, arr) -> tuple[pa.Array, pa.Array]:
        """The column as a plain array, and each value's index in categories (null if unknown or missing)."""
        arr = category_values(arr)
        value_set = pa.array(self.categories, type=arr.type) if self.categories else pa.array([], arr.type)
        return arr, pc.index_in(arr, value_set=value_set)

    def category_codes(self, arr) -> np.ndarray:
        """float64 codes of a categorical column: index in categories, V if unknown, NaN if missing."""
        arr, idx = self._category_index(arr)
        codes = idx.to_numpy(zero_copy_only=False).astype(np.float64)  # nulls -> NaN
        if arr.null_count or np.isnan(codes).any():
            known_missing = arr.is_null().to_numpy(zero_copy_only=False)
            codes[np.isnan(codes) & ~known_missing] = len(self.categories)
        return codes

    def category_slots(self, arr) -> np.ndarray:
        """int32 slots of a categorical column: the category's index; unknown and missing values
        share the last slot ``V``, as in :func:`rainforest.row_encoding.to_slots`."""
        _, idx = self._category_index(arr)
        return idx.fill_null(len(self.categories)).to_numpy(zero_copy_only=False)


#: a floating-point target with more distinct values than this, not all whole numbers, is refused
#: as a quantity to regress, not a class label (:func:`check_classes`)
MAX_FLOAT_CLASSES = 32


def check_classes(classes, target: str, where: str) -> None:
    """Refuse a target that looks continuous: floating point, more than :data:`MAX_FLOAT_CLASSES`
    distinct values, one of them not a whole number.  A user whose float column is a class label
    says so by casting it to string or integer."""
    floats = [v for v in classes if isinstance(v, (float, np.floating))]
    if len(floats) > MAX_FLOAT_CLASSES and any(not float(v).is_integer() for v in floats):
        raise DataError(f"the target column {target!r} of {where} holds {len(floats)} distinct floating-point "
                        f"values, not all whole numbers: it looks like a quantity to predict by regression "
                        f"(a DecisionTreeRegressor), not a class label; if it is a class label, cast the "
                        f"column to string or integer")


def present_rows(w: np.ndarray) -> np.ndarray | None:
    """Which rows count, by their weights ``w``: rows of weight 0 count as absent (scikit-learn's
    sample-weight equivalence), in the classes, the categories, the values and the row counts;
    None when every row counts.  The one statement of the rule; every pass that profiles or
    counts rows applies it (the SQL queries as ``w <> 0``: :mod:`rainforest.pushdown`)."""
    zero = w == 0
    return ~zero if zero.any() else None


def check_numeric_target(typ: pa.DataType, target: str, where: str) -> None:
    """Refuse a regressor's target column of Arrow type ``typ`` unless it holds numbers (integer,
    floating point or decimal: read as float64), naming the column and ``where``."""
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)):
        raise DataError(f"the target column {target!r} of {where} holds {typ} values; a regressor needs numbers "
                        f"(for class labels use a classifier, e.g. DecisionTreeClassifier)")


def checked_weights(table, weight: str | None, where: str, first_row: int) -> np.ndarray:
    """The weights of a batch (``table``) from its column ``weight`` (all 1 without one), refusing a
    value that is not finite or is negative, naming the column, ``where`` and the row."""
    if weight is None:
        return np.ones(table.num_rows)
    w = numeric_values(table.column(weight))
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        raise DataError(f"the weight column {weight!r} of {where} has a bad value {w[bad][0]!r} "
                        f"at row {first_row + int(np.argmax(bad))} (weights must be finite and >= 0)")
    return w


def check_weight_total(total: float, weight: str | None, where: str) -> None:
    """Refuse weights that are all zero (every row would count as absent)."""
    if weight is not None and not total > 0:
        raise DataError(f"the weight column {weight!r} of {where} is zero on every row; "
                        f"rows of weight 0 count as absent, so nothing is left to learn from")


@dataclass
class Label:
    """The target column and its classes (sorted; the class of code ``k`` is ``classes[k]``), or, for a
    regressor (``shift`` not None), no classes: rows hold the target less ``shift``.  ``grid``: a
    regressor's grids for exact sums of that target (:func:`rainforest.target_parts.target_grid`),
    where the tree's cells may add it in parts (unit weights, binned); None: plain float sums."""

    name: str
    classes: list
    shift: float | None = None
    grid: tuple | None = None

    @property
    def regression(self) -> bool:
        """Whether the target is a number to predict (a regressor's), not a class."""
        return self.shift is not None

    @property
    def n_channels(self) -> int:
        """Channels of an AVC cell before the row count: one per class, or a regressor's
        ``(sum w, sum w y, sum w y**2)``."""
        return REGRESSION_CHANNELS if self.regression else len(self.classes)

    def _class_set(self, typ: pa.DataType) -> pa.Array:
        """The classes as an Arrow array of type ``typ`` (integer classes without ``pa.array``: see
        :mod:`rainforest.storage.arrow_numpy`)."""
        if pa.types.is_integer(typ):
            return numpy_column(np.asarray(self.classes)).cast(typ)
        return pa.array(self.classes, type=typ)

    def codes(self, arr, absent: np.ndarray | None = None) -> np.ndarray:
        """The class code of every row (a regressor's: the target less ``shift``, as float64).  ``absent``
        flags rows of weight 0: they count as absent (:func:`present_rows`), so their labels need not be
        classes, and they get code 0."""
        if self.regression:
            y = numeric_values(arr)
            if absent is not None and absent.any():
                y = np.where(absent, self.shift, y)
            if not np.isfinite(y).all():
                raise DataError(f"the target column {self.name!r} has null, NaN or infinite values")
            return y - self.shift
        arr = category_values(arr)
        if pa.types.is_integer(arr.type) and not pa.types.is_uint64(arr.type) and not arr.null_count and self.classes \
                and all(type(c) is int and -(1 << 63) <= c < 1 << 63 for c in self.classes):
            return self._integer_codes(arrow_values(arr), absent)
        if absent is not None and absent.any():
            arr = pc.if_else(pa.array(absent), pa.scalar(self.classes[0], arr.type), arr)
        if arr.null_count:
            raise DataError(f"the target column {self.name!r} has {arr.null_count} null values")
        idx = pc.index_in(arr, value_set=self._class_set(arr.type))
        if idx.null_count:
            bad = arr.filter(idx.is_null())[0].as_py()
            raise DataError(f"the target column {self.name!r} has a value {bad!r} not seen when profiling")
        return arrow_values(idx).astype(np.int32)

    def _integer_codes(self, values: np.ndarray, absent: np.ndarray | None) -> np.ndarray:
        """:meth:`codes` of integer labels, what ``index_in`` finds, without importing ``pyarrow.compute``
        (40 ms of a fresh process's first fit): a table over the classes' range where it is at most
        65,536 wide (one look-up a row: 2 ms a million rows, ``index_in`` 5-9 ms), else a search of the
        sorted classes.  Not for uint64 labels, which numpy would compare with int64 classes as float64."""
        classes = np.asarray(self.classes, np.int64)
        if absent is not None and absent.any():
            values = np.where(absent, classes[0], values)
        lo, hi = int(classes[0]), int(classes[-1])
        if hi - lo < 1 << 16 and (not len(values) or (values.min() >= lo and values.max() <= hi)):
            table = np.full(hi - lo + 1, -1, np.int32)
            table[classes - lo] = np.arange(len(classes), dtype=np.int32)
            codes = table[np.subtract(values, lo, dtype=np.int64) if lo else values]
            if not len(codes) or codes.min() >= 0:
                return codes
        idx = np.searchsorted(classes, values)  # sparse classes, or a value never profiled (named below)
        unseen = classes[np.minimum(idx, len(classes) - 1)] != values
        if unseen.any():
            raise DataError(f"the target column {self.name!r} has a value {values[unseen][0].item()!r} not seen "
                            f"when profiling")
        return idx.astype(np.int32)


NO_DENSE_SLOTS = 1 << 40  # a keyed attribute's slots, as dense AVC-group offsets count them


@dataclass
class Schema:
    """Attributes in model order, the label, and an optional weight column."""

    attributes: list[Attribute]
    label: Label | None = None
    weight: str | None = None
    # whether some weight is not a whole number (the profile's finding; None: not known): sums of such
    # weights depend on the order they are added in, which exact mode's bins change (grow._counted_slots)
    fractional_weights: bool | None = field(default=None, repr=False, compare=False)
    _tables: tuple | None = field(default=None, repr=False, compare=False)
    _integer_tables: list | None = field(default=None, repr=False, compare=False)

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.attributes]

    @property
    def kinds(self) -> np.ndarray:
        return np.array([a.kind for a in self.attributes], dtype=np.int8)

    def slot_offsets(self) -> np.ndarray:
        """Offset of each attribute's slots (its missing slot included) in an AVC-group.  (A keyed
        attribute has no slot per value: it counts as :data:`NO_DENSE_SLOTS`, more than any AVC-group
        could hold, so the offsets still order the attributes by their slots.)"""
        sizes = np.array([min(a.n_slots + 1, NO_DENSE_SLOTS) for a in self.attributes], dtype=np.int64)
        return np.concatenate([[0], np.cumsum(sizes)])

    def slot_tables(self) -> tuple:
        """Flattened cuts and lookup grids of all attributes, for :func:`slot_of` (computed once).
        Each attribute's cuts become a view of the flat array as they are copied into it, so there
        is one copy of them, and at most one attribute's held twice on the way (exact mode: every
        distinct value, 80 MB a column at 10M rows)."""
        if self._tables is None:
            sizes = [len(a.cuts) if a.kind == NUMERIC else 0 for a in self.attributes]
            offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            flat = np.empty(int(offsets[-1]))
            for j, a in enumerate(self.attributes):
                if a.kind == NUMERIC:
                    mine = flat[offsets[j]:offsets[j + 1]]
                    mine[:] = np.asarray(a.cuts, np.float64)
                    a.cuts = mine
            self._tables = (flat, offsets) + slot_lookups(flat, offsets)
        return self._tables

    def integer_tables(self) -> list:
        """Per attribute, :func:`integer_lookup`'s table of its cuts, or None (computed once)."""
        if self._integer_tables is None:
            self._integer_tables = [integer_lookup(np.asarray(a.cuts, np.float64)) if a.kind == NUMERIC else None
                                    for a in self.attributes]
        return self._integer_tables

    def encode(self, batch: pa.RecordBatch | pa.Table) -> np.ndarray:
        """The raw ``(n_rows, n_attributes)`` float64 matrix of a batch (see module doc)."""
        n = batch.num_rows
        out = np.empty((n, len(self.attributes)), dtype=np.float64, order="F")  # kernels walk columns
        for j, a in enumerate(self.attributes):
            col = batch.column(a.name)
            if pa.types.is_null(col.type):  # no value at all (an all-None column): every row missing
                out[:, j] = np.nan
                continue
            kind = arrow_kind(a.name, col.type, "the data")
            try:
                if a.kind == CATEGORICAL:
                    out[:, j] = a.category_codes(col)
                elif kind == NUMERIC:
                    out[:, j] = plain_numbers(col)
                else:
                    raise TypeError
            except (TypeError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                raise DataError(f"column {a.name!r} has type {col.type}, but the model takes it as "
                                f"{'categorical' if a.kind == CATEGORICAL else 'numeric'}") from None
        return out


LUT_CELLS = 4096  # the grid's cells for up to 64k cuts
CUTS_PER_CELL = 16  # beyond: a cell per 16 cuts (two cache lines to search; the grid is 1/16 of the cuts' memory)


@numba.njit(cache=True, nogil=True)
def slot_lookups(flat, offsets):
    """Per attribute (its cuts ``flat[offsets[j]:offsets[j + 1]]``), a uniform grid over ``[cuts[0],
    cuts[-1]]`` whose cell ``g`` holds the slot of the cell's left edge, ``searchsorted(cuts, lo + g /
    scale, 'left')``: ``(lo, scale, tables, table_offsets)``.  A value's slot is then found among the
    few cuts of its cell (:func:`slot_of`).  The grid grows with the cuts (exact mode: one per
    distinct value), so a search stays within a cell's few cache lines instead of a binary search
    over millions (10M distinct values: 2.5x faster encoding).  Fewer than two distinct cuts: no grid
    (scale 0, one cell of slot 0).  The edges rise, so one merge walk fills a grid, all attributes in
    one call (numpy's search of the edges, a call per attribute, cost a small fit 0.19 ms)."""
    n = len(offsets) - 1
    lo, scale = np.zeros(n), np.zeros(n)
    cells = np.zeros(n, np.int64)
    for j in range(n):
        a, b = offsets[j], offsets[j + 1]
        m = b - a
        if m >= 2 and flat[b - 1] > flat[a]:
            cells[j] = min(max(LUT_CELLS, m // CUTS_PER_CELL), 4 * m)
            lo[j] = flat[a]
            scale[j] = cells[j] / (flat[b - 1] - lo[j])
    table_offsets = np.zeros(n + 1, np.int64)
    for j in range(n):
        table_offsets[j + 1] = table_offsets[j] + cells[j] + 1
    tables = np.zeros(table_offsets[n], np.int64)
    for j in range(n):
        if cells[j] == 0:
            continue
        cuts = flat[offsets[j]:offsets[j + 1]]
        k, m = 0, len(cuts)
        for g in range(cells[j] + 1):
            edge = lo[j] + g / scale[j]
            while k < m and cuts[k] < edge:
                k += 1
            tables[table_offsets[j] + g] = k
    return lo, scale, tables, table_offsets


INTEGER_SPAN = 1 << 16  # integers between the first and last cut for which a table of slots is made


def integer_lookup(cuts: np.ndarray) -> tuple[np.ndarray, int] | None:
    """``(table, base)``: ``table[v - base]`` is the slot of each integer ``v`` from ``floor(cuts[0])``
    to ``ceil(cuts[-1])``; None when those are more than :data:`INTEGER_SPAN` or too large to be exact
    in float64.  Integer columns (ages, counts, codes) then find a slot with one load, no search."""
    if len(cuts) == 0 or not (abs(cuts[0]) < 2.0 ** 52 and abs(cuts[-1]) < 2.0 ** 52) \
            or cuts[-1] - cuts[0] >= INTEGER_SPAN:
        return None
    base, top = int(np.floor(cuts[0])), int(np.ceil(cuts[-1]))
    return np.searchsorted(cuts, np.arange(base, top + 1, dtype=np.float64), side="left").astype(np.int64), base


@numba.njit(cache=True, inline="always")
def lower_bound(c, lo, hi, x):
    """The first index in ``[lo, hi)`` of sorted ``c`` whose value is >= ``x`` (``hi`` if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if c[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, inline="always")
def slot_of(x, c, table, lo, scale):
    """``searchsorted(c, x, 'left')`` for a non-missing ``x``, narrowed by the lookup grid ``table``."""
    m = len(c)
    if m == 0 or x <= c[0]:
        return 0
    if x > c[m - 1]:
        return m
    cells = len(table) - 1
    if cells > 0:
        g = min(max(int((x - lo) * scale), 0), cells - 1)
        base, top = table[g], table[g + 1]
    else:
        base, top = 0, m
    base = lower_bound(c, base, top, x)
    # exact whatever the rounding of the grid cell
    while base > 0 and c[base - 1] >= x:
        base -= 1
    while base < m and c[base] < x:
        base += 1
    return base
