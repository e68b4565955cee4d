"""Exact numeric values as slots without a table of distinct values: order-preserving integer keys.

Exact mode's slots were each value's rank among the column's distinct values, which the profile
had to hold, sort and search: at 100M Agrawal rows 97.5M values a column, 780 MB each (issue 13).
A *value key* is the value itself, read as an integer that sorts as the value does (the float's
bits, negatives' magnitude bits flipped; ``-0.0`` is ``0.0``), so a row is encoded without any
search, a split between two keys is the split between their values, and the threshold is the
midpoint of the two values, as scikit-learn takes it.  NaN (missing) has no key: the missing slot is
:data:`KEY_MISSING`, above every key.

Keys are counted in bins (:class:`KeyBins`): the keys between the sample's first and last quantile
edge are cut into at most :data:`KEY_CELLS` equal ranges of keys (``(key - base) >> shift``), and a
table gives each range's bin, cut where the edges fall; keys beyond them fall in the end bins.
A bin is so a range of values, as :mod:`rainforest.exact_bins` requires; where the bins fall only
decides how many rows the exact search gathers, never the tree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .profile_data import quantile_edges

#: the missing slot of a keyed attribute: int64's largest, the key of no finite value
KEY_MISSING = np.iinfo(np.int64).max
#: equal ranges of keys a bin table has at most (uint16 bins: 128 KB a column, in a core's cache)
KEY_CELLS = 1 << 16
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)
_SIGN = np.uint64(1 << 63)


@numba.njit(cache=True, nogil=True, inline="always")
def value_key(v):
    """The key of a finite float64 ``v`` (int64, ordered as the values; ``-0.0`` as ``0.0``)."""
    if v == 0.0:
        v = 0.0
    bits = np.float64(v).view(np.int64)
    return bits if bits >= 0 else bits ^ _FLIP


@numba.njit(cache=True, parallel=True, nogil=True)
def key_slots(x, out):
    """``out[i]``: the key of ``x[i]`` (read in its own type), :data:`KEY_MISSING` for NaN."""
    for i in numba.prange(x.shape[0]):
        v = np.float64(x[i])
        out[i] = KEY_MISSING if v != v else value_key(v)


def keys_of(values: np.ndarray) -> np.ndarray:
    """The keys of float values (numpy; NaN must not occur)."""
    v = np.asarray(values, np.float64) + 0.0  # -0.0 + 0.0 is 0.0
    bits = v.view(np.int64)
    return np.where(bits >= 0, bits, bits ^ _FLIP)


def values_of(keys: np.ndarray) -> np.ndarray:
    """The float values of keys (the inverse of :func:`keys_of`)."""
    k = np.asarray(keys, np.int64)
    return np.where(k >= 0, k, k ^ _FLIP).view(np.float64)


def value_of_key(key: int) -> float:
    """The float value of one key."""
    return float(values_of(np.array([key], np.int64))[0])


@numba.njit(cache=True, nogil=True, inline="always")
def key_bin(s, base, shift, table):
    """The bin of key ``s`` (its int64 bits as ``uint64``; ``shift``: ``uint64``; ``base``: the
    :class:`KeyBins` ``uint64`` triple of :meth:`KeyBins.kernel_base`) in a :class:`KeyBins` table:
    its range of keys, clamped to the table (the counting kernels' form of :meth:`KeyBins.bins_of`)."""
    u = s ^ _SIGN
    gap_at, gap_width = base[1], base[2]
    if u > gap_at + gap_width:  # past the gap: closed up
        u -= gap_width
    elif u > gap_at:  # inside it: with its first key
        u = gap_at
    b = base[0]
    c = (u - b) >> shift if u > b else np.uint64(0)
    last = np.uint64(table.shape[0] - 1)
    return np.uint64(table[c if c < last else last])


@dataclass(frozen=True)
class KeyBins:
    """The bins a keyed attribute is counted in: key ``k`` (not missing) falls in range
    ``c = (u - base) >> shift`` (clamped to the table), whose bin is ``table[c]``; bins are numbered
    ``0 .. n_bins - 1`` in key order.  ``u`` is ``unsigned(k)`` (``k`` with its top bit flipped: the
    key's order as an unsigned number) with the *gap* ``(gap_at, gap_at + gap_width]`` closed up:
    keys past it less ``gap_width``, keys inside it ``gap_at``.  The gap is the widest stretch of keys
    between two of the sample's edges where it spans most keys (a column whose values cross zero:
    between -1 and 1 lie a thousand binades of floats, a thousand times the keys of the values
    either side), so the ranges fall where the values are; closing it keeps the order."""

    base: int
    shift: int
    table: np.ndarray  # uint16, a bin per range of keys, non-decreasing
    gap_at: int = 0
    gap_width: int = 0

    @property
    def n_bins(self) -> int:
        return int(self.table[-1]) + 1

    def kernel_base(self) -> np.ndarray:
        """``base``, ``gap_at`` and ``gap_width`` as :func:`key_bin` takes them (``uint64``)."""
        return np.array([self.base, self.gap_at, self.gap_width], np.uint64)

    def bins_of(self, keys: np.ndarray) -> np.ndarray:
        """The bins of keys (numpy; :func:`rainforest.count_bins.counted_slot` in kernels)."""
        u = _closed_up(np.asarray(keys, np.int64).view(np.uint64) ^ _SIGN, self.gap_at, self.gap_width)
        below = u < np.uint64(self.base)
        c = (np.where(below, np.uint64(self.base), u) - np.uint64(self.base)) >> np.uint64(self.shift)
        return self.table[np.minimum(c, len(self.table) - 1).astype(np.int64)].astype(np.int64)


def key_bins(sample: np.ndarray, max_bins: int) -> KeyBins:
    """Bins for a column from a sample of its values (no NaN): ranges of keys over the sample's edges,
    cut where the sample's quantile edges (:func:`rainforest.profile_data.quantile_edges`, at most
    ``max_bins`` bins) fall, each edge moved to the end of the range holding it (bins are whole
    ranges; edges in one range make one cut)."""
    edges = quantile_edges(np.asarray(sample, np.float64), max_bins)  # midpoints of sample values
    if len(edges) == 0:  # at most one value in the sample: one bin
        return KeyBins(0, 63, np.zeros(1, np.uint16))
    # ranges span the edges, not the sample: a value far from the rest (a spike at 0 before values in
    # the thousands) would spread the ranges over a thousand binades of float keys holding nothing
    u = keys_of(edges).view(np.uint64) ^ _SIGN
    gap_at, gap_width = widest_gap(u)
    u = _closed_up(u, gap_at, gap_width)
    low, high = int(u[0]), int(u[-1])
    shift = 0
    while ((high - low) >> shift) + 2 > KEY_CELLS:
        shift += 1
    n_cells = ((high - low) >> shift) + 2  # one range past the last edge's: the keys above it
    edge_cell = (u - np.uint64(low)) >> np.uint64(shift)
    # a bin ends with the range holding an edge: range c's bin counts the edges in ranges before it
    bin_of = np.searchsorted(edge_cell.astype(np.int64), np.arange(n_cells), side="left")
    _, dense = np.unique(bin_of, return_inverse=True)
    return KeyBins(low, shift, dense.astype(np.uint16), gap_at, gap_width)


def widest_gap(u: np.ndarray) -> tuple[int, int]:
    """The gap :class:`KeyBins` closes among sorted unsigned edge keys ``u``: ``(gap_at, gap_width)``
    from the widest step between two edges, where it spans more than half the keys from the first
    edge to the last (else ``(0, 0)``, none); the step's far edge then follows ``gap_at`` at once."""
    if len(u) < 2:
        return 0, 0
    steps = np.diff(u)
    g = int(np.argmax(steps))
    widest = int(steps[g])
    if widest <= 1 or 2 * widest <= int(u[-1]) - int(u[0]):
        return 0, 0
    return int(u[g]), widest - 1


def _closed_up(u: np.ndarray, gap_at: int, gap_width: int) -> np.ndarray:
    """Unsigned keys ``u`` with the gap ``(gap_at, gap_at + gap_width]`` closed up (:func:`key_bin`)."""
    if not gap_width:
        return u
    at, width = np.uint64(gap_at), np.uint64(gap_width)
    past = u > at + width
    return np.where(past, u - np.where(past, width, np.uint64(0)), np.where(u > at, at, u))


__all__ = ["KEY_MISSING", "KEY_CELLS", "KeyBins", "key_bin", "key_bins", "key_slots", "keys_of", "values_of", "value_of_key",
           "value_key", "widest_gap"]
