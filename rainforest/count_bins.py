"""The slots a level's AVC-groups count: exact mode's wide numeric attributes in bins of ranks.

In exact mode a numeric attribute's slot is the rank of its value among the data's distinct
values (:mod:`rainforest.profile`), and the rows keep that rank (:mod:`rainforest.rows`), so a
split between two ranks is a split between two values.  Counted one slot per rank, a node's
AVC-group would hold one slot per distinct value of the whole data (97.5M for Agrawal's
``salary`` at 100M rows: 2.34 GB a node).  Instead, an attribute with more than ``max_bins``
distinct values is counted in bins of ``2**shift`` consecutive ranks (at most ``max_bins`` of
them, its missing slot after them), and the exact split is found from the bins plus the rows of
the few bins that may hold a better one (:mod:`rainforest.exact_bins`, :mod:`rainforest.exact_gather`).

Every other attribute keeps one counted slot per slot (``shift`` 0), so :class:`CountedSlots`
leaves binned mode's and narrow attributes' AVC-groups as they were.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .schema import NUMERIC, Schema

#: exact mode counts a numeric attribute with more distinct values than this in this many bins at most
EXACT_BINS = 1024


@dataclass(frozen=True)
class CountedSlots:
    """Per attribute (``uint64`` arrays, for the counting kernels): ``shift`` (ranks ``2**shift`` to a
    counted slot; 0: one counted slot per slot), ``missing`` (the rows' missing slot, the attribute's
    ``n_slots``) and ``n_counted`` (counted slots, the missing one excluded)."""

    shift: np.ndarray
    missing: np.ndarray
    n_counted: np.ndarray

    @property
    def binned(self) -> np.ndarray:
        """Per attribute, whether it is counted in bins of ranks."""
        return self.shift > 0

    def offsets(self) -> np.ndarray:
        """Offset of each attribute's counted slots (its missing slot included) in an AVC-group."""
        return np.concatenate([[0], np.cumsum(self.n_counted.astype(np.int64) + 1)])

    def group_offsets(self, attrs: np.ndarray) -> np.ndarray:
        """Offset of each of ``attrs``' counted slots in an AVC-group over those attributes only, then its size."""
        return group_offsets(self.offsets(), attrs)

    def of(self, a: int, slots: np.ndarray) -> np.ndarray:
        """The counted slots of attribute ``a``'s ``slots`` (numpy; :func:`counted_slot` in kernels)."""
        slots = np.asarray(slots, np.int64)
        return np.where(slots == int(self.missing[a]), int(self.n_counted[a]), slots >> int(self.shift[a]))


def group_offsets(offsets: np.ndarray, attrs: np.ndarray) -> np.ndarray:
    """Offset of each of ``attrs``' slots in an AVC-group over those attributes only, then its size
    (``offsets``: every attribute's, as :meth:`CountedSlots.offsets` gives them)."""
    return np.concatenate([[0], np.cumsum(offsets[attrs + 1] - offsets[attrs])])


def counted_slots(schema: Schema, max_bins: int | None = EXACT_BINS) -> CountedSlots:
    """The counted slots of ``schema``'s attributes: exact numeric attributes with more than ``max_bins``
    slots in bins of ranks (``max_bins`` None or 0: none), every other one slot for slot."""
    n = np.array([a.n_slots for a in schema.attributes], np.int64)
    exact = np.array([a.kind == NUMERIC and a.exact for a in schema.attributes], np.bool_)
    wide = exact & (n > max_bins) if max_bins else np.zeros(len(n), np.bool_)
    shift = np.zeros(len(n), np.int64)
    for a in np.flatnonzero(wide):
        while ((n[a] - 1) >> shift[a]) + 1 > max_bins:
            shift[a] += 1
    n_counted = np.where(shift > 0, ((n - 1) >> shift) + 1, n)
    return CountedSlots(shift.astype(np.uint64), n.astype(np.uint64), n_counted.astype(np.uint64))


@numba.njit(cache=True, nogil=True, inline="always")
def counted_slot(s, shift, missing, n_counted):
    """The counted slot of slot ``s`` (all ``uint64``): its bin of ranks, the missing slot after the bins."""
    return n_counted if s == missing else s >> shift
