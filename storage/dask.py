"""Rows in the partitions of a Dask DataFrame, or in Parquet files read by Dask workers.

A pass is mapped over the partitions where they live: each partition is read,
cut into Arrow batches and folded with the task's ``new_state`` / ``update``
into one partial state; the partial states are then merged pairwise, in a
tree over the partition indices (``(0 1) (2 3) ...``, then those pairs), so
the result is the one a single ordered fold would give, whatever the number
of workers or the order in which partitions finish. Only the task (the tree
so far, small) goes out, once per pass, as one literal of the task graph;
only partial states (AVC-groups) come back.

Fault tolerance is the scheduler's: every partial state is a pure function of
its partition, so when a worker dies ``dask.distributed`` recomputes the lost
keys from the graph on the workers left. The task is a graph literal, never
scattered data, because scattered data dies with its worker. Partial states
are merged in place (``merge(a, b)`` updates ``a``), which is safe because the
client holds no future of an intermediate state: a state is used by exactly one
merge, and is recomputed from its partition whenever it is needed again.

Row identity (the ``first_row`` of every batch) is the partition order and
the row order inside each partition: partition lengths are known before the
first pass, from the Parquet footers or the DataFrame's own metadata, and
otherwise counted once (that costs one counted pass).
"""
from __future__ import annotations

import itertools
import sys
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from .base import PassTask, Source, SourceError, fold_partition_batches, travelling
from .dask_client import CONNECT_TIMEOUT, WORKER_TIMEOUT, connect, wait_for_workers, wait_while_workers
from .dask_frame import (FrameFromTask, FrameReader, LazyPart, frame_schema, is_dask_collection,
                         is_dask_dataframe, known_lengths)
from .dask_store import PartitionStore, StoredFold, drop_store, fold_partition, fold_partitions, merge_folds
from .partition_cache import CachedReader
from . import partition_cache, worker_memo
from .parquet import ParquetSource

@dataclass(eq=False)
class DaskSource(Source):
    """Rows of a Dask DataFrame, or of Parquet files, passed over on a Dask cluster.

    Parameters
    ----------
    data : dask.dataframe.DataFrame, str, path-like or list of them
        A Dask DataFrame (typically ``dd.read_parquet("data/")``), or a Parquet
        file, folder, glob or list as :class:`ParquetSource` takes; then every
        file is one partition, read by a worker with the same reader as
        ``ParquetSource`` (so the path must be visible to the client, for the
        footers, and to every worker, e.g. a shared volume).
    client : distributed.Client, optional
        The cluster to run on. Without ``client`` and ``scheduler``, the
        default client is used if one exists, else Dask's threaded scheduler
        in this process.
    scheduler : str, optional
        Address of a ``dask scheduler`` (``"tcp://host:8786"``) to connect to;
        the source owns that connection (:meth:`close`, or use ``with``).
    partitioning : str or None, default="hive"
        For a path: how folder names become columns, as in ``ParquetSource``.
    connect_timeout : float, default=10
        Seconds to wait for the scheduler to answer before raising :class:`SourceError`.
    worker_timeout : float, default=60
        Seconds a pass waits for the cluster to have at least one worker (workers
        may still be starting) before raising :class:`SourceError`.

    Notes
    -----
    Every :meth:`run_pass` builds one task graph: a fold per partition, then a
    pairwise merge tree; it counts one pass, except for a task with a ``store``
    (:mod:`rainforest.storage.dask_store`) whose partitions were all kept. :meth:`scan` (used by
    prediction) brings the partitions to this process one at a time, in order.
    """

    data: object = None
    client: object = None
    scheduler: str | None = None
    partitioning: str | None = "hive"
    connect_timeout: float = CONNECT_TIMEOUT
    worker_timeout: float = WORKER_TIMEOUT
    _frame: object = field(default=None, init=False, repr=False)
    _parquet: ParquetSource | None = field(default=None, init=False, repr=False)
    _owns_client: bool = field(default=False, init=False, repr=False)
    _lengths: list | None = field(default=None, init=False, repr=False)
    _schema: pa.Schema | None = field(default=None, init=False, repr=False)
    _homes: dict = field(default_factory=dict, init=False, repr=False)  # store id -> each partition's worker
    _kept_batches: tuple | None = field(default=None, init=False, repr=False)  # (fit id, bytes a worker)

    #: A pass runs where the rows live: sources derived from this one delegate to :meth:`fold`.
    distributed = True
    folds_elsewhere = True

    def __post_init__(self):
        if self.client is not None and self.scheduler is not None:
            raise SourceError("give DaskSource either client= or scheduler=, not both")
        if is_dask_dataframe(self.data):
            self._frame = self.data
        elif isinstance(self.data, (str, bytes)) or hasattr(self.data, "__fspath__") or (
                isinstance(self.data, (list, tuple)) and self.data):
            self._parquet = ParquetSource(self.data, partitioning=self.partitioning)
        elif is_dask_collection(self.data):
            raise SourceError(f"DaskSource needs a Dask DataFrame with named columns, "
                              f"got a {type(self.data).__name__}; convert it with .to_frame() or to_dask_dataframe()")
        else:
            raise SourceError(f"DaskSource needs a Dask DataFrame or a Parquet path, got {type(self.data).__name__}")
        if self.scheduler is not None:
            self.client = connect(self.scheduler, self.connect_timeout)
            self._owns_client = True

    #: Growth may keep encoded partitions on the workers (storage/dask_store.py): a Parquet file is
    #: read by the worker itself, a DataFrame's partition computed from within its task, whenever the
    #: partition is not, or no longer, kept.
    keeps_partitions = True
    kept_rows_name = "rows kept on the workers"

    # -- the row store on the workers (storage/dask_store.py) -----------------------------

    def _stored_parts(self, columns: list) -> tuple:
        """``(reader, parts)`` of the row store's tasks: a part a worker can read or compute on its own."""
        if self._parquet is not None:
            return _FileReader(), [(self._parquet, i) for i in range(len(self._parquet.files))]
        reader, parts = self._partitions(columns, uuid.uuid4().hex[:12])
        return FrameFromTask(reader), [LazyPart(p) for p in parts]

    def open_store(self, budget_bytes: int, row_bytes: int) -> PartitionStore:
        """A row store for one fit: each worker (or this process) holds up to ``budget_bytes`` of
        encoded rows in memory and the rest on its local disk (``row_bytes`` a row)."""
        return PartitionStore(budget_bytes, row_bytes=row_bytes)

    def close_store(self, store: PartitionStore) -> None:
        """Release ``store``'s pieces on every worker and in this process."""
        self._homes.pop(store.id, None)
        drop_store(store.id)
        client = self._active_client()
        if client is not None and client.status == "running":
            client.run(drop_store, store.id)

    def keep_batches(self, fit_id: str, budget_bytes: int) -> None:
        """Keep the partitions' raw batches where the fit ``fit_id``'s passes with a row store read them
        (:mod:`rainforest.storage.partition_cache`: up to ``budget_bytes`` in each worker's memory, the
        rest on its local disk), so a later such pass of the fit reading the same columns reads no
        source; until :meth:`forget`.  For a fit whose passes need the raw rows again (AdaBoost's
        rounds), where the encoded rows one pass keeps cannot serve the next."""
        self._kept_batches = (fit_id, budget_bytes)

    def forget(self, fit_id: str) -> None:
        """Release what the fit ``fit_id`` kept in the workers' memos (:mod:`rainforest.storage.worker_memo`)
        and of their batches (:meth:`keep_batches`), on every worker and in this process."""
        if self._kept_batches is not None and self._kept_batches[0] == fit_id:
            self._kept_batches = None
        self._homes.pop(fit_id, None)
        worker_memo.drop(fit_id)
        partition_cache.drop(fit_id)
        client = self._active_client()
        if client is not None and client.status == "running":
            client.run(worker_memo.drop, fit_id)
            client.run(partition_cache.drop, fit_id)

    def run_pass(self, task: PassTask, columns: Sequence[str], batch_size: int = 65536,
                 progress: Callable[[int], None] | None = None) -> Any:
        """As :meth:`Source.run_pass`; a task with a ``store``, or any task while the fit keeps its raw
        batches (:meth:`keep_batches`), counts a pass only when some partition was read from the
        source (the first pass, or one whose worker was lost)."""
        if getattr(task, "store", None) is None and self._kept_batches is None:
            return super().run_pass(task, columns, batch_size, progress)
        self.check_columns(columns)
        folded = self._fold_stored(task, list(columns), batch_size, progress)
        self.n_passes += folded.source_reads > 0
        return folded.state

    def _fold_stored(self, task: PassTask, columns: list, batch_size: int, progress) -> StoredFold:
        lengths = self.partition_lengths()
        client = self._active_client()
        uid = uuid.uuid4().hex[:12]
        firsts = list(itertools.accumulate(lengths, initial=0))  # each partition's first row
        local = _locked(progress) if progress is not None and client is None and _in_process() else None
        task_node = _delayed(task, name=f"rainforest-task-{uid}", traverse=False)
        kept = self._kept_batches  # the fit's raw batches, where its earlier passes read them
        store_id = task.store.id if getattr(task, "store", None) is not None else None  # none: raw batches only
        homes = self._homes.get(store_id) or (kept and self._homes.get(kept[0])) or [None] * len(lengths)
        held = []  # a client's futures, all held to the end: one released early could be forgotten by the
        # scheduler before the merge that needs it arrives

        reader, parts = self._stored_parts(columns)
        if kept is not None:
            reader, parts = CachedReader(reader, kept[0], kept[1]), list(enumerate(parts))

        def fold(i):
            args = (reader, parts[i], columns, batch_size, firsts[i], lengths[i], i)
            if client is None:  # Dask's local scheduler: the store is this process's
                return _delayed(fold_partition, pure=False)(task_node, *args, local,
                                                            dask_key_name=f"rainforest-fold-{uid}-{i}")
            # to the worker holding the partition's pieces, or anywhere once it is gone
            where = {"workers": [homes[i]], "allow_other_workers": True} if homes[i] else {}
            held.append(client.submit(fold_partition, task, *args, key=f"rainforest-fold-{uid}-{i}", pure=False,
                                      **where))
            return held[-1]

        def merge(a, b, key):
            if client is None:
                return _delayed(merge_folds, pure=False)(task_node, a, b, dask_key_name=key)
            held.append(client.submit(merge_folds, task, a, b, key=key, pure=False))
            return held[-1]

        # A task whose counts are integers (unit weights) gives the same sums in any merge order: the
        # partitions a worker holds are then folded by one task there, so one state per worker crosses
        # the network, not one per partition (up to 4.7 MB each at depth 9 of a 255-bin Agrawal tree).
        # The first pass, where no partition is kept yet, folds contiguous ranges (see _ranges).
        groups = [(None, g) for g in self._ranges(task, client, len(lengths))]
        if client is not None and getattr(task, "order_free", False) and any(homes):
            by_home = {}
            for i, home in enumerate(homes):
                by_home.setdefault(home, []).append(i)
            groups = [(None, [i]) for i in by_home.pop(None, [])] + list(by_home.items())
        states = []
        for home, mine in groups:
            if len(mine) == 1 and home is None:
                states.append(fold(mine[0]))
                continue
            where = {"workers": [home], "allow_other_workers": True} if home else {}
            held.append(client.submit(
                fold_partitions, task, reader, [(parts[i], firsts[i], lengths[i], i) for i in mine],
                columns, batch_size, key=f"rainforest-folds-{uid}-{'.'.join(map(str, mine))}", pure=False, **where))
            states.append(held[-1])
        if client is not None and len(states) == 2:  # see fold(): the last merge here
            folded = merge_folds(task, *self._gather(client, held, states))
        else:
            last = merged_pairwise(states, merge, uid)
            folded = self._compute([last])[0] if client is None else self._gather(client, held, [last])[0]
        homes = [folded.homes.get(i) for i in range(len(lengths))]
        if store_id is not None:
            self._homes[store_id] = homes
        if kept is not None:
            self._homes[kept[0]] = homes
        if progress is not None and local is None:
            progress(firsts[-1])
        return folded

    def _gather(self, client, futures: list, wanted: list) -> list:
        """The results of ``wanted``, then every one of ``futures`` cancelled."""
        wait_for_workers(client, self.worker_timeout)
        try:
            wait_while_workers(client, wanted, self.worker_timeout)
            return [f.result() for f in wanted]
        finally:
            client.cancel(futures)  # an interrupted pass leaves nothing running

    # -- Source ------------------------------------------------------------------
    @property
    def schema(self) -> pa.Schema:
        if self._schema is None:
            self._schema = self._parquet.schema if self._parquet is not None else frame_schema(self._frame)
        return self._schema

    @property
    def description(self) -> str:
        if self._parquet is not None:
            return self._parquet.description
        return f"a Dask DataFrame of {self._frame.npartitions} partitions"

    @property
    def npartitions(self) -> int:
        return len(self._parquet.files) if self._parquet is not None else self._frame.npartitions

    def partition_lengths(self) -> list[int]:
        """Rows of each partition, in order; known from metadata, else counted once (one counted pass)."""
        if self._lengths is None:
            if self._parquet is not None:
                self._lengths = self._parquet.fragment_rows()
            else:
                known = known_lengths(self._frame)
                if known is None:  # reading every partition is a pass over the data: count it
                    self.n_passes += 1
                    known = self._compute([_delayed(len)(p) for p in self._frame.to_delayed()])
                self._lengths = [int(n) for n in known]
        return self._lengths

    def fold(self, task: PassTask, columns: Sequence[str], batch_size: int = 65536,
             progress: Callable[[int], None] | None = None) -> Any:
        """One partial state per partition, on the cluster, merged pairwise in partition order."""
        columns = list(columns)
        lengths = self.partition_lengths()
        client = self._active_client()
        local_progress = _locked(progress) if progress is not None and client is None and _in_process() else None
        uid = uuid.uuid4().hex[:12]
        task_node = _delayed(task, name=f"rainforest-task-{uid}", traverse=False)
        reader, parts = self._partitions(columns, uid)
        if len(parts) != len(lengths):
            raise SourceError(f"{self.description} now has {len(parts)} partitions, {len(lengths)} when the "
                              f"source was first passed over; make a new source for new data")
        firsts = list(itertools.accumulate(lengths, initial=0))  # each partition's first row
        states, first = [], firsts[-1]
        for group in self._ranges(task, client, len(parts)):
            if len(group) == 1:
                i = group[0]
                states.append(_delayed(_fold_partition, pure=False)(
                    task_node, reader, parts[i], columns, batch_size, firsts[i], lengths[i], local_progress,
                    dask_key_name=f"rainforest-fold-{uid}-{i}"))
            else:
                states.append(_delayed(_fold_partitions, pure=False)(
                    task_node, reader, [(parts[i], firsts[i], lengths[i]) for i in group], columns, batch_size,
                    dask_key_name=f"rainforest-folds-{uid}-{group[0]}.{group[-1]}"))
        if not states:
            return task.new_state()
        if client is not None and len(states) == 2:
            # Two partial states (two workers' ranges): merged here, in the same order, rather than on a
            # worker and then sent here; the same bytes cross, one scheduling hop fewer (about 5 ms a
            # pass on a 2-core machine, where a level from kept rows takes 50-100 ms).
            state = _merge_pair(task, *self._compute(states, client))
        else:
            last = merged_pairwise(states, lambda a, b, key: _delayed(_merge_pair, pure=False)(
                task_node, a, b, dask_key_name=key), uid)
            state = self._compute([last], client)[0]
        if progress is not None and local_progress is None:
            progress(first)  # a cluster reports the pass when it is done
        return state

    def _ranges(self, task: PassTask, client, n: int) -> list:
        """Partition indices folded by one task each, in order.  On a cluster, a task whose merge gives
        the same state in any order (``order_free``: integer counts) folds contiguous ranges of Parquet
        files, one per worker thread, so a pass sends a state per thread across the network, not one per
        partition; otherwise each partition is a task."""
        if client is None or self._parquet is None or not getattr(task, "order_free", False):
            return [[i] for i in range(n)]
        k = max(1, min(n, sum(client.nthreads().values())))
        return [list(range(n * j // k, n * (j + 1) // k)) for j in range(k)]

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        """The rows in order, one partition at a time (brought to this process)."""
        columns = list(columns)
        if self._parquet is not None:  # the client sees the files: reading them here is cheapest
            yield from self._parquet._batches(columns, batch_size)
            return
        reader, parts = self._partitions(columns, uuid.uuid4().hex[:12])
        client = self._active_client()
        for part in parts:
            frame = self._compute([part], client)[0]
            yield from reader(frame, columns, batch_size)

    # -- partitions ---------------------------------------------------------------
    def _partitions(self, columns: list, uid: str) -> tuple:
        """``(reader, parts)``: ``reader(part, columns, batch_size)`` yields a partition's batches."""
        if self._parquet is not None:
            source = _delayed(self._parquet, name=f"rainforest-files-{uid}", traverse=False)
            return _FileReader(), [(source, i) for i in range(len(self._parquet.files))]
        wanted = list(dict.fromkeys(columns))
        schema = pa.schema([self.schema.field(c) for c in wanted])
        parts = self._frame[wanted].to_delayed()
        if len(parts) != self._frame.npartitions:
            # Dask fused small projected partitions into fewer: read whole partitions instead, so
            # partition i stays the rows the lengths were taken from.
            parts = self._frame.to_delayed()
        return FrameReader(schema), parts

    # -- execution ----------------------------------------------------------------
    def _active_client(self):
        if self.client is not None:
            return self.client
        distributed = sys.modules.get("distributed")
        if distributed is None:  # never imported: there cannot be a default client
            return None
        try:
            return distributed.default_client()
        except ValueError:
            return None

    def _compute(self, objs: list, client=None) -> list:
        client = client if client is not None else self._active_client()
        if client is None:
            import dask

            return list(dask.compute(*objs))
        wait_for_workers(client, self.worker_timeout)
        futures = client.compute(objs)
        try:
            wait_while_workers(client, futures, self.worker_timeout)
            return client.gather(futures)  # a task's error (e.g. a DataError) is raised here as itself
        finally:
            client.cancel(futures)  # an interrupted pass leaves nothing running

    def close(self) -> None:
        """Close the connection this source opened (``scheduler=``); a given ``client`` is left open."""
        if self._owns_client and self.client is not None:
            self.client.close()
            self.client = None
            self._owns_client = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        # A source travels (e.g. inside a pickled estimator) without its connection.
        state = self.__dict__.copy()
        state.update(client=None, _owns_client=False)
        return state


# -- what runs on the workers ---------------------------------------------------------
def _fold_partition(task, reader, part, columns, batch_size, first_row, n_rows, progress):
    """Fold one partition's batches into a new state; ``first_row`` is its first row's global index."""
    return travelling(task, fold_partition_batches(task, reader(part, columns, batch_size), first_row, n_rows,
                                                   progress))


def merged_pairwise(states: list, merge, uid: str):
    """``states`` merged pairwise by partition index, level by level, ``merge(a, b, key)`` making each
    merge (a Dask task named ``key``): the same tree on every run, as :meth:`DaskSource.fold` and the
    row store's passes both need."""
    level = 0
    while len(states) > 1:
        states = [merge(states[j], states[j + 1], f"rainforest-merge-{uid}-{level}-{j // 2}")
                  for j in range(0, len(states) - 1, 2)] + ([states[-1]] if len(states) % 2 else [])
        level += 1
    return states[0]


def _fold_partitions(task, reader, parts, columns, batch_size):
    """Fold the partitions ``parts`` (``(part, first_row, n_rows)``, in order) one after the other into
    one state: only for tasks whose states merge alike in any order (``order_free``, see
    :meth:`DaskSource._ranges`).  A state per partition, merged, cost the profile's binning sample a
    sort per partition: a worker's profiling pass took half as long again."""
    state = None
    for part, first_row, n_rows in parts:
        state = fold_partition_batches(task, reader(part, columns, batch_size), first_row, n_rows, None, state)
    return travelling(task, state)


def _merge_pair(task, a, b):
    return travelling(task, task.merge(a, b))


class _FileReader:
    """Reads file ``i`` of a ParquetSource (``part = (source, i)``) exactly as ParquetSource does."""

    def __call__(self, part, columns, batch_size):
        source, index = part
        return source.fragment_batches(index, columns, batch_size)


# -- helpers ----------------------------------------------------------------------------------
def _delayed(obj, **kwargs):
    from dask import delayed

    return delayed(obj, **kwargs)


def _in_process() -> bool:
    """Whether Dask's local scheduler runs tasks in this process (threads), where a callback works."""
    import dask

    return dask.config.get("scheduler", "threads") in ("threads", "threading", "sync", "synchronous",
                                                      "single-threaded")


def _locked(progress: Callable[[int], None]) -> Callable[[int], None]:
    lock = threading.Lock()

    def report(n: int) -> None:
        with lock:
            progress(n)

    return report
