"""A Dask DataFrame's partitions as Arrow batches, and what its metadata tells without reading rows."""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from .base import SourceError


def is_dask_dataframe(obj) -> bool:
    """Whether ``obj`` is a Dask DataFrame (checked without importing Dask)."""
    return type(obj).__module__.startswith("dask.") and hasattr(obj, "to_delayed") and hasattr(obj, "columns")


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is any Dask collection (DataFrame, Series, Array, Bag, Delayed)."""
    return type(obj).__module__.startswith("dask.") and hasattr(obj, "__dask_graph__")


@dataclass
class FrameReader:
    """A pandas partition as Arrow batches with the source's column types."""

    schema: pa.Schema

    def __call__(self, frame, columns, batch_size):
        try:
            table = pa.Table.from_pandas(frame[self.schema.names], preserve_index=False)
            if table.schema != self.schema:
                table = table.cast(self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise SourceError(f"a partition of the Dask DataFrame does not convert to the columns' types "
                              f"{self.schema}: {str(exc).strip().splitlines()[0]}") from None
        return table.select(list(columns)).to_batches(max_chunksize=batch_size)


class LazyPart:
    """A DataFrame partition's graph, carried into a task unevaluated (the row store's tasks compute it
    only when the partition is not kept where they run).  A plain class, not a dataclass: Dask looks
    into dataclasses for graphs to compute first."""

    __slots__ = ("part",)

    def __init__(self, part):
        self.part = part

    def compute(self):
        try:
            from distributed import worker_client

            with worker_client() as client:  # leaves the worker's thread to the partition's own tasks
                return client.compute(self.part).result()
        except (ImportError, ValueError):  # not on a worker: this process computes it
            return self.part.compute(scheduler="sync")


@dataclass
class FrameFromTask:
    """``FrameReader`` over a :class:`LazyPart`, computed where the task runs."""

    reader: FrameReader

    def __call__(self, part: LazyPart, columns, batch_size):
        return self.reader(part.compute(), columns, batch_size)


def known_lengths(frame) -> tuple | None:
    """Partition lengths Dask knows without reading rows (Parquet statistics, in-memory pandas), else None."""
    try:  # dask-expr's Lengths expression folds to a literal when the metadata has them
        from dask.dataframe.dask_expr._expr import Lengths, Literal

        expr = Lengths(frame.expr).optimize(fuse=False)
        if isinstance(expr, Literal) and len(expr.value) == frame.npartitions:
            return tuple(expr.value)
    except Exception:  # a private API: without it the lengths are counted
        return None
    return None


def frame_schema(frame) -> pa.Schema:
    """Arrow types of the DataFrame's columns, from its metadata (object columns from the first rows)."""
    schema = pa.Schema.from_pandas(frame._meta, preserve_index=False)
    if any(pa.types.is_null(f.type) for f in schema):
        head = pa.Schema.from_pandas(frame.head(1000, npartitions=-1), preserve_index=False)
        schema = pa.schema([head.field(f.name) if pa.types.is_null(f.type) else f for f in schema])
    return schema
