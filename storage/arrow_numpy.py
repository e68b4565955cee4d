"""Numeric columns between numpy and Arrow without pyarrow's pandas bridge.

``pa.array(ndarray)`` and ``Array.to_numpy()`` import pandas on first use (pyarrow's conversion
goes through its pandas layer), which is 0.15 s of a fresh process's first small fit.  A null-free
integer or floating column has the same bytes in both, so these build one from the other's buffer
directly and fall back to pyarrow's conversion for everything else (nulls, booleans, strings,
dictionaries, temporals).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

_KINDS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
_ARROW_OF = {np.dtype(t): pa.from_numpy_dtype(np.dtype(t)) for t in _KINDS}
_NUMPY_OF = {arrow: numpy for numpy, arrow in _ARROW_OF.items()}


def numpy_column(values: np.ndarray, nan_as_null: bool = False) -> pa.Array:
    """One Arrow array from a 1-d numpy array, sharing its bytes where the kinds allow; with
    ``nan_as_null``, a floating array's NaN become nulls (pyarrow's ``from_pandas``)."""
    kind = _ARROW_OF.get(values.dtype) if values.ndim == 1 and values.dtype.isnative else None
    if kind is None or (nan_as_null and values.dtype.kind == "f"):
        return pa.array(values, from_pandas=nan_as_null)
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def read_only(values: np.ndarray | None) -> np.ndarray | None:
    """``values`` as a read-only view (no copy; None stays None).  A Numba kernel is compiled once per
    argument type, and an array's write flag is part of its type: inputs a kernel only reads are
    handed over read-only whatever made them (Arrow's buffers are read-only, arrays numpy made are
    not), so that one specialization serves both (a cold test suite compiled 20 twice)."""
    if values is None or not values.flags.writeable:
        return values
    view = values.view()
    view.flags.writeable = False
    return view


def arrow_values(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A column's values as numpy: a read-only view of a null-free integer or floating array's
    buffer, else ``to_numpy(zero_copy_only=False)`` (a copy, NaN or None for nulls): callers do not
    write to it."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks != 1:
            return arr.to_numpy()
        arr = arr.chunk(0)
    dtype = _NUMPY_OF.get(arr.type)
    if dtype is None or arr.null_count:
        return arr.to_numpy(zero_copy_only=False)
    data = arr.buffers()[1]
    if data is None:  # an empty array may have no buffer
        return np.empty(0, dtype)
    view = np.frombuffer(data, dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    view.flags.writeable = False  # Arrow's memory is immutable
    return view
