"""Encoded partitions kept where they were read: each Dask worker's share of a fit's row store.

A pass task that can keep rows (it has a ``store``, a :class:`PartitionStore`, and the methods
``encode(batch, first_row)`` and ``count_piece(state, piece)``) is folded per partition by
:func:`fold_stored`: the first time a partition is needed on a worker, it is read from the source,
each batch encoded once (a *piece*: what the task counts, e.g. slots, class codes, weights and
the tree node each row has reached) and counted, and the pieces are kept in that worker
process's memory while they fit the store's per-worker budget. Later passes of the same fit are
submitted to the worker holding the partition (``workers=[home]``, ``allow_other_workers=True``)
and count its pieces without reading the source; the task mutates the pieces it routes (their
nodes), so the next pass starts where this one's routing ended.

The store is a cache, never the only copy: a partition whose worker died, or that did not fit
the budget, is read and encoded again from the source wherever the scheduler puts its task, and
gives the same counts, so the result (merged by partition index, as every pass) is the same.
:func:`drop_store` releases a fit's pieces on every worker (``client.run``) when growth ends,
also on error.

Only this module's functions run on the workers; it imports nothing from the learners.
"""
from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

from .base import SourceError

#: (store id, partition index) -> the partition's pieces, in row order; this process's share.
_PIECES: dict = {}
#: store id -> bytes of pieces this process holds for it.
_HELD: dict = {}
#: store ids of fits that have ended: a late task of one keeps nothing.
_CLOSED: set = set()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class PartitionStore:
    """One fit's row store on a cluster: its id and the bytes each worker may hold of it."""

    budget_bytes: int
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class StoredFold:
    """A (merged) partial state, where each partition's pieces live (None: not kept), and how many
    partitions were read from the source."""

    state: object
    homes: dict
    source_reads: int


def _here() -> str | None:
    """The address of the worker running this task, or None in a process that is not a worker."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


def fold_partition(task, reader, part, columns, batch_size, first_row, n_rows, index, progress=None) -> StoredFold:
    """Fold partition ``index``: from the pieces this process keeps of it, else from the source
    (encoding each batch once, keeping the pieces while the budget allows)."""
    store = task.store
    key = (store.id, index)
    with _LOCK:
        pieces = _PIECES.get(key)
        room = _HELD.get(store.id, 0) < store.budget_bytes
    state = task.new_state()
    if pieces is not None:
        for piece in pieces:
            state = task.count_piece(state, piece)
        if progress is not None:
            progress(n_rows)
        return StoredFold(state, {index: _here()}, 0)
    kept, row = [], first_row
    for batch in reader(part, columns, batch_size):
        if batch.num_rows == 0:
            continue
        piece = task.encode(batch, row)
        state = task.count_piece(state, piece)
        if room:
            kept.append(piece)
        row += batch.num_rows
        if progress is not None:
            progress(batch.num_rows)
    if row - first_row != n_rows:
        raise SourceError(f"a partition starting at row {first_row} has {row - first_row} rows, but "
                          f"{n_rows} were counted before the pass: the data changed under the source")
    size = sum(p.nbytes for p in kept)
    with _LOCK:
        room = room and store.id not in _CLOSED and _HELD.get(store.id, 0) + size <= store.budget_bytes
        if room:
            _PIECES[key] = kept
            _HELD[store.id] = _HELD.get(store.id, 0) + size
    return StoredFold(state, {index: _here() if room else None}, 1)


def fold_partitions(task, reader, parts: list, columns, batch_size) -> StoredFold:
    """Fold the partitions ``parts`` (``(part, first_row, n_rows, index)``, in index order) one after the
    other into one state: the task of a worker holding them all, whose one state crosses the network
    where one per partition would.  Only for tasks whose counts are integers (``order_free``), since
    the sums are merged in another order than the pairwise one."""
    folded = None
    for part, first_row, n_rows, index in parts:
        one = fold_partition(task, reader, part, columns, batch_size, first_row, n_rows, index)
        folded = one if folded is None else merge_folds(task, folded, one)
    return folded


def merge_folds(task, a: StoredFold, b: StoredFold) -> StoredFold:
    return StoredFold(task.merge(a.state, b.state), {**a.homes, **b.homes}, a.source_reads + b.source_reads)


def drop_store(store_id: str) -> int:
    """Release this process's pieces of ``store_id``; returns the bytes freed."""
    with _LOCK:
        _CLOSED.add(store_id)
        for key in [k for k in _PIECES if k[0] == store_id]:
            del _PIECES[key]
        return _HELD.pop(store_id, 0)


def held() -> dict:
    """Bytes of pieces this process holds, per store id (what a test asks the workers with ``client.run``)."""
    with _LOCK:
        return {k: v for k, v in _HELD.items() if v}
