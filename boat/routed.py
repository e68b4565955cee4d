"""Rows routed down the tree during BOAT's finish: in memory, or in files when they are many.

A verified node's held rows go down its exact split and on through the coarse tree (:mod:`rainforest.boat.finish`);
where each stops, they join that node's family.  They are Arrow tables in memory, except the rows of an
interval too large to hold whole: those are routed a batch at a time and written, per node they reach,
to a file in a temporary folder of the work folder (:class:`RoutedFile`), removed when the finish ends.
The helpers here read either kind alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class RoutedFile:
    """Routed rows in a Parquet file (``num_rows`` of them), for a node's family like a table."""

    path: str
    num_rows: int


def entry_batches(entry, columns: list, batch_size: int) -> Iterator[pa.RecordBatch]:
    """``columns`` of a table or a :class:`RoutedFile`, a batch at a time."""
    if isinstance(entry, RoutedFile):
        yield from pq.ParquetFile(entry.path).iter_batches(batch_size=batch_size, columns=columns)
    else:
        yield from entry.select(columns).to_batches(batch_size)


def entry_table(entry, columns: list) -> pa.Table:
    return pq.read_table(entry.path, columns=columns) if isinstance(entry, RoutedFile) else entry.select(columns)


def add_to_digest(entry, digest) -> None:
    """Add the rows of ``entry`` to ``digest`` (a subtree's cache key): a table's Arrow stream, a file's bytes."""
    if isinstance(entry, RoutedFile):
        with open(entry.path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        return
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, entry.schema) as w:
        w.write_table(entry)
    digest.update(sink.getvalue())  # the buffer itself: no copy
