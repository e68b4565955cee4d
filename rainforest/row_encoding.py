"""Raw rows to encoded rows: values to their slots, a batch to a :class:`rainforest.rows.RowBlock`.

The slot of a value (:func:`rainforest.schema.slot_of`: a bin, an exact value's rank or key, a
category's code; missing values and unseen categories take the attribute's last slot) is found
once, as a batch streams by; growth, the row stores and the boosting rounds then work from the
slots.  :func:`attribute_slots` reads a column in its own Arrow type; :func:`to_slots` does the
same from :meth:`rainforest.schema.Schema.encode`'s float64 matrix (the forest's combinations).
"""
from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from .rows import RowBlock, label_dtype, slot_dtype
from .schema import NUMERIC, Schema, numeric_values, plain_numbers, slot_of
from .value_keys import key_slots


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


@numba.njit(cache=True, parallel=True, nogil=True)
def value_slots(x, c, table, lo, scale, miss, out):
    """``out[i]``: the slot of ``x[i]`` among the cuts ``c`` (:func:`slot_of`), ``miss`` for NaN.  ``x``
    is read in its own type (a column straight from Arrow), in parallel over the rows."""
    for i in numba.prange(x.shape[0]):
        v = x[i]
        out[i] = miss if v != v else slot_of(v, c, table, lo, scale)


@numba.njit(cache=True, parallel=True, nogil=True)
def integer_slots(x, c, table, base, out):
    """``out[i]``: the slot of the integer ``x[i]`` from :func:`rainforest.schema.integer_lookup`'s
    ``table`` (one load where :func:`value_slots` searches)."""
    m = c.shape[0]
    first, last = c[0], c[m - 1]
    for i in numba.prange(x.shape[0]):
        v = x[i]
        if v <= first:
            out[i] = 0
        elif v > last:
            out[i] = m
        else:
            out[i] = table[np.int64(v) - base]


def attribute_slots(schema: Schema, j: int, column, out: np.ndarray) -> None:
    """Write the slots of attribute ``j``'s column (Arrow) into ``out``, as :func:`to_slots` would from
    :meth:`Schema.encode`'s matrix but without it: numbers are read in their own type, once."""
    a = schema.attributes[j]
    if a.kind != NUMERIC:
        out[:] = a.category_slots(column)
        return
    x = plain_numbers(column)
    if a.keys is not None:
        key_slots(x, out)
        return
    integers = schema.integer_tables()[j] if x.dtype.kind in "iu" and x.dtype != np.uint64 else None
    cuts, cut_offsets, lut_lo, lut_scale, lut, lut_offsets = schema.slot_tables()
    c = cuts[cut_offsets[j]:cut_offsets[j + 1]]
    if integers is not None:
        integer_slots(x, c, integers[0], integers[1], out)
    else:
        value_slots(x, c, lut[lut_offsets[j]:lut_offsets[j + 1]], lut_lo[j], lut_scale[j], a.n_slots, out)


def stores_weights(schema: Schema, class_weight: np.ndarray | None) -> bool:
    """Whether encoded rows carry a weight each: with a weight column or class weights.  (A regressor's
    AVC cells have a row-count channel, but without sample weights its rows weigh one and carry none.)"""
    return schema.weight is not None or class_weight is not None


def slots_of(schema: Schema, batch: pa.RecordBatch) -> np.ndarray:
    """The slots of a batch's rows, every attribute's (column-major, :func:`slot_dtype`)."""
    S = np.empty((batch.num_rows, len(schema.attributes)), slot_dtype(schema), order="F")
    for j, a in enumerate(schema.attributes):
        attribute_slots(schema, j, batch.column(a.name), S[:, j])
    return S


def encode_rows(schema: Schema, batch: pa.RecordBatch, class_weight: np.ndarray | None,
                slots: np.ndarray | None = None) -> RowBlock:
    """A batch of raw rows as a :class:`RowBlock` at the root (weights: :func:`stores_weights`);
    ``slots``: the batch's :func:`slots_of`, found already (copied: the block's are its own)."""
    S = slots_of(schema, batch) if slots is None else slots.copy(order="F")
    label = batch.column(schema.label.name)
    if stores_weights(schema, class_weight):
        w = numeric_values(batch.column(schema.weight)) if schema.weight else np.ones(len(label))
        y = schema.label.codes(label, absent=w == 0)
        if class_weight is not None:
            w = w * class_weight[y]
    else:
        y, w = schema.label.codes(label), np.empty(0)
    y = y.astype(label_dtype(schema.label))  # as kept rows hold them: one kernel specialization
    return RowBlock(S, y, w, np.zeros(len(y), np.int32))
