"""A local copy of the rows a SQL source streamed during one fit, so the fit scans the server once.

Extracting from PostgreSQL is bound by the server's side of ``COPY`` (about 0.4 s per million
Agrawal rows to ``/dev/null``, 0.7 s to a client here, with or without parallel connections),
so every pass after the first would cost that again: the profile, the extract, a forest's
out-of-bag pass, each boosting round.  Instead the first streamed pass writes its Arrow batches,
as they stream by, to an uncompressed Arrow IPC file in a scratch folder
(:func:`rainforest.storage.scratch.scratch_folder`), and every later pass of the same fit whose
columns it holds reads the file, memory-mapped.  The copy lives for one fit
(:meth:`rainforest.storage.Source.during_fit`): it is removed when the fit ends, fails or is
interrupted, so a later fit sees the table as it is then; one left by a process killed outright
is removed by the next scratch folder made beside it.

A copy left unfinished (an error or an interrupt midway through its pass) is deleted and never
read.  A disk that fills while writing drops the copy with a warning; the fit goes on, and
later passes query the server again.
"""
from __future__ import annotations

import os
import shutil
import warnings
from typing import Iterator, Sequence

import pyarrow as pa

from .scratch import scratch_folder


class RowCopy:
    """The rows of one streamed pass, on local disk, for the later passes of the same fit.

    Parameters
    ----------
    parent : str or None
        Where the scratch folder is made (``tempfile``'s default when None).
    """

    def __init__(self, parent: str | None = None):
        self.parent = parent
        self.root: str | None = None
        self.columns: list[str] | None = None  # those of the finished copy
        self.failed = False  # the disk refused a write: no copy this fit
        self.bytes_written = 0
        self.reads = 0

    @property
    def path(self) -> str:
        return os.path.join(self.root, "rows.arrow")

    def covers(self, columns: Sequence[str]) -> bool:
        """Whether the finished copy holds every one of ``columns``."""
        return self.columns is not None and set(columns) <= set(self.columns)

    def read(self, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """The copied rows' ``columns``, batch by batch, in the order they streamed."""
        self.reads += 1
        with pa.memory_map(self.path) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i).select(list(columns))

    def tee(self, columns: Sequence[str], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Yield ``batches`` (of ``columns``), writing each to the copy first; the copy counts only once
        every batch went by. Nothing is written when a copy is finished already."""
        if self.columns is not None:
            yield from batches
            return
        if self.root is None:
            self.root = scratch_folder(self.parent)
        writer = None
        try:
            for batch in batches:
                if not self.failed:
                    writer = self._written(writer, batch)
                yield batch
            if writer is not None:
                writer.close()
                writer = None
                self.columns = list(columns)
        finally:
            if writer is not None:  # an error, an interrupt, or a reader that stopped early: not a copy
                writer.close()
            if self.columns is None:
                self._drop()

    def _written(self, writer, batch: pa.RecordBatch):
        """``batch`` appended to the copy (opened at the first batch); None once the disk is full."""
        try:
            if writer is None:
                writer = pa.ipc.new_file(self.path, batch.schema)
            writer.write_batch(batch)
            self.bytes_written += batch.nbytes
            return writer
        except OSError as exc:
            if writer is not None:
                writer.close()
            self._drop()
            self.failed = True
            warnings.warn(f"the local copy of the rows in {self.parent or 'the temporary folder'} failed ({exc}); "
                          "later passes of this fit read the database again", RuntimeWarning, stacklevel=2)
            return None

    def _drop(self) -> None:
        if self.root is not None and os.path.exists(self.path):
            os.remove(self.path)

    def remove(self) -> None:
        """Remove the scratch folder and what it holds."""
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
        self.root, self.columns = None, None
