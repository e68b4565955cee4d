"""The Source protocol: where rows live and how one pass over them is made.

A pass is the unit of cost of the whole engine, so every pass over every
source goes through :meth:`Source.run_pass`, which counts it.  A pass is a
small map/merge task (:class:`PassTask`): local sources fold the batches into
one state in order; distributed sources (Dask) run the same task per
partition and merge the partial states.
"""
from __future__ import annotations

import queue
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Callable, Iterator, Protocol, Sequence

import pyarrow as pa


class SourceError(ValueError):
    """Bad input in a data source; the message names the file, column or value."""


class PassTask(Protocol):
    """What one pass computes: ``new_state``, ``update`` per batch, ``merge``.

    ``update(state, batch, first_row)`` receives the global index of the
    batch's first row, so row identities are stable across batch sizes and
    file layouts. A task may also define ``shrink(state)``, which a
    distributed source calls on every partial state before it travels (see
    :func:`travelling`): it may shrink the state, never change what it means.
    """

    def new_state(self) -> Any: ...

    def update(self, state: Any, batch: pa.RecordBatch, first_row: int) -> Any: ...

    def merge(self, a: Any, b: Any) -> Any: ...


@dataclass
class Source:
    """Base of all sources: a schema, ordered record batches, a pass counter.

    Subclasses implement :meth:`_batches`; everything else (counting passes,
    folding a :class:`PassTask`) lives here once.
    """

    n_passes: int = field(default=0, init=False)
    # Whether a pass reads the next unit ahead in a thread: worth it where reading costs (files,
    # servers), not for rows already in memory, where the thread's start is the pass's main cost.
    reads_ahead = True
    # Whether fold() runs the task in parts away from the caller (a Dask cluster, or Dask's
    # threads): a task must then hold nothing the caller reads afterwards (kept rows, a spill).
    folds_elsewhere = False

    # -- to implement -------------------------------------------------
    @property
    def schema(self) -> pa.Schema:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def description(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError  # pragma: no cover - abstract

    def _batch_groups(self, columns: Sequence[str], batch_size: int) -> Iterator[list[pa.RecordBatch]]:
        """:meth:`_batches` in lists that are read together (a Parquet row group), the unit a
        pass reads ahead; one batch each unless a source knows better."""
        for batch in self._batches(columns, batch_size):
            yield [batch]

    # -- shared --------------------------------------------------------
    def count_pass(self, columns: Sequence[str]) -> None:
        """Count a pass over ``columns``, unless it is served from a local copy (:meth:`copied`)."""
        if not self.copied(columns):
            self.n_passes += 1

    #: what a pass that does not read the source reads instead (its log line says so)
    kept_rows_name = "rows the source keeps"

    def copied(self, columns: Sequence[str]) -> bool:
        """Whether a pass over ``columns`` reads a copy this fit made of the rows, not the source."""
        return False

    @contextmanager
    def during_fit(self):
        """The span of one fit (a context manager): a source may keep what it reads until the fit
        ends (a PostgreSQL source's local copy of its rows, :mod:`rainforest.storage.row_copy`)."""
        yield

    def check_columns(self, columns: Sequence[str]) -> None:
        names = set(self.schema.names)
        for c in columns:
            if c not in names:
                raise SourceError(
                    f"column {c!r} not found in {self.description}; "
                    f"available columns: {', '.join(self.schema.names)}")

    def scan(self, columns: Sequence[str], batch_size: int = 65536,
             prefetch: bool = True) -> Iterator[tuple[int, pa.RecordBatch]]:
        """One counted pass: yields ``(first_row, batch)`` in a stable row order.

        With ``prefetch`` the next read unit (a batch, or a Parquet row group's batches) is
        read by a background thread while the caller works on the current one (decoding and
        the Numba kernels both release the GIL); at most two units are held.
        """
        self.check_columns(columns)
        self.count_pass(columns)
        first = 0
        batches = (self._groups_read(list(columns), batch_size) if prefetch
                   else self._batches(list(columns), batch_size))
        for batch in batches:
            if batch.num_rows == 0:
                continue
            yield first, batch
            first += batch.num_rows

    def run_pass(self, task: PassTask, columns: Sequence[str], batch_size: int = 65536,
                 progress: Callable[[int], None] | None = None) -> Any:
        """Run ``task`` over every row in one counted pass and return its state."""
        self.check_columns(columns)
        self.count_pass(columns)
        return self.fold(task, list(columns), batch_size, progress)

    def fold(self, task: PassTask, columns: Sequence[str], batch_size: int = 65536,
             progress: Callable[[int], None] | None = None) -> Any:
        """The body of :meth:`run_pass`, not counted: fold every batch into one state, in row order.

        Distributed sources override this (one state per partition, merged); a source
        derived from another one (adding computed columns) counts its own pass and
        delegates here, so that its base runs the task where the rows live.
        """
        return fold_batches(task, self._groups_read(list(columns), batch_size), 0, progress)[0]

    def _groups_read(self, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        """The batches of :meth:`_batch_groups`, read ahead by a thread where :attr:`reads_ahead`."""
        groups = self._batch_groups(columns, batch_size)
        return _prefetched(groups) if self.reads_ahead else chain.from_iterable(groups)


def runs_up_to(sizes: Sequence[int], limit: int) -> list[tuple[int, int]]:
    """Consecutive items ``r:k`` of ``sizes`` taken together, up to ``limit`` in all (an item larger
    alone): the Parquet row groups read at once, the spill's records read as one block."""
    runs, r = [], 0
    while r < len(sizes):
        k, n = r, 0
        while k < len(sizes) and (n == 0 or n + sizes[k] <= limit):
            n += sizes[k]
            k += 1
        runs.append((r, k))
        r = k
    return runs


def check_partition_rows(first_row: int, rows: int, n_rows: int) -> None:
    """A partition folded on a cluster must hold the rows counted before the pass: the row
    identities of every later partition depend on it."""
    if rows != n_rows:
        raise SourceError(f"a partition starting at row {first_row} has {rows} rows, but "
                          f"{n_rows} were counted before the pass: the data changed under the source")


def fold_partition_batches(task: PassTask, batches, first_row: int, n_rows: int,
                           progress: Callable[[int], None] | None = None, state: Any = None) -> Any:
    """:func:`fold_batches` over one partition's ``batches``, which must hold the ``n_rows`` rows counted
    before the pass (:func:`check_partition_rows`); returns the state."""
    state, rows = fold_batches(task, batches, first_row, progress, state)
    check_partition_rows(first_row, rows, n_rows)
    return state


def travelling(task: PassTask, state: Any) -> Any:
    """``state`` as it leaves a worker: ``task.shrink(state)`` where the task defines it (e.g. a
    profile trims its sample buffers to the rows they hold), else ``state`` itself."""
    shrink = getattr(task, "shrink", None)
    return state if shrink is None else shrink(state)


def fold_batches(task: PassTask, batches, first_row: int = 0,
                 progress: Callable[[int], None] | None = None, state: Any = None) -> tuple[Any, int]:
    """Fold ``batches`` in order into ``state`` (None: a new state of ``task``), the first batch starting
    at the global row ``first_row``; returns the state and the number of rows folded (empty batches
    are skipped)."""
    if state is None:
        state = task.new_state()
    row = first_row
    for batch in batches:
        if batch.num_rows == 0:
            continue
        state = task.update(state, batch, row)
        row += batch.num_rows
        if progress is not None:
            progress(batch.num_rows)
    return state, row - first_row


_DONE = object()


def _prefetched(groups: Iterator[list[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    """Yield the batches of ``groups``, each group read by a thread while the caller works on the
    one before; its exceptions re-raise here.  The thread starts a group only once the caller has
    taken the previous one, so at most two groups are held (the caller's and the one being read)."""
    slot: queue.Queue = queue.Queue(maxsize=1)
    taken = threading.Semaphore(0)
    stop = threading.Event()

    def handed(item) -> bool:  # put item, then wait until the caller takes it; False once stopped
        slot.put(item)
        while not taken.acquire(timeout=0.1):
            if stop.is_set():
                return False
        return True

    def produce():
        try:
            for group in groups:
                if stop.is_set() or not handed(group):
                    return
            handed(_DONE)
        except BaseException as exc:  # handed to the consumer, raised in its thread
            handed(exc)

    thread = threading.Thread(target=produce, name="rainforest-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = slot.get()
            taken.release()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
            del item  # the group's memory goes before the next one is waited for
    finally:
        stop.set()
        thread.join()
