"""Exact splits from binned counts plus the rows of a few candidate bins (CLOUDS's idea).

Exact mode must find, node for node, the threshold scikit-learn finds between two adjacent
values present at the node.  Counting one slot per distinct value makes its AVC-groups and its
profile follow the data's distinct values; here a numeric attribute is counted in bins instead,
with each bin's smallest and largest value at the node (``vmin``, ``vmax``), and the exact search
runs in three steps:

1. the search over the bins (:func:`rainforest.criteria.best_splits`) scores every split at a
   bin boundary exactly (its threshold is the midpoint of the values either side: the largest
   of the last bin left, the smallest of the first bin right) and gives each node its *target*,
   the best of them;
2. a split inside a bin can only beat the target if the bin's corner bound
   (:func:`rainforest.split_bounds.box_bound`) reaches it: those bins, and only those, are
   *candidates* (:func:`candidate_mask`), whose rows the caller gathers (value, class, weight);
3. each node's AVC-group is *refined*: a candidate bin becomes one slot per distinct value its
   gathered rows hold, in value order, the other bins stay one slot (:func:`refine`); the same
   search over the refined groups (:func:`refined_splits`) then sees every split that can win,
   in the same order and with the same counts as the search over one slot per distinct value
   (a bin left whole only hides splits that score below the winner), so it chooses the same
   split.  With unit weights the counts are integers and the scores the same floats.

Categorical attributes are counted per category as before and pass through unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .criteria import best_splits, node_totals
from .plan import pack_jobs
from .profile_data import midpoint
from .schema import NUMERIC
from .split_bounds import candidate_bins, tolerance


@numba.njit(cache=True, nogil=True, parallel=True)
def _mark(block, node_start, offsets, kinds, vmin, vmax, n_classes, has_count, criterion, lead, targets, adjacent,
          out):
    """:func:`rainforest.split_bounds.candidate_bins` of every (node, numeric attribute) pair: ``out``
    (a flag per node and slot) marks the candidate bins; returns how many there are.  Nodes on threads:
    each writes only its own row of ``out``, so the flags are a serial run's."""
    marked = 0
    for k in numba.prange(node_start.shape[0] - 1):
        block_k = block[node_start[k]:node_start[k + 1]]
        total, n_total, wn, parent_imp = node_totals(block_k, offsets, lead, n_classes, has_count, criterion)
        target = targets[k]
        tol = tolerance(target) if target != -np.inf else 0.0
        for a in range(kinds.shape[0]):
            if kinds[a] != 0:
                continue
            lo = offsets[a]
            m = offsets[a + 1] - lo - 1
            marked += candidate_bins(block_k, vmin[k, lo:lo + m], vmax[k, lo:lo + m], lo, m, n_classes, has_count,
                                     total, wn, parent_imp, criterion, target, tol, adjacent, out[k, lo:lo + m])
    return marked


def candidate_mask(avc: np.ndarray, vmin: np.ndarray | None, vmax: np.ndarray | None, offsets: np.ndarray,
                   kinds: np.ndarray, n_classes: int, weighted: bool, criterion: int, targets: np.ndarray,
                   lead: int = 0) -> np.ndarray:
    """The candidate bins of ``k`` nodes: a ``(k, n_slots)`` flag per node and slot of their binned
    AVC-groups ``avc`` (``(k, n_slots, n_channels)``, attributes at ``offsets``), set for the bins of
    numeric attributes that hold two or more values at the node and whose corner bound reaches the
    node's ``targets[k]`` (the best boundary split's score; ``-inf`` marks every such bin).

    ``vmin`` / ``vmax`` (``(k, n_slots)``) hold each bin's smallest and largest value at the node.
    Without them (None) every non-empty bin may hold two values, and the bins either side of each
    boundary that scores within :func:`rainforest.split_bounds.tolerance` of the target are marked too,
    so that the values of marked bins give every threshold the search may choose."""
    k, n_slots, n_channels = avc.shape
    out = np.zeros((k, n_slots), np.bool_)
    adjacent = vmin is None
    if adjacent:
        vmin, vmax = np.full((k, n_slots), -np.inf), np.full((k, n_slots), np.inf)
    if k:
        _mark(np.ascontiguousarray(avc).reshape(k * n_slots, n_channels), np.arange(k + 1, dtype=np.int64) * n_slots,
              offsets, kinds, vmin, vmax, n_classes, weighted, criterion, lead,
              np.asarray(targets, np.float64), adjacent, out)
    return out


def boundary_mask(avc: np.ndarray, offsets: np.ndarray, kinds: np.ndarray, n_classes: int, weighted: bool,
                  criterion: int, targets: np.ndarray, lead: int = 0) -> np.ndarray:
    """Only the bins either side of each bin boundary that scores within
    :func:`rainforest.split_bounds.tolerance` of the node's target (:func:`candidate_mask` with no bin's
    own bound counted): the bins whose values any search over some of the candidate bins must hold, so
    that a boundary that may win has its exact threshold wherever it is searched.  A node whose target
    is ``-inf`` has no valid boundary split, so none of its bins is marked."""
    k, n_slots, n_channels = avc.shape
    out = np.zeros((k, n_slots), np.bool_)
    if k:
        _mark(np.ascontiguousarray(avc).reshape(k * n_slots, n_channels), np.arange(k + 1, dtype=np.int64) * n_slots,
              offsets, kinds, np.full((k, n_slots), np.inf), np.full((k, n_slots), -np.inf), n_classes, weighted,
              criterion, lead, np.asarray(targets, np.float64), True, out)
        out[np.asarray(targets) == -np.inf] = False
    return out


def candidate_runs(candidates: np.ndarray, near: np.ndarray, cost: np.ndarray, room: int) -> list[np.ndarray]:
    """A node's candidate bins (flags over its slots) in *runs* whose gathering (``cost``: bytes per
    slot) fits ``room``: the ``near`` bins (:func:`boundary_mask`) in every run, the others in
    consecutive runs, each bin in one (at least one a run, where the near bins leave no room).  The
    search over each run sees every split inside its own bins and every boundary that may win; a
    bin left whole hides only splits inside it, which its own run holds.  So the best over the
    runs (:func:`rainforest.exact_gather.better_split`) is the best over all candidate bins refined at
    once, with a run's memory, not the node's."""
    near = near & candidates
    rest = np.flatnonzero(candidates & ~near)
    if not len(rest):
        return [near]
    runs = []
    for r0, r1 in pack_jobs(cost[rest], max(room - int(cost[near].sum()), 1)):
        run = near.copy()
        run[rest[r0:r1]] = True
        runs.append(run)
    return runs


@dataclass
class ValueCounts:
    """The AVC-cells of the distinct values in candidate bins: one row per (node, slot, value), sorted
    and unique, with its class counts (and row count, where weighted) in ``counts``, each cell summed
    in row order as a slot per distinct value holds it (:class:`rainforest.exact_gather.ValuePass`)."""

    node: np.ndarray
    slot: np.ndarray
    value: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.node)


NO_SLOT = np.iinfo(np.int64).min  # Refined.low/high of a slot whose values are not known, where they are slots


@dataclass
class Refined:
    """AVC-groups with their candidate bins expanded into one slot per distinct value.

    Node ``k``'s group is ``block[node_start[k]:node_start[k + 1]]``, its attributes at
    ``node_offsets[k]``; a slot's values run from ``low[i]`` to ``high[i]`` (one value for an
    expanded slot, the bin's range for a whole bin; NaN for categories and missing slots) and it
    came from the binned group's slot ``origin[i]`` (the attribute's own slot numbering).  Where the
    values are slots (ranks or value keys, integers), ``low`` and ``high`` hold slots, :data:`NO_SLOT`
    where unknown."""

    block: np.ndarray
    node_start: np.ndarray
    node_offsets: np.ndarray
    low: np.ndarray
    high: np.ndarray
    origin: np.ndarray

    def widths(self) -> np.ndarray:
        """Each node's widest attribute (slots), the room its winning attribute's branches need."""
        return np.diff(self.node_offsets, axis=1).max(axis=1) if len(self.node_offsets) else np.zeros(0, np.int64)


@numba.njit(cache=True, nogil=True)
def _values_per_slot(node, slot, k, n_slots):
    """How many value cells each (node, slot) has."""
    out = np.zeros((k, n_slots), np.int64)
    for t in range(node.shape[0]):
        out[node[t], slot[t]] += 1
    return out


@numba.njit(cache=True, nogil=True, parallel=True)
def _fill_refined(avc, candidates, value, counts, own, node_start, pos, unknown, block, low, high, origin,
                  value_start):
    """:func:`refine`'s groups in one sweep over each node's slots, nodes on threads (each writes its own
    refined slots): a whole bin copied as one slot of unknown values (``unknown``), a candidate bin's
    value cells (``value``, ``counts``: sorted by node, slot and value, node ``k``'s from
    ``value_start[k]``, as the sweep meets them) each a slot."""
    for k in numba.prange(avc.shape[0]):
        t = value_start[k]
        for s in range(avc.shape[1]):
            at = node_start[k] + pos[k, s]
            if candidates[k, s]:
                for r in range(pos[k, s + 1] - pos[k, s]):
                    block[at + r, :] = counts[t, :]
                    low[at + r] = value[t]
                    high[at + r] = value[t]
                    origin[at + r] = own[s]
                    t += 1
            else:
                block[at, :] = avc[k, s, :]
                low[at] = unknown
                high[at] = unknown
                origin[at] = own[s]


def refine(avc: np.ndarray, vmin: np.ndarray | None, vmax: np.ndarray | None, offsets: np.ndarray,
           kinds: np.ndarray, candidates: np.ndarray, values: ValueCounts, known: ValueCounts | None = None) -> Refined:
    """The refined AVC-groups of ``k`` nodes (see :class:`Refined`) from their binned groups ``avc``
    (``(k, n_slots, n_channels)``), bin ranges ``vmin`` / ``vmax`` (None: unknown, NaN in ``low`` and
    ``high``), ``candidates`` (from :func:`candidate_mask`) and the cells of the candidate bins' values.
    ``known`` (node, slot, value; its counts unused) gives the one value of bins left whole that hold
    one value (:func:`rainforest.exact_search.settled_bins`): their slot is the slot that value's cell
    would be, so a threshold beside them is known without their rows."""
    k, n_slots, n_channels = avc.shape
    n_values = _values_per_slot(values.node, values.slot, k, n_slots)
    if np.any(n_values[~candidates]) or np.any(n_values[candidates] == 0):
        raise ValueError("gathered rows do not match the candidate bins")
    size = np.where(candidates, n_values, 1)
    pos = np.zeros((k, n_slots + 1), np.int64)  # each binned slot's first refined slot, per node
    np.cumsum(size, axis=1, out=pos[:, 1:])
    node_offsets = pos[:, offsets]
    node_start = np.zeros(k + 1, np.int64)
    np.cumsum(pos[:, -1], out=node_start[1:])
    n_refined = int(node_start[-1])
    block = np.empty((n_refined, n_channels))
    # values or slots: integer slots (ranks, value keys) stay integers, NO_SLOT where unknown
    integer = np.asarray(values.value).dtype.kind in "iu"
    low = np.empty(n_refined, np.int64 if integer else np.float64)
    high, origin = np.empty_like(low), np.empty(n_refined, np.int64)
    own = np.arange(n_slots) - offsets[np.searchsorted(offsets, np.arange(n_slots), side="right") - 1]
    value_start = np.zeros(k + 1, np.int64)  # each node's first value cell (the cells are sorted by node)
    np.cumsum(n_values.sum(axis=1), out=value_start[1:])
    _fill_refined(avc, candidates, values.value.astype(low.dtype, copy=False), values.counts, own, node_start, pos,
                  low.dtype.type(NO_SLOT if integer else np.nan), block, low, high, origin, value_start)
    if (vmin is not None and not integer) or (known is not None and len(known)):
        at = node_start[:-1, None] + pos[:, :-1]  # the refined position of every binned slot
        if vmin is not None and not integer:
            numeric = np.zeros(n_slots, np.bool_)
            for a in np.flatnonzero(np.asarray(kinds) == NUMERIC):
                numeric[offsets[a]:offsets[a + 1] - 1] = True
            bins = ~candidates & numeric[None, :]
            low[at[bins]], high[at[bins]] = vmin[bins], vmax[bins]
        if known is not None and len(known):
            if candidates[known.node, known.slot].any():
                raise ValueError("a bin of known value is also a candidate")
            low[at[known.node, known.slot]] = high[at[known.node, known.slot]] = known.value
    return Refined(block, node_start, node_offsets, low, high, origin)


@dataclass
class ExactSplit:
    """A node's exact split over refined AVC-groups: the attribute (-1: none valid), its score, the
    threshold of a numeric split (NaN otherwise; ``inf``: every present value left, the missing
    ones right, ``inf_threshold``), the branches of the attribute's refined slots and their number,
    and the search's ``left`` / ``right`` slots (of the attribute's refined slots: for a threshold,
    the last going left and the first going right)."""

    attribute: int
    score: float
    threshold: float
    n_branches: int
    branches: np.ndarray
    left: int = -1
    right: int = -1
    inf_threshold: bool = False


def refined_splits(refined: Refined, kinds: np.ndarray, n_classes: int, weighted: bool, criterion: int,
                   multiway: bool, min_leaf: float, min_weight: float, max_exhaustive: int,
                   lead: int = 0) -> list[ExactSplit]:
    """Every refined node's best split (:func:`rainforest.criteria.best_splits` over :func:`refine`'s
    groups), numeric thresholds taken as scikit-learn takes them: the midpoint of the largest value
    going left and the smallest going right (the left one where the midpoint rounds to the right)."""
    attr, score, left, right, inf_thr, n_branches, branches, branch_start = best_splits(
        refined.block, refined.node_start, refined.node_offsets, kinds, n_classes, weighted, criterion, multiway,
        min_leaf, min_weight, max_exhaustive, refined.widths(), lead)
    out = []
    for k in range(len(attr)):
        a = int(attr[k])
        br = branches[branch_start[k]:branch_start[k + 1]]
        threshold = np.nan
        if a >= 0 and kinds[a] == NUMERIC:
            if inf_thr[k]:
                threshold = np.inf
            else:
                base = refined.node_start[k] + refined.node_offsets[k, a]
                if refined.low.dtype.kind == "f":  # values (slots: the caller takes the values)
                    threshold = float(midpoint(refined.high[base + left[k]], refined.low[base + right[k]]))
        out.append(ExactSplit(a, float(score[k]), threshold, int(n_branches[k]) if a >= 0 else 0, br,
                              int(left[k]), int(right[k]), bool(inf_thr[k])))
    return out


def boundary_targets(avc: np.ndarray, offsets: np.ndarray, kinds: np.ndarray, n_classes: int, weighted: bool,
                     criterion: int, multiway: bool, min_leaf: float, min_weight: float, max_exhaustive: int,
                     lead: int = 0) -> np.ndarray:
    """Each node's best score over its binned AVC-group (splits at bin boundaries, and categorical
    splits), ``-inf`` where none is valid: the target its candidate bins must reach."""
    k, n_slots, n_channels = avc.shape
    starts = np.arange(k + 1, dtype=np.int64) * n_slots
    _, score, *_ = best_splits(np.ascontiguousarray(avc).reshape(k * n_slots, n_channels), starts,
                               np.tile(offsets, (k, 1)), kinds, n_classes, weighted, criterion, multiway, min_leaf,
                               min_weight, max_exhaustive, int(np.diff(offsets).max()), lead)
    return score


__all__ = ["NO_SLOT", "ValueCounts", "Refined", "ExactSplit", "boundary_mask", "boundary_targets", "candidate_mask",
           "candidate_runs", "refine", "refined_splits"]
