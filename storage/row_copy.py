"""A local copy of the rows a fit streamed once, so the fit reads its source once.

Extracting from PostgreSQL is bound by the server's side of ``COPY`` (about 0.4 s per million
Agrawal rows to ``/dev/null``, 0.7 s to a client here, with or without parallel connections),
so every pass after the first would cost that again: the profile, the extract, a forest's
out-of-bag pass, each boosting round.  Instead the first streamed pass writes its Arrow batches,
as they stream by, to an uncompressed Arrow IPC file in a scratch folder
(:func:`rainforest.storage.scratch.scratch_folder`), and every later pass of the same fit whose
columns it holds reads the file (plain reads into fresh batches: pages mapped instead would count
in the process's resident set, about the copy's size, though the kernel may reclaim them).  A
PostgreSQL source keeps one during every fit (:meth:`rainforest.storage.Source.during_fit`);
:class:`CopiedSource` gives any local source one, for a fit that needs the raw rows again and
again (AdaBoost's naive Bayes rounds).  The copy lives for one fit: it is removed when the fit
ends, fails or is interrupted, so a later fit sees the data as they are then; one left by a
process killed outright is removed by the next scratch folder made beside it.

A copy left unfinished (an error or an interrupt midway through its pass) is deleted and never
read.  A disk that fills while writing drops the copy with a warning; the fit goes on, and
later passes read the source again.
"""
from __future__ import annotations

import os
import shutil
import warnings
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import pyarrow as pa

from .base import Source
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
        with pa.OSFile(self.path) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i).select(list(columns))

    def batches(self, columns: Sequence[str], stream) -> Iterator[pa.RecordBatch]:
        """The rows' ``columns``: read from the finished copy where it holds them, else ``stream()``'s
        batches (read from the source only then), teed into the copy as they go by."""
        if self.covers(columns):
            return self.read(columns)
        return self.tee(list(columns), stream())

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


def copy_pays(source: Source) -> bool:
    """Whether a fit that reads the same rows many times should keep a :class:`CopiedSource` of
    ``source``: one read in this process whose reading costs (files, a database's stream; not
    rows in memory, nor a cluster's partitions or a pushed-down database, which keep their own)
    and that keeps no copy of its own (a PostgreSQL source's, made during every fit)."""
    return (source.reads_ahead and not source.folds_elsewhere and not getattr(source, "distributed", False)
            and not getattr(source, "copies_rows", False))


@dataclass
class CopiedSource(Source):
    """``base`` read once: its first pass's batches go, as they stream by, to a local copy
    (:class:`RowCopy`: uncompressed Arrow IPC in a scratch folder under ``parent``), and every later
    pass over columns the copy holds reads it, counting no pass over ``base``.

    For a fit whose passes need the raw rows again and again (AdaBoost's naive Bayes rounds weigh
    every row from its raw values); the batches come back as the first pass read them, so every
    pass sees the same rows in the same order.  Call :meth:`remove` when the fit ends (also after an
    error or an interrupt); a disk that fills up drops the copy with a warning, and later passes
    read ``base`` again (counted).
    """

    base: Source = None
    parent: str | None = None
    copy: RowCopy = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.copy = RowCopy(self.parent)

    @property
    def schema(self) -> pa.Schema:
        return self.base.schema

    @property
    def description(self) -> str:
        return self.base.description

    @property
    def reads_ahead(self) -> bool:  # the first pass reads the base ahead, a later one the copy
        return self.base.reads_ahead

    def copied(self, columns: Sequence[str]) -> bool:
        return self.copy.covers(columns) or self.base.copied(columns)

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        return self.copy.batches(columns, lambda: self.base._batches(list(columns), batch_size))

    def remove(self) -> None:
        """Remove the copy and its folder."""
        self.copy.remove()
