"""The kernels of exact mode's gathering (:mod:`rainforest.exact_gather`): picking the rows of
candidate bins from a block, counting dense cells in place, and summing picked rows into
``(cell, slot)`` cells, each cell's rows in row order."""
from __future__ import annotations

import numba
import numpy as np

from .count_bins import counted_slot
from .counting import add_row


@numba.njit(cache=True, parallel=True, nogil=True)
def pick_rows(S, y, w, order, starts, ends, attrs, offsets, shift, missing, n_counted, key_base, table, table_start,
              B, from_bins, group, pair_start, pair_cells, first, dense_at, dense, low, high, one_value, n_in,
              count_rows, seen_row, seen_cell, seen_at, seen_n, out_group, out_rank, out_y, out_w, at, fill):
    """The rows of a block whose counted slot is a candidate at their node, in two calls, per (attribute,
    node) pair ``p = j * n_nodes + k`` (node ``k``'s rows ``starts[k]:ends[k]``, through ``order``
    unless it is empty) and row in row order; an attribute with ``from_bins[a]`` takes its counted slots
    from ``B[i, a]`` (a keyed column's bins read beside its keys, :meth:`rainforest.spill.Spill.read`),
    so the scan reads a key only for rows of candidate cells.  Pair ``p``'s candidate cells are
    ``pair_cells[pair_start[p]:pair_start[p + 1]]``; a pair without one is not scanned.

    The first call (``fill`` False) adds a row of a dense cell (``dense_at[g] >= 0``) at once to its
    rank's row of ``dense`` (from ``dense_at[g]``, rank less ``first[g]``), and for the other cells
    notes the block's smallest and largest slot (``low``, ``high``), rows (``n_in``) and class counts
    (``one_value``, by :func:`rainforest.counting.add_row`); ``at[p + 1]`` becomes the rows pair
    ``p`` picks: those of its cells holding two or more slots in the block, or one row (a cell of
    several rows of one slot, such as a heavy value's own bin, is summed already).  The second
    (``fill`` True) picks them: their candidate cell's number ``group[k, c]``, slot (a rank or a
    value key), class and weight (``out_w`` empty when every weight is one), pair ``p`` writing
    from ``at[p]``, so the pairs run in parallel and the output is the serial one.  (A block may be
    a whole spill partition: outputs sized for all its rows would cost more than this scan.)  A
    pair's cells are its own, so no cell is written by two threads.

    Where ``seen_at`` is given (per pair, the first of room for as many entries as the pair's node
    has rows), the first call also notes each row of a picked-or-summed cell (``seen_row``,
    ``seen_cell``; ``seen_n[p]`` of them) and the second picks from those notes, the rows of
    candidate cells (a few in a hundred), instead of scanning every row again."""
    # unsigned indices, as in rainforest.avc.accumulate: no check for a negative index on every access
    unit = w.shape[0] == 0
    direct = order.shape[0] == 0
    noting = seen_at.shape[0] > 0
    n_nodes = starts.shape[0]
    rows_channel = one_value.shape[1] - 1
    for p in numba.prange(pair_start.shape[0] - 1):
        if pair_start[p + 1] == pair_start[p] or (fill and at[p + 1] == at[p]):
            continue  # no candidate cell, or none whose rows are picked
        j = p // n_nodes
        k = p - j * n_nodes
        a = np.uint64(attrs[j])
        if fill and noting:  # the rows the first call noted, in row order
            m = at[p]
            for t in range(seen_at[p], seen_at[p] + seen_n[p]):
                i = np.uint64(seen_row[t])
                ug = np.uint64(seen_cell[t])
                if low[ug] < high[ug] or n_in[ug] == 1:
                    out_group[m] = seen_cell[t]
                    out_rank[m] = S[i, a]
                    out_y[m] = y[i]
                    if not unit:
                        out_w[m] = w[i]
                    m += 1
            continue
        sh, miss, nc, kb = shift[a], missing[a], n_counted[a], key_base[a]
        tab = table[table_start[a]:table_start[a + 1]]
        counted_as_read = from_bins[a]
        cells = group[k, offsets[j]:offsets[j + 1]]
        lo = starts[k]
        rows = order[lo:ends[k]]
        m = at[p] if fill else 0
        noted = seen_at[p] if noting else 0
        for t in range(ends[k] - lo):
            i = np.uint64(lo + t) if direct else np.uint64(rows[t])
            if counted_as_read:
                g = cells[np.uint64(B[i, a])]
            else:
                g = cells[counted_slot(np.uint64(S[i, a]), sh, miss, nc, kb, tab)]
            if g < 0:
                continue
            v = S[i, a]
            ug = np.uint64(g)
            d = dense_at[ug]
            if fill:
                if d < 0 and (low[ug] < high[ug] or n_in[ug] == 1):
                    out_group[m] = g
                    out_rank[m] = v
                    out_y[m] = y[i]
                    if not unit:
                        out_w[m] = w[i]
                    m += 1
            elif d >= 0:  # unit weights only (gathering_plan): no row-count channel
                add_row(dense[np.uint64(d + np.int64(v) - first[ug])], 0, y[i], 1.0, False, rows_channel)
            else:
                low[ug] = min(low[ug], v)
                high[ug] = max(high[ug], v)
                n_in[ug] += 1
                add_row(one_value[ug], 0, y[i], 1.0 if unit else w[i], count_rows, rows_channel)
                if noting:
                    seen_row[noted] = np.int64(i)
                    seen_cell[noted] = g
                    noted += 1
        if not fill:
            for t in range(pair_start[p], pair_start[p + 1]):
                g = pair_cells[t]
                if low[g] < high[g] or n_in[g] == 1:
                    m += n_in[g]
            at[p + 1] = m
            if noting:
                seen_n[p] = noted - seen_at[p]


@numba.njit(cache=True, nogil=True, parallel=True)
def any_split(first_child, node) -> bool:
    """Whether a row at ``node`` stands at a split node (``first_child`` set).  Every row is looked at,
    on threads: a gathering's blocks have none (the level's count routed them), so a scan stopping at
    the first found would read them all anyway, on one thread (0.8 s of a 100M-row fit)."""
    found = 0
    for i in numba.prange(node.shape[0]):
        found += first_child[node[i]] >= 0
    return found > 0


def dense_cells(dense: np.ndarray, dense_at: np.ndarray, first: np.ndarray, span: np.ndarray) -> tuple:
    """The ``(cell, slot)`` pairs of the dense cells' ranks that rows reached (any class counted: unit
    weights), in order, and their class counts: row ``r`` of ``dense`` is rank ``r - dense_at[g]``
    of its cell ``g`` (cells' rows follow one another in cell order)."""
    on = np.flatnonzero(dense_at >= 0)
    cell = np.repeat(on, span[on])
    slot = first[cell] + np.arange(len(cell)) - dense_at[cell]
    reached = dense.sum(axis=1) > 0
    return cell[reached].astype(np.int32), slot[reached], dense[reached]


def picked_arrays(m: int, S: np.ndarray, y: np.ndarray, weighted: bool) -> tuple:
    """Arrays for ``m`` picked rows: candidate cell, slot (in the type of the slots ``S``: a rank, or a
    value key), class (in the type of the codes ``y``) and weight (none when all are one): 9 bytes a
    row unweighted with ranks of up to 32 bits, 13 with keys."""
    return np.empty(m, np.int32), np.empty(m, S.dtype), np.empty(m, y.dtype), np.empty(m if weighted else 0)


@numba.njit(cache=True, parallel=True, nogil=True)
def sum_cells(group, rank, cls, weight, first, span, n_channels, count_rows):
    """The cells of picked rows: ``(cell, slot)`` pairs in order, unique, and their class counts, each
    cell's rows added in row order (:func:`rainforest.counting.add_row`).  A stable counting sort by
    candidate cell, then per cell of a bin of ranks a scratch row per rank (``first[g]`` up to
    ``span[g]`` ranks: linear in the rows, where a sort was not), and per cell of a keyed bin
    (``span[g]`` 0: its keys could be any) its rows sorted by key, cells on threads: with unit weights
    by :func:`sort_by_key`, which leaves the rows' keys and classes in key order in ``rank`` and ``cls``
    (both overwritten: the caller's temporary arrays), else by a stable sort of ``order``."""
    n, n_groups = group.shape[0], first.shape[0]
    start = np.zeros(n_groups + 1, np.int64)
    for i in range(n):
        start[group[i] + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    at = start[:-1].copy()
    order = np.empty(n, np.int32)  # a read picks fewer than 2**31 rows (gather_groups' room)
    for i in range(n):
        order[at[group[i]]] = i
        at[group[i]] += 1
    width = max(span.max(), 1) if n_groups else 1
    mark = np.zeros(width, np.bool_)
    touched = np.empty(width, np.int64)
    n_distinct = np.zeros(n_groups + 1, np.int64)  # first each cell's distinct slots, to size the output
    for g in range(n_groups):
        if span[g] == 0:
            continue
        nt = 0
        for t in range(start[g], start[g + 1]):
            r = rank[order[t]] - first[g]
            if not mark[r]:
                mark[r] = True
                touched[nt] = r
                nt += 1
        for u in range(nt):
            mark[touched[u]] = False
        n_distinct[g + 1] = nt
    class_bits = np.uint64(0)  # bits of the largest class code, below a key in sort_by_key's words
    while (np.uint64(1) << class_bits) < np.uint64(n_channels):
        class_bits += np.uint64(1)
    for g in numba.prange(n_groups):
        if span[g] != 0 or start[g + 1] == start[g]:
            continue
        seg = order[start[g]:start[g + 1]]
        keys = rank[seg]
        if keys.min() == keys.max():  # one value (a heavy value's own bin): nothing to sort
            n_distinct[g + 1] = 1
            continue
        if not (weight.shape[0] == 0 and sort_by_key(seg, rank, cls, class_bits)):
            by_key = np.argsort(keys, kind="mergesort")  # stable: equal keys keep their row order
            order[start[g]:start[g + 1]] = seg[by_key]
        nt = 1
        for t in range(start[g] + 1, start[g + 1]):
            nt += rank[order[t]] != rank[order[t - 1]]
        n_distinct[g + 1] = nt
    for g in range(n_groups):
        n_distinct[g + 1] += n_distinct[g]
    cell = np.empty(n_distinct[-1], np.int32)
    slot = np.empty(n_distinct[-1], rank.dtype)
    counts = np.zeros((n_distinct[-1], n_channels))
    scratch = np.zeros((width, n_channels))
    unit = weight.shape[0] == 0
    rows_channel = n_channels - 1
    for g in range(n_groups):
        if span[g] == 0:
            continue
        nt = 0
        for t in range(start[g], start[g + 1]):
            i = order[t]
            r = rank[i] - first[g]
            if not mark[r]:
                mark[r] = True
                touched[nt] = r
                nt += 1
            add_row(scratch[r], 0, cls[i], 1.0 if unit else weight[i], count_rows, rows_channel)
        ranks = np.sort(touched[:nt])
        m = n_distinct[g]
        for u in range(nt):
            r = ranks[u]
            cell[m] = g
            slot[m] = first[g] + r
            counts[m] = scratch[r]
            scratch[r] = 0.0
            mark[r] = False
            m += 1
    for g in numba.prange(n_groups):
        if span[g] != 0:
            continue
        m = n_distinct[g] - 1
        for t in range(start[g], start[g + 1]):
            i = order[t]
            if t == start[g] or rank[i] != rank[order[t - 1]]:
                m += 1
                cell[m] = g
                slot[m] = rank[i]
            add_row(counts[m], 0, cls[i], 1.0 if unit else weight[i], count_rows, rows_channel)
    return cell, slot, counts


@numba.njit(cache=True, nogil=True)
def sort_by_key(rows, key, cls, class_bits) -> bool:
    """Put the ``(key, class)`` pairs of ``rows`` (indices into ``key`` and ``cls``) in key order along
    ``rows``, by a radix sort of one word per row, ``(key - smallest) << class_bits | class``: where
    every word fits 64 bits (else False, nothing moved).  Only for unit weights: the rows' pairs move
    among the rows, so a cell's counts (whole numbers, exact in any order) are those of a stable sort of
    the rows; it sorts picked keys at about 10 ns a row, where numba's ``argsort`` took 30 to 90
    (a cell holds thousands of a bin's rows)."""
    n = rows.shape[0]
    low, high = key[rows[0]], key[rows[0]]
    for t in range(n):
        low = min(low, key[rows[t]])
        high = max(high, key[rows[t]])
    spread = np.uint64(high) - np.uint64(low)  # as unsigned: no overflow however far apart
    bits = np.uint64(0)
    while bits < np.uint64(64) and (spread >> bits) != np.uint64(0):
        bits += np.uint64(1)
    if bits + class_bits > np.uint64(64):
        return False
    words = np.empty(n, np.uint64)
    for t in range(n):
        words[t] = ((np.uint64(key[rows[t]]) - np.uint64(low)) << class_bits) | np.uint64(cls[rows[t]])
    radix_sort(words, bits + class_bits)
    mask = (np.uint64(1) << class_bits) - np.uint64(1)
    for t in range(n):
        i = rows[t]
        key[i] = np.int64(np.uint64(low) + (words[t] >> class_bits))
        cls[i] = words[t] & mask
    return True


@numba.njit(cache=True, nogil=True)
def radix_sort(words, bits) -> None:
    """Sort ``words`` (uint64, each below ``2**bits``) in place: a least-significant-digit radix sort,
    a byte at a time, skipping the bytes all words share."""
    n = words.shape[0]
    if n < 32:  # insertion: the counting passes cost more than the rows
        for t in range(1, n):
            v = words[t]
            u = t - 1
            while u >= 0 and words[u] > v:
                words[u + 1] = words[u]
                u -= 1
            words[u + 1] = v
        return
    count = np.empty(257, np.int64)
    src, dst = words, np.empty(n, np.uint64)
    moved = 0
    shift = np.uint64(0)
    while shift < bits:
        count[:] = 0
        for t in range(n):
            count[((src[t] >> shift) & np.uint64(255)) + np.uint64(1)] += 1
        if count[1:].max() < n:  # some words differ in this byte
            for d in range(256):
                count[d + 1] += count[d]
            for t in range(n):
                d = (src[t] >> shift) & np.uint64(255)
                dst[count[d]] = src[t]
                count[d] += 1
            src, dst = dst, src
            moved += 1
        shift += np.uint64(8)
    if moved % 2:
        words[:] = src


def union_cells(*states) -> tuple:
    """Cells of several states, ``(cell, slot, counts)`` each, added cell by cell (every sum here is
    of whole numbers, exact in any order); each state's ``(cell, slot)`` pairs are unique and in
    order.  The largest state (a read's summed picks: millions of cells) is merged in one linear
    pass (:func:`merge_cells`) with the others, which are few (the blocks' cells of one slot, the
    dense cells) and are sorted together first: a sort of them all took 9 s of a 100M fit."""
    held = [s for s in states if len(s[0])]
    if len(held) <= 1:
        return held[0] if held else states[0]
    largest = max(range(len(held)), key=lambda i: len(held[i][0]))
    rest = held[:largest] + held[largest + 1:]
    small = rest[0] if len(rest) == 1 else _sorted_union(rest)
    big = held[largest]
    n = len(big[0]) + len(small[0])
    cell, slot, counts = np.empty(n, np.int32), np.empty(n, np.int64), np.empty((n, big[2].shape[1]))
    m = merge_cells(np.asarray(big[0], np.int32), np.asarray(big[1], np.int64), big[2],
                    np.asarray(small[0], np.int32), np.asarray(small[1], np.int64), small[2], cell, slot, counts)
    return cell[:m], slot[:m], counts[:m]


def _sorted_union(states: list) -> tuple:
    """:func:`union_cells` of states by one sort of them all."""
    cell = np.concatenate([np.asarray(s[0], np.int32) for s in states])
    slot = np.concatenate([np.asarray(s[1], np.int64) for s in states])
    by = np.lexsort((slot, cell))  # stable: of equal pairs, the earlier state's first
    cell, slot, counts = cell[by], slot[by], np.concatenate([s[2] for s in states])[by]
    new = np.ones(len(cell), np.bool_)
    new[1:] = (cell[1:] != cell[:-1]) | (slot[1:] != slot[:-1])
    if new.all():
        return cell, slot, counts
    return cell[new], slot[new], np.add.reduceat(counts, np.flatnonzero(new), axis=0)


@numba.njit(cache=True, nogil=True)
def merge_cells(a_cell, a_slot, a_counts, b_cell, b_slot, b_counts, cell, slot, counts) -> int:
    """Merge two states' ``(cell, slot)`` pairs (each unique, in order) into ``cell``, ``slot`` and
    ``counts``, a pair in both taking the sum of its counts; returns how many pairs there are."""
    i = j = m = 0
    na, nb = a_cell.shape[0], b_cell.shape[0]
    while i < na or j < nb:
        if j == nb or (i < na and (a_cell[i] < b_cell[j] or (a_cell[i] == b_cell[j] and a_slot[i] < b_slot[j]))):
            cell[m], slot[m] = a_cell[i], a_slot[i]
            counts[m] = a_counts[i]
            i += 1
        elif i == na or a_cell[i] != b_cell[j] or a_slot[i] != b_slot[j]:
            cell[m], slot[m] = b_cell[j], b_slot[j]
            counts[m] = b_counts[j]
            j += 1
        else:
            cell[m], slot[m] = a_cell[i], a_slot[i]
            counts[m] = a_counts[i] + b_counts[j]
            i += 1
            j += 1
        m += 1
    return m