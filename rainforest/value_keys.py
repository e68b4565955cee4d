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
    """The bin of key ``s`` (its int64 bits as ``uint64``; ``base``, ``shift``: ``uint64``) in a
    :class:`KeyBins` table: its range of keys, clamped to the table (the counting kernels' form of
    :meth:`KeyBins.bins_of`)."""
    u = s ^ _SIGN
    c = (u - base) >> shift if u > base else np.uint64(0)
    last = np.uint64(table.shape[0] - 1)
    return np.uint64(table[c if c < last else last])


@dataclass(frozen=True)
class KeyBins:
    """The bins a keyed attribute is counted in: key ``k`` (not missing) falls in range
    ``c = (unsigned(k) - base) >> shift`` (clamped to the table), whose bin is ``table[c]``; bins
    are numbered ``0 .. n_bins - 1`` in key order.  ``unsigned(k)`` is ``k`` with its top bit
    flipped: the key's order as an unsigned number."""

    base: int
    shift: int
    table: np.ndarray  # uint16, a bin per range of keys, non-decreasing

    @property
    def n_bins(self) -> int:
        return int(self.table[-1]) + 1

    def bins_of(self, keys: np.ndarray) -> np.ndarray:
        """The bins of keys (numpy; :func:`rainforest.count_bins.counted_slot` in kernels)."""
        u = np.asarray(keys, np.int64).view(np.uint64) ^ _SIGN
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
    low, high = int(u[0]), int(u[-1])
    shift = 0
    while ((high - low) >> shift) + 2 > KEY_CELLS:
        shift += 1
    n_cells = ((high - low) >> shift) + 2  # one range past the last edge's: the keys above it
    edge_cell = (u - np.uint64(low)) >> np.uint64(shift)
    # a bin ends with the range holding an edge: range c's bin counts the edges in ranges before it
    bin_of = np.searchsorted(edge_cell.astype(np.int64), np.arange(n_cells), side="left")
    _, dense = np.unique(bin_of, return_inverse=True)
    return KeyBins(low, shift, dense.astype(np.uint16))


__all__ = ["KEY_MISSING", "KEY_CELLS", "KeyBins", "key_bin", "key_bins", "key_slots", "keys_of", "values_of", "value_of_key",
           "value_key"]
