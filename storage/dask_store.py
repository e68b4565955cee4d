"""Encoded partitions kept where they were read: each Dask worker's share of a fit's row store.

A pass task that can keep rows (it has a ``store``, a :class:`PartitionStore`, and the methods
``encode(batch, first_row)`` and ``count_piece(state, piece)``) is folded per partition by
:func:`fold_partition`: the first time a partition is needed on a worker, it is read from the source,
each batch encoded once (a *piece*: what the task counts, e.g. slots, class codes, weights and
the tree node each row has reached) and counted, and the pieces are kept in that worker
process's memory while they fit the store's per-worker budget. Later passes of the same fit are
submitted to the worker holding the partition (``workers=[home]``, ``allow_other_workers=True``)
and count its pieces without reading the source; the task mutates the pieces it routes (their
nodes, and drops the rows it will never count again), so the next pass starts where this one's
routing ended.  A task with ``hold(pieces)`` and ``count_held(state, held)`` keeps a partition in
memory in a form of its own instead (the tree's: rows grouped by node, moved down a level at the
next pass, counted node by node with no index), in the pieces' bytes (moving one partition's rows
down takes a second copy of that partition while it runs).

The store is a cache, never the only copy: a partition whose worker died, or that did not fit
the budget, is read and encoded again from the source wherever the scheduler puts its task, and
gives the same counts, so the result is the same (merged by partition index, or, for a task whose
counts are integers, by ranges of partitions: :func:`fold_partitions`).
:func:`drop_store` releases a fit's pieces on every worker (``client.run``) when growth ends,
also on error.

Only this module's functions run on the workers; it imports nothing from the learners.
"""
from __future__ import annotations

import contextlib
import copy
import os
import pickle
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field

from .base import check_partition_rows, fold_partition_batches
from .holdings import Holdings
from .scratch import swap_in

#: this process's share of the fits' stores: (store id, partition index) -> the partition's pieces
#: (``items``) or the file of them past the memory share (``files``); the bytes of each, per store id
_HOLDINGS = Holdings()
_PIECES, _FILES, _HELD, _ON_DISK = _HOLDINGS.items, _HOLDINGS.files, _HOLDINGS.in_memory, _HOLDINGS.on_disk
_FOLDERS, _CLOSED, _LOCK = _HOLDINGS.folders, _HOLDINGS.closed, _HOLDINGS.lock


@dataclass(frozen=True)
class PartitionStore:
    """One fit's row store on a cluster: the bytes each worker may hold of it in memory, whether the
    rest goes to the worker's local disk, the bytes of a row there (for the disk's room), its id."""

    budget_bytes: int
    disk: bool = True
    row_bytes: int = 64
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class StoredFold:
    """A (merged) partial state, where each partition's rows are kept (its pieces, or its raw batches:
    None where neither), and how many partitions were read from the source."""

    state: object
    homes: dict
    source_reads: int


def _worker():
    """The Dask worker running this task, or None in a process that is not a worker."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def _here() -> str | None:
    """The address of the worker running this task, or None."""
    worker = _worker()
    return None if worker is None else worker.address


def fold_partition(task, reader, part, columns, batch_size, first_row, n_rows, index, progress=None,
                   state=None) -> StoredFold:
    """Fold partition ``index``: from the pieces this process keeps of it, else from the source
    (encoding each batch once, keeping the pieces while the budget allows), into ``state`` (None: a
    new one)."""
    store = getattr(task, "store", None)
    if store is None:
        return _fold_raw(task, reader, part, columns, batch_size, first_row, n_rows, index, progress, state)
    key = (store.id, index)
    with _LOCK:
        pieces = _PIECES.get(key)
        room = _HELD.get(store.id, 0) < store.budget_bytes
        path = _FILES.get(key)
    if state is None:
        state = task.new_state()
    if pieces is not None or path is not None:  # kept here, in memory or on disk
        if isinstance(pieces, list):
            for piece in pieces:
                state = task.count_piece(state, piece)
        elif pieces is not None:  # what the task's hold made of them
            state = task.count_held(state, pieces)
        else:
            state = _count_file(task, state, path)
        if progress is not None:
            progress(n_rows)
        return StoredFold(state, {index: _here()}, 0)
    # a reader keeping the fit's raw batches here (storage.partition_cache) may serve them: no source read
    holds = getattr(reader, "holds", None)
    from_source = holds is None or not holds(part, columns, batch_size)
    # past the memory share, the pieces stream to a file on this machine's disk (when it has room)
    path = None if room or not store.disk else _new_file(store, index, n_rows)
    kept, row, size = [], first_row, 0
    try:
        with open(path, "wb") if path else _nowhere() as out:
            for batch in reader(part, columns, batch_size):
                if batch.num_rows == 0:
                    continue
                piece = task.encode(batch, row)
                state = task.count_piece(state, piece)
                if room:
                    kept.append(piece)
                elif out is not None:
                    pickle.dump(piece, out, protocol=pickle.HIGHEST_PROTOCOL)
                size += piece.nbytes
                row += batch.num_rows
                if progress is not None:
                    progress(batch.num_rows)
        check_partition_rows(first_row, row - first_row, n_rows)
    except BaseException:
        if path:
            os.remove(path)
        raise
    with _LOCK:
        in_memory = store.id not in _CLOSED and room and _HELD.get(store.id, 0) + size <= store.budget_bytes
        if in_memory:
            _HELD[store.id] = _HELD.get(store.id, 0) + size
    if in_memory:
        kept = task.hold(kept) if hasattr(task, "hold") else kept
        with _LOCK:
            in_memory = store.id not in _CLOSED  # else the fit ended meanwhile (and released its bytes)
            if in_memory:
                _PIECES[key] = kept
        if not in_memory:
            kept = []  # nothing to keep, in memory or on disk
    if not in_memory and kept and store.disk:  # the memory share filled up during this partition
        path = _new_file(store, index, n_rows)
        if path:
            with open(path, "wb") as out:
                for piece in kept:
                    pickle.dump(piece, out, protocol=pickle.HIGHEST_PROTOCOL)
    on_disk = False
    if path and not in_memory:
        with _LOCK:
            on_disk = store.id not in _CLOSED
            if on_disk:
                _FILES[key] = path
                _ON_DISK[store.id] = _ON_DISK.get(store.id, 0) + size
        if not on_disk:  # the fit ended meanwhile
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    kept_here = in_memory or on_disk or (holds is not None and holds(part, columns, batch_size))
    return StoredFold(state, {index: _here() if kept_here else None}, int(from_source))


def _fold_raw(task, reader, part, columns, batch_size, first_row, n_rows, index, progress, state) -> StoredFold:
    """Fold partition ``index`` for a task that keeps no rows of its own (a naive Bayes round's) from the
    raw batches ``reader`` keeps here (:class:`rainforest.storage.partition_cache.CachedReader`), else
    from the source, keeping them where it can."""
    holds = getattr(reader, "holds", None)
    from_source = holds is None or not holds(part, columns, batch_size)
    state = fold_partition_batches(task, reader(part, columns, batch_size), first_row, n_rows, progress, state)
    kept_here = holds is not None and holds(part, columns, batch_size)
    return StoredFold(state, {index: _here() if kept_here else None}, int(from_source))


def _count_file(task, state, path: str):
    """Count the pieces of a file and write them back routed (their nodes moved), through a new file."""
    with open(path, "rb") as src, open(path + ".next", "wb") as dst:
        while True:
            try:
                piece = pickle.load(src)
            except EOFError:
                break
            state = task.count_piece(state, piece)
            pickle.dump(piece, dst, protocol=pickle.HIGHEST_PROTOCOL)
    swap_in(path + ".next", path)
    return state


@contextlib.contextmanager
def _nowhere():
    yield None


def _folder(store_id: str) -> str:
    """This machine's folder of ``store_id``'s files: in the worker's local directory (Dask removes it
    with the worker), else the temporary directory."""
    worker = _worker()
    base = tempfile.gettempdir() if worker is None else worker.local_directory
    return os.path.join(base, f"rainforest-store-{store_id}")


def _new_file(store: PartitionStore, index: int, n_rows: int) -> str | None:
    """A file for partition ``index``'s pieces, or None when the disk is short of room for it (its rows
    at the store's bytes a row, twice: a read writes the routed pieces beside the old ones)."""
    folder = _folder(store.id)
    os.makedirs(folder, exist_ok=True)
    with _LOCK:
        _FOLDERS[store.id] = folder  # drop_store, run outside a task, cannot ask the worker where
    if shutil.disk_usage(folder).free < 2 * n_rows * store.row_bytes:
        return None
    return os.path.join(folder, f"part-{index}.pieces")


def fold_partitions(task, reader, parts: list, columns, batch_size) -> StoredFold:
    """Fold the partitions ``parts`` (``(part, first_row, n_rows, index)``, in index order) one after the
    other into one state: the task of a worker holding them all, whose one state crosses the network
    where one per partition would.  Only for tasks whose counts are integers (``order_free``), since
    the sums are merged in another order than the pairwise one; so every partition counts into the
    one state (a new AVC array per partition, zeroed and added, cost a worker about half of a
    level's time from kept rows)."""
    folded = None
    for part, first_row, n_rows, index in parts:
        one = fold_partition(task, reader, part, columns, batch_size, first_row, n_rows, index,
                             state=None if folded is None else folded.state)
        folded = one if folded is None else _joined(one.state, folded, one)
    return folded


def _joined(state, a: StoredFold, b: StoredFold) -> StoredFold:
    return StoredFold(state, {**a.homes, **b.homes}, a.source_reads + b.source_reads)


def merge_folds(task, a: StoredFold, b: StoredFold) -> StoredFold:
    """``a`` and ``b`` merged into a copy of ``a``'s state: the client holds the futures of these
    states until the pass ends (dask_store's passes are submitted, not one graph), so a merge run
    again after a lost worker must find its inputs as they were."""
    return _joined(task.merge(copy.deepcopy(a.state), b.state), a, b)


def drop_store(store_id: str) -> int:
    """Release this process's pieces of ``store_id``, in memory and on disk; returns the bytes freed."""
    return _HOLDINGS.drop(store_id)


def held() -> dict:
    """Bytes of pieces this process holds, per store id, in memory and (key ``"disk"``) in files: what
    a test asks the workers with ``client.run``."""
    return _HOLDINGS.held()
