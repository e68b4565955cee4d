"""The slots a level's AVC-groups count: exact mode's wide numeric attributes in bins of ranks.

In exact mode a numeric attribute's slot is the rank of its value among the data's distinct
values (:mod:`rainforest.profile`), and the rows keep that rank (:mod:`rainforest.rows`), so a
split between two ranks is a split between two values.  Counted one slot per rank, a node's
AVC-group would hold one slot per distinct value of the whole data (97.5M for Agrawal's
``salary`` at 100M rows: 2.34 GB a node).  Instead, an attribute with more than ``max_bins``
distinct values is counted in bins of ``2**shift`` consecutive ranks (at most ``max_bins`` of
them, its missing slot after them), and the exact split is found from the bins plus the rows of
the few bins that may hold a better one (:mod:`rainforest.exact_bins`, :mod:`rainforest.exact_gather`).

A *keyed* attribute (:mod:`rainforest.value_keys`: slots are the values' keys, the profile did
not keep its distinct values) is always counted in the bins of its :class:`KeyBins` table.

Every other attribute keeps one counted slot per slot (``shift`` 0), so :class:`CountedSlots`
leaves binned mode's and narrow attributes' AVC-groups as they were.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from .schema import NUMERIC, Schema
from .value_keys import KeyBins, key_bin

#: exact mode counts a numeric attribute with more distinct values than this in this many bins at most
EXACT_BINS = 1024
#: a keyed attribute is counted in this many bins at most, on the largest data (:func:`key_bin_count`)
MOST_KEY_BINS = 4096
#: nodes whose AVC-groups a level's read must hold at once to grow a depth-10 tree in one read a level
LEVEL_NODES = 512


def key_bin_count(n_rows: int, budget: int | None = None, n_keyed: int = 1, other_slots: int = 0,
                  n_channels: int = 2) -> int:
    """How many bins a keyed attribute of data of ``n_rows`` rows is counted in: the power of two
    nearest ``sqrt(n_rows / 6)``, from :data:`EXACT_BINS` up to :data:`MOST_KEY_BINS`, and, with the
    memory ``budget`` (bytes), no more than lets :data:`LEVEL_NODES` AVC-groups (``n_keyed`` keyed
    attributes of that many bins, ``other_slots`` other slots, ``n_channels`` float64 a slot) fit a
    quarter of it: growth's AVC half, half of which holds the parents histogram subtraction keeps
    (:mod:`rainforest.grow`).

    Why the square root: a level's gathering reads the rows of its candidate bins, which shrink as the
    bins grow (rows / bins), while counting and searching the bins costs bins × nodes whatever the
    rows.  Measured on Agrawal F7, depth 10 (trees the same at every count): at 100M rows 1024 bins
    took 77.6 s, 2048 71.3 s, 4096 64.8 and 63.7 s, 8192 67.4 s, 16384 75.3 s; at 10M rows 1024
    and 4096 bins took the same (6.5 and 6.6 s).  Where the bins fall never changes the tree, only
    what is gathered (:mod:`rainforest.value_keys`)."""
    want = 1 << max(0, round(math.log2(math.sqrt(max(n_rows, 1) / 6.0))))
    bins = min(max(want, EXACT_BINS), MOST_KEY_BINS)
    if budget is not None:
        while bins > EXACT_BINS and \
                LEVEL_NODES * 8 * n_channels * (n_keyed * (bins + 1) + other_slots) > budget // 4:
            bins //= 2
    return bins


_NO_TABLE = np.zeros(0, np.uint16)


@dataclass(frozen=True)
class CountedSlots:
    """Per attribute (``uint64`` arrays, for the counting kernels): ``shift`` (ranks ``2**shift`` to a
    counted slot, or keys to a range of a keyed attribute's table; 0: one counted slot per slot),
    ``missing`` (the rows' missing slot, the attribute's ``n_slots``), ``n_counted`` (counted slots,
    the missing one excluded), and for keyed attributes the :class:`rainforest.value_keys.KeyBins`
    ``base`` (``base[a]``: its :meth:`rainforest.value_keys.KeyBins.kernel_base` triple, base and gap)
    and table (``table[table_start[a]:table_start[a + 1]]``, empty for the others)."""

    shift: np.ndarray
    missing: np.ndarray
    n_counted: np.ndarray
    base: np.ndarray = None
    table: np.ndarray = field(default_factory=lambda: _NO_TABLE)
    table_start: np.ndarray = None
    _offsets: np.ndarray = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.base is None:
            object.__setattr__(self, "base", np.zeros((len(self.shift), 3), np.uint64))
        if self.table_start is None:
            object.__setattr__(self, "table_start", np.zeros(len(self.shift) + 1, np.int64))

    @property
    def keyed(self) -> np.ndarray:
        """Per attribute, whether its slots are value keys counted through a table."""
        return np.diff(self.table_start) > 0

    @property
    def binned(self) -> np.ndarray:
        """Per attribute, whether it is counted in bins (of ranks, or of keys)."""
        return (self.shift > 0) | self.keyed

    def kernel_args(self) -> tuple:
        """What the counting kernels take: ``shift, missing, n_counted, base, table, table_start``."""
        return self.shift, self.missing, self.n_counted, self.base, self.table, self.table_start

    def kernel_args_or_none(self) -> tuple:
        """:meth:`kernel_args`, or six None where no attribute is counted in bins (:func:`counted_at`
        then compiles to the slot itself)."""
        return self.kernel_args() if self.binned.any() else (None,) * 6

    def offsets(self) -> np.ndarray:
        """Offset of each attribute's counted slots (its missing slot included) in an AVC-group
        (computed once: every pass and search of a level asks)."""
        if self._offsets is None:
            object.__setattr__(self, "_offsets", np.concatenate([[0], np.cumsum(self.n_counted.astype(np.int64) + 1)]))
        return self._offsets

    def group_offsets(self, attrs: np.ndarray) -> np.ndarray:
        """Offset of each of ``attrs``' counted slots in an AVC-group over those attributes only, then its size."""
        return group_offsets(self.offsets(), attrs)

    def of(self, a: int, slots: np.ndarray) -> np.ndarray:
        """The counted slots of attribute ``a``'s ``slots`` (numpy; :func:`counted_slot` in kernels)."""
        slots = np.asarray(slots, np.int64)
        missing = slots == int(self.missing[a])
        if self.keyed[a]:
            t = self.table[self.table_start[a]:self.table_start[a + 1]]
            base, gap_at, gap_width = (int(v) for v in self.base[a])
            bins = KeyBins(base, int(self.shift[a]), t, gap_at, gap_width).bins_of(np.where(missing, 0, slots))
        else:
            bins = slots >> int(self.shift[a])
        return np.where(missing, int(self.n_counted[a]), bins)


def group_offsets(offsets: np.ndarray, attrs: np.ndarray) -> np.ndarray:
    """Offset of each of ``attrs``' slots in an AVC-group over those attributes only, then its size
    (``offsets``: every attribute's, as :meth:`CountedSlots.offsets` gives them)."""
    return np.concatenate([[0], np.cumsum(offsets[attrs + 1] - offsets[attrs])])


def counted_slots(schema: Schema, max_bins: int | None = EXACT_BINS) -> CountedSlots:
    """The counted slots of ``schema``'s attributes: exact numeric attributes with more than ``max_bins``
    slots in bins of ranks (``max_bins`` None or 0: none), keyed attributes in their tables' bins
    (always: they have no slot per value to count), every other one slot for slot."""
    n = np.array([a.n_slots for a in schema.attributes], np.int64)
    keys = [a.keys if a.kind == NUMERIC else None for a in schema.attributes]
    keyed = np.array([k is not None for k in keys], np.bool_)
    exact = np.array([a.kind == NUMERIC and a.exact for a in schema.attributes], np.bool_) & ~keyed
    wide = exact & (n > max_bins) if max_bins else np.zeros(len(n), np.bool_)
    shift = np.zeros(len(n), np.int64)
    for a in np.flatnonzero(wide):
        while ((n[a] - 1) >> shift[a]) + 1 > max_bins:
            shift[a] += 1
    n_counted = np.where(shift > 0, ((n - 1) >> shift) + 1, n)
    if not keyed.any():
        return CountedSlots(shift.astype(np.uint64), n.astype(np.uint64), n_counted.astype(np.uint64))
    base = np.zeros((len(n), 3), np.uint64)
    sizes = np.zeros(len(n), np.int64)
    for a in np.flatnonzero(keyed):
        shift[a], sizes[a], n_counted[a] = keys[a].shift, len(keys[a].table), keys[a].n_bins
        base[a] = keys[a].kernel_base()
    table = np.concatenate([_NO_TABLE] + [k.table for k in keys if k is not None]).astype(np.uint16)
    return CountedSlots(shift.astype(np.uint64), n.astype(np.uint64), n_counted.astype(np.uint64), base, table,
                        np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))


@numba.njit(cache=True, nogil=True, inline="always")
def counted_slot(s, shift, missing, n_counted, base, table):
    """The counted slot of slot ``s`` (``s``, ``shift``, ``missing``, ``n_counted``: ``uint64``; ``base``:
    the attribute's ``uint64`` triple, :attr:`CountedSlots.base`):
    the missing slot after the bins; else, with an empty ``table``, its bin of ranks ``s >> shift``,
    and for a keyed attribute the bin ``table`` gives its range of keys (clamped to the table)."""
    if s == missing:
        return n_counted
    return s >> shift if table.shape[0] == 0 else key_bin(s, base, shift, table)


def counted_at(s, a, shift, missing, n_counted, base, table, table_start):
    """The counted slot of attribute ``a``'s slot ``s`` (:func:`counted_slot`, the arrays of
    :meth:`CountedSlots.kernel_args`; in kernels only).  With ``shift`` None (no attribute counted in
    bins: :meth:`CountedSlots.kernel_args_or_none`) it is ``s``, compiled without a test: the
    forest's counting kernels are its hottest loops."""
    raise NotImplementedError("counted_at is compiled into kernels only")


@overload(counted_at, inline="always", jit_options={"cache": True, "nogil": True})
def _counted_at(s, a, shift, missing, n_counted, base, table, table_start):
    if isinstance(shift, types.NoneType):
        return lambda s, a, shift, missing, n_counted, base, table, table_start: np.uint64(s)

    def counted(s, a, shift, missing, n_counted, base, table, table_start):
        lo, hi = table_start[a], table_start[a + 1]
        if shift[a] == 0 and lo == hi:
            return np.uint64(s)
        return counted_slot(np.uint64(s), shift[a], missing[a], n_counted[a], base[a], table[lo:hi])
    return counted


def counted_view(counted: CountedSlots) -> CountedSlots:
    """``counted`` for rows whose keyed columns already hold their counted slots (a spill read of key
    bins, :class:`rainforest.spill.Spill`): keyed attributes count slot for slot, their missing slot the
    one after their bins; the others as in ``counted``."""
    keyed = counted.keyed
    missing = np.where(keyed, counted.n_counted, counted.missing).astype(np.uint64)
    shift = np.where(keyed, 0, counted.shift).astype(np.uint64)
    return CountedSlots(shift, missing, counted.n_counted.copy())


@numba.njit(cache=True, parallel=True, nogil=True)
def counted_column(S, a, shift, missing, n_counted, base, table, table_start):
    """The counted slot of every row's slot of attribute ``a`` (column ``a`` of ``S``), as ``uint16``:
    what the spill stores beside a keyed column (:class:`rainforest.spill.Spill`), so that a read
    counting the rows reads two bytes a row for it, not eight."""
    out = np.empty(S.shape[0], np.uint16)
    tab = table[table_start[a]:table_start[a + 1]]
    sh, miss, nc, kb = shift[a], missing[a], n_counted[a], base[a]
    for i in numba.prange(S.shape[0]):
        out[i] = counted_slot(np.uint64(S[i, a]), sh, miss, nc, kb, tab)
    return out
