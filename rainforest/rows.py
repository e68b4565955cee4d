"""Encoded rows: the compact form in which growth counts, keeps and spills rows.

A row becomes its *slots*: per attribute the index of its value's AVC slot
(a bin, an exact value's rank, a category code; the attribute's last slot is
"missing"), its class code, its weight (omitted when all weights are one)
and the tree node it has reached.  Slots take one byte per attribute in
binned mode, so rows kept in memory (RF-Hybrid) or written to the spill
folder (RF-Write) cost a fraction of their decoded size, and every later
level routes and counts them without decoding or searching cuts again.

One set of kernels serves every row supply (a data pass, rows kept in
memory, spill partitions): :func:`descend` moves rows to the frontier and
:func:`rainforest.avc.accumulate` counts them.  :func:`step` is the routing step itself, which
the random forest's counting kernel (:mod:`rainforest.forest`) shares.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from .schema import Schema, numeric_values, slot_of


def slot_dtype(schema: Schema) -> np.dtype:
    """The narrowest unsigned type holding every attribute's slots (missing slot included)."""
    most = max(a.n_slots for a in schema.attributes)  # the missing slot's index
    for dt in (np.uint8, np.uint16, np.uint32):
        if most <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)  # pragma: no cover - more than 4 billion distinct values


def row_bytes(schema: Schema, weighted: bool) -> int:
    """Bytes of one row kept in memory: slots, class (4), node (4) and weight (8) when not all ones,
    plus the scratch of counting them (each row's node in the pass and its place grouped by node, 4 each)."""
    return len(schema.attributes) * slot_dtype(schema).itemsize + 8 + (8 if weighted else 0) + 8


MAX_KEPT_ROWS = 2**31 - 1  # rows are numbered with int32 when counted


@numba.njit(cache=True, parallel=True, nogil=True)
def to_slots(X, kinds, n_slots, cuts, cut_offsets, lut_lo, lut_scale, lut, lut_offsets, out):
    """``out[i, a]``: the slot of ``X[i, a]`` (see :mod:`rainforest.schema`); missing values, and
    categories unseen in training (code ``V``), take the attribute's last slot ``n_slots[a]``."""
    n, p = X.shape
    for a in numba.prange(p):
        miss = n_slots[a]
        c = cuts[cut_offsets[a]:cut_offsets[a + 1]]
        table = lut[lut_offsets[a]:lut_offsets[a + 1]]
        lo = lut_lo[a]
        scale = lut_scale[a]
        numeric = kinds[a] == 0
        for i in range(n):
            v = X[i, a]
            if v != v:
                out[i, a] = miss
            elif numeric:
                out[i, a] = slot_of(v, c, table, lo, scale)
            else:
                out[i, a] = min(int(v), miss)


@numba.njit(cache=True, nogil=True, inline="always")
def step(S, i, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """The child of the split node ``k`` that row ``i`` of ``S`` goes to (see :func:`descend`): the
    one routing step of every kernel that moves encoded rows down a tree."""
    f = feature[k]
    s = S[i, f]
    if branch_offset[k] >= 0:
        b = slot_branch[branch_offset[k] + s]
    elif s == n_slots[f]:
        b = missing_branch[k]
    else:
        b = 0 if s <= slot_cut[k] else 1
    return first_child[k] + b


@numba.njit(cache=True, nogil=True, inline="always")
def walk(S, i, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """The leaf (or frontier node) that row ``i`` of ``S`` reaches from node ``k``, by :func:`step`."""
    while first_child[k] >= 0:
        k = step(S, i, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots)
    return k


@numba.njit(cache=True, parallel=True, nogil=True)
def descend(S, node, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """Move each row from ``node[i]`` down to the leaf (or frontier node) its slots lead to.

    A categorical split routes by its table ``slot_branch[branch_offset[k] + s]``; a numeric one
    sends slots up to ``slot_cut[k]`` to its first child and the rest to its second, and the
    missing slot ``n_slots[a]`` to ``missing_branch[k]``.  That is the partition the split search
    counted (slots holding no row of the node may go either way), so rows go exactly where they
    were counted, and exact mode needs no table as long as the attribute's distinct values."""
    for i in numba.prange(node.shape[0]):
        node[i] = walk(S, i, node[i], feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch,
                       n_slots)


@dataclass
class RowBlock:
    """Encoded rows in row order: ``S`` (rows x attributes, column-major), class codes ``y``,
    weights ``w`` (empty when all are one) and the node ``node`` each row has reached."""

    S: np.ndarray
    y: np.ndarray
    w: np.ndarray
    node: np.ndarray

    def __len__(self) -> int:
        return self.y.shape[0]

    @property
    def nbytes(self) -> int:
        return self.S.nbytes + self.y.nbytes + self.w.nbytes + self.node.nbytes

    def take(self, mask: np.ndarray) -> "RowBlock":
        return RowBlock(np.asfortranarray(self.S[mask]), self.y[mask], self.w[mask] if len(self.w) else self.w,
                        self.node[mask])

    def to_arrow(self) -> pa.RecordBatch:
        """As an Arrow batch (columns ``s0..``, ``y``, ``node`` and ``w`` when weighted), for spilling."""
        cols = [pa.array(self.S[:, j]) for j in range(self.S.shape[1])] + [pa.array(self.y), pa.array(self.node)]
        names = [f"s{j}" for j in range(self.S.shape[1])] + ["y", "node"]
        if len(self.w):
            cols.append(pa.array(self.w))
            names.append("w")
        return pa.RecordBatch.from_arrays(cols, names=names)

    @classmethod
    def from_arrow(cls, batch: pa.RecordBatch, n_attributes: int) -> "RowBlock":
        S = np.empty((batch.num_rows, n_attributes), batch.column(0).type.to_pandas_dtype(), order="F")
        for j in range(n_attributes):
            S[:, j] = batch.column(j).to_numpy()
        w = batch.column("w").to_numpy() if "w" in batch.schema.names else np.empty(0)
        return cls(S, batch.column("y").to_numpy(), w, batch.column("node").to_numpy().copy())


def encode_rows(schema: Schema, batch: pa.RecordBatch, class_weight: np.ndarray | None, weighted: bool) -> RowBlock:
    """A batch of raw rows as a :class:`RowBlock` at the root."""
    X = schema.encode(batch)
    S = np.empty(X.shape, slot_dtype(schema), order="F")
    n_slots = np.array([a.n_slots for a in schema.attributes], np.int64)
    to_slots(X, schema.kinds, n_slots, *schema.slot_tables(), S)
    y = schema.label.codes(batch.column(schema.label.name))
    if weighted:
        w = numeric_values(batch.column(schema.weight)) if schema.weight else np.ones(len(y))
        if class_weight is not None:
            w = w * class_weight[y]
    else:
        w = np.empty(0)
    return RowBlock(S, y, w, np.zeros(len(y), np.int32))


class KeptRows:
    """Rows kept in memory by RF-Hybrid, in row order, filled into arrays sized in advance, so
    keeping ``n`` rows never holds more than ``n`` rows."""

    def __init__(self, capacity: int, n_attributes: int, dtype, weighted: bool):
        self.rows = RowBlock(np.empty((capacity, n_attributes), dtype, order="F"), np.empty(capacity, np.int32),
                             np.empty(capacity if weighted else 0), np.empty(capacity, np.int32))
        self.size = 0

    def add(self, block: RowBlock) -> None:
        n = len(block)
        if self.size + n > len(self.rows):  # the profile's row counts were exact, so this is a bug
            raise RuntimeError("more rows reached the kept nodes than the profile counted")
        sl = slice(self.size, self.size + n)
        self.rows.S[sl] = block.S
        self.rows.y[sl] = block.y
        self.rows.node[sl] = block.node
        if len(block.w):
            self.rows.w[sl] = block.w
        self.size += n

    def block(self) -> RowBlock:
        r, n = self.rows, self.size
        return RowBlock(r.S[:n], r.y[:n], r.w[:n] if len(r.w) else r.w, r.node[:n])

    def release(self, alive: np.ndarray) -> None:
        """Forget the rows whose node is not flagged in ``alive``: compacted away in place, keeping
        row order, once they are at least half of the rows (until then they are skipped cheaply)."""
        r = self.rows
        if 2 * int(np.count_nonzero(alive[r.node[:self.size]])) <= self.size:
            self.size = _compact(r.S, r.y, r.w, r.node, alive, self.size)


@numba.njit(cache=True, nogil=True)
def _compact(S, y, w, node, alive, n):
    m = 0
    weighted = w.shape[0] > 0
    for i in range(n):
        if alive[node[i]]:
            if m != i:
                for j in range(S.shape[1]):
                    S[m, j] = S[i, j]
                y[m] = y[i]
                node[m] = node[i]
                if weighted:
                    w[m] = w[i]
            m += 1
    return m
