"""In-memory inputs (numpy arrays, pandas DataFrames, Arrow tables) as a Source."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from .arrow_numpy import numpy_column
from .base import Source, SourceError


@dataclass
class TableSource(Source):
    """A pyarrow Table held in memory, passed over in slices like any source."""

    table: pa.Table = None
    name: str = "in-memory table"
    reads_ahead = False  # the rows are in memory: nothing to read ahead

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    @property
    def description(self) -> str:
        return self.name

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self.table.select(columns).to_batches(max_chunksize=batch_size)


def _is_pandas(obj) -> bool:
    return type(obj).__module__.startswith("pandas") and hasattr(obj, "columns")


def as_table(X, y=None, *, target: str = "class", sample_weight=None,
             weight_column: str = "__sample_weight__") -> tuple[pa.Table, list[str], bool]:
    """Turn ``X`` (and ``y``) into an Arrow table.

    Returns ``(table, feature_names, has_names)``; ``has_names`` tells whether
    the input carried column names (DataFrame, Table) as opposed to a bare
    array, whose columns are called ``x0, x1, ...``.
    """
    if isinstance(X, pa.RecordBatch):
        X = pa.Table.from_batches([X])
    if isinstance(X, pa.Table):
        table, has_names = X, True
    elif _is_pandas(X):
        table, has_names = pa.Table.from_pandas(X, preserve_index=False), True
    elif isinstance(X, dict):
        table, has_names = pa.table(X), True
    else:
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise SourceError(f"X must be 2-dimensional, got an array of shape {arr.shape}")
        cols = {f"x{j}": arr[:, j] for j in range(arr.shape[1])}
        if arr.dtype == object:
            table = pa.table({k: pa.array(list(v), from_pandas=True) for k, v in cols.items()})
        else:
            table = pa.Table.from_arrays([numpy_column(v) for v in cols.values()], names=list(cols))
        has_names = False
    names = [n for n in table.column_names]
    for n in names:
        if not isinstance(n, str):
            raise SourceError(f"column names must be strings, got {n!r}")
    if y is not None:
        y_arr = y.to_numpy() if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray) else y
        if not isinstance(y_arr, (pa.Array, pa.ChunkedArray)):
            y_arr = numpy_column(np.asarray(y_arr), nan_as_null=True)
        if len(y_arr) != table.num_rows:
            raise SourceError(f"X has {table.num_rows} rows but y has {len(y_arr)}")
        if target in names:
            raise SourceError(f"X already has a column named {target!r}; pass target= a free name")
        table = table.append_column(target, y_arr)
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (table.num_rows,):
            raise SourceError(f"sample_weight has shape {w.shape}, expected ({table.num_rows},)")
        table = table.append_column(weight_column, numpy_column(w))
    return table, names, has_names
