"""Exact sums of a regressor's target: AVC cells whose sums do not depend on the order rows come in.

A regression tree's cells hold sums of ``y`` (less the label's shift) and of its square.  Summed
as plain floats, those depend on the order of the additions: a Dask cluster's partitions, a
database's parallel aggregate and a histogram subtraction (a child's cells as its parent's less
its siblings') each round differently in the last bits.  So with unit weights a binned tree adds
each row's ``v = y - shift`` and ``v * v`` as two parts each, on fixed grids:

* ``hi = floor(v / 2**g1) * 2**g1`` and ``lo = floor((v - hi) / 2**g2) * 2**g2``;
* ``g1`` is chosen from the largest ``|v|`` and the number of rows so that any sum of ``hi``
  parts over the fit's rows is a multiple of ``2**g1`` below ``2**(53 + g1)``: a float64 holds
  every partial sum exactly, so every addition (and subtraction) of them is exact; ``g2`` the
  same for ``lo`` parts, which are below ``2**g1``.

A cell's sums are then exact sums of those parts, equal whatever the order, the partitions or the
subtraction; a cell's ``sum v`` for the split search is ``hi + lo`` (one rounding).  The parts
keep ``v`` to within ``2**g2``: about ``|v|max * 2**-55`` at 10M rows, ``2**-43`` at 1B, finer than
the rounding of the float sums they replace.  The grids come from the profile (the target's range
and the row count), which every source computes alike, and a database computes the parts with the
same float operations (:func:`parts_sql`).

Raw cells are ``(sum hi(v), sum lo(v), sum hi(v*v), sum lo(v*v), rows)``;
:func:`moments_of_parts` turns them into the search's ``(sum w, sum w v, sum w v*v, rows)``.  A
random forest without sample weights adds each in-bag row's parts times its bootstrap multiplicity
``m`` (exact: ``m`` is a small integer), on grids :func:`widened` for the multiplicities, with the
sum of ``m`` in a channel of its own before the rows.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from .count_bins import counted_slot

PARTS_CHANNELS = 4  # a raw cell's channels before its row count
BLOCK = 4096  # rows whose parts accumulate_parts computes at a time
NO_GRID = np.empty(0)  # exact sums not in use: the cells add plain floats


def target_grid(low: float, high: float, shift: float, n_rows: int) -> tuple | None:
    """The grids of a target in ``[low, high]`` held less ``shift``, over ``n_rows`` rows: ``(2**g1, 2**-g1,
    2**g2, 2**-g2)`` for ``v`` and the same for ``v*v``; None where a grid would leave float64's range."""
    n_bits = max(int(n_rows), 1).bit_length()  # any cell sums at most n_rows < 2**n_bits rows
    if n_bits > 40:
        return None
    largest = float(max(abs(low - shift), abs(high - shift)))  # a Python float: its square may overflow quietly
    grid = []
    for bound in (largest, largest * largest):
        if not math.isfinite(bound):
            return None
        e = math.frexp(bound)[1] if bound > 0 else 0  # bound < 2**e
        g1 = e + n_bits - 52  # n_rows parts of at most 2**(e+1): below 2**(53 + g1)
        g2 = g1 + n_bits - 52  # n_rows parts below 2**g1: below 2**(53 + g2)
        if g2 < -1000 or g1 > 1000:
            return None
        grid += [2.0 ** g1, 2.0 ** -g1, 2.0 ** g2, 2.0 ** -g2]
    return tuple(grid)


def widened(grid: tuple, extra_bits: int) -> tuple:
    """``grid`` for sums of up to ``2**extra_bits`` times as many parts (a forest's rows, each counted
    up to its bootstrap multiplicity): ``g1`` up by ``extra_bits``, ``g2`` by twice that, as
    :func:`target_grid` would choose them for that many rows."""
    out = []
    for k in range(2):
        s1, i1, s2, i2 = grid[4 * k:4 * k + 4]
        out += [s1 * 2.0 ** extra_bits, i1 * 2.0 ** -extra_bits, s2 * 4.0 ** extra_bits, i2 * 4.0 ** -extra_bits]
    return tuple(out)


@numba.njit(cache=True, nogil=True, inline="always")
def split_target(v, grid):
    """The parts of a target ``v`` (less the shift) and of ``v * v`` on ``grid`` (:func:`target_grid`)."""
    y_hi = np.floor(v * grid[1]) * grid[0]
    y_lo = np.floor((v - y_hi) * grid[3]) * grid[2]
    q = v * v
    q_hi = np.floor(q * grid[5]) * grid[4]
    q_lo = np.floor((q - q_hi) * grid[7]) * grid[6]
    return y_hi, y_lo, q_hi, q_lo


@numba.njit(cache=True, nogil=True, inline="always")
def add_weighted_parts(cells, cell, parts, m):
    """Add ``m`` times a row's ``parts`` (:func:`split_target`; ``m`` its bootstrap multiplicity, a small
    integer, so the products are exact), then ``m`` and one row, to a forest's raw cell at ``cells[cell]``."""
    for k in range(PARTS_CHANNELS):
        cells[cell + k] += m * parts[k]
    cells[cell + PARTS_CHANNELS] += m
    cells[cell + PARTS_CHANNELS + 1] += 1.0


@numba.njit(cache=True, parallel=True, nogil=True)
def accumulate_parts(S, y, order, starts, ends, attrs, offsets, counts, shift, missing, n_counted, key_base, table,
                     table_start, grid, n_threads):
    """:func:`rainforest.avc.accumulate` for a regressor's raw cells (unit weights): each row's parts
    (:func:`split_target`) are computed once and added, with one row, to its cell of every counted
    attribute.  Threads take pieces of the nodes' rows: a whole node into its own cells, or a share of
    a large node into cells of their own, added to the node's after.  Parts add exactly, in any order,
    so the cells are a serial run's whatever the number of threads."""
    stride = np.uint64(counts.shape[2])
    n_cells = counts.shape[1] * counts.shape[2]
    direct = order.shape[0] == 0
    n_nodes = starts.shape[0]
    total = 0
    for k in range(n_nodes):
        total += ends[k] - starts[k]
    piece = max(BLOCK, total // (4 * n_threads) + 1)
    n_pieces = 0
    n_shared = 0
    for k in range(n_nodes):
        m = (ends[k] - starts[k] + piece - 1) // piece
        n_pieces += m
        n_shared += m if m > 1 else 0
    node_of = np.empty(n_pieces, np.int64)
    first = np.empty(n_pieces, np.int64)
    last = np.empty(n_pieces, np.int64)
    buffer = np.full(n_pieces, -1, np.int64)
    p = 0
    b = 0
    for k in range(n_nodes):
        m = (ends[k] - starts[k] + piece - 1) // piece
        for r in range(m):
            node_of[p], first[p], last[p] = k, starts[k] + r * piece, min(ends[k], starts[k] + (r + 1) * piece)
            if m > 1:
                buffer[p] = b
                b += 1
            p += 1
    shared = np.zeros((n_shared, n_cells))
    for p in numba.prange(n_pieces):
        cells = counts[node_of[p]].reshape(-1) if buffer[p] < 0 else shared[buffer[p]]
        parts = np.empty((min(BLOCK, last[p] - first[p]), PARTS_CHANNELS))  # small pieces: small scratch
        for b0 in range(first[p], last[p], BLOCK):  # a block's parts once, then one attribute at a time
            m = min(BLOCK, last[p] - b0)
            for t in range(m):
                i = np.uint64(b0 + t) if direct else np.uint64(order[b0 + t])
                parts[t, 0], parts[t, 1], parts[t, 2], parts[t, 3] = split_target(np.float64(y[i]), grid)
            for j in range(attrs.shape[0]):
                a = np.uint64(attrs[j])
                base = np.uint64(offsets[j])
                sh, miss, nc, kb = shift[a], missing[a], n_counted[a], key_base[a]
                tab = table[table_start[a]:table_start[a + 1]]
                for t in range(m):
                    i = np.uint64(b0 + t) if direct else np.uint64(order[b0 + t])
                    cell = (base + counted_slot(np.uint64(S[i, a]), sh, miss, nc, kb, tab)) * stride
                    cells[cell] += parts[t, 0]
                    cells[cell + 1] += parts[t, 1]
                    cells[cell + 2] += parts[t, 2]
                    cells[cell + 3] += parts[t, 3]
                    cells[cell + 4] += 1.0
    for p in range(n_pieces):
        if buffer[p] >= 0:
            counts[node_of[p]].reshape(-1)[:] += shared[buffer[p]]


def moments_of_parts(raw: np.ndarray) -> np.ndarray:
    """Raw cells as the split search's ``(sum w, sum w v, sum w v*v, rows)``: a tree's ``(..., 5)``, whose
    weight is its row count (unit weights), or a forest's ``(..., 6)``, whose weight (the bootstrap
    multiplicities' sum) comes before its row count."""
    out = np.empty(raw.shape[:-1] + (4,))
    out[..., 0] = raw[..., PARTS_CHANNELS]
    np.add(raw[..., 0], raw[..., 1], out=out[..., 1])
    np.add(raw[..., 2], raw[..., 3], out=out[..., 2])
    out[..., 3] = raw[..., -1]
    return out


def parts_sql(v: str, grid: tuple, double_literal) -> list[str]:
    """SQL for the four parts of the target expression ``v`` (a float64), as :func:`split_target`
    computes them: the same float operations, so the same numbers."""
    lit = [double_literal(g) for g in grid]
    out = []
    for k, x in enumerate((f"({v})", f"(({v}) * ({v}))")):
        s1, i1, s2, i2 = lit[4 * k:4 * k + 4]
        hi = f"(floor({x} * {i1}) * {s1})"
        out += [hi, f"(floor(({x} - {hi}) * {i2}) * {s2})"]
    return out
