"""A fit's partitions kept where they were read, as the source's own Arrow batches.

Some fits read the same rows many times in raw form: each AdaBoost round computes its rows'
weights from the raw columns (the learners so far predict them) before its tree encodes them, so
the encoded rows one round's tree keeps on the workers (:mod:`rainforest.storage.dask_store`) cannot
serve the next.  While a fit asks for it (:meth:`rainforest.storage.DaskSource.keep_batches`),
the first read of a partition on a worker (or in this process) keeps its batches there: in the
process's memory up to the fit's per-worker budget, past it in an uncompressed Arrow IPC stream
on the worker's local disk (read back memory-mapped); a later read of the same partition and
columns there is served from them without reading the source.

Like the row store, this is a cache, never the only copy: a partition whose worker was lost, or
that found no room, is read from the source again (a counted pass) and gives the same batches.
:func:`drop` releases a fit's batches on every worker (``client.run``) when the fit ends, also on
an error.

Only this module's functions run on the workers; it imports nothing from the learners.
"""
from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass

import pyarrow as pa

from .holdings import Holdings

# this process's share: (fit id, partition, columns, batch size) -> the partition's batches in memory
# (``items``) or the Arrow IPC stream of them on this machine's disk (``files``); bytes per fit id
_KEPT = Holdings()


@dataclass(frozen=True)
class CachedReader:
    """``inner(part, columns, batch_size)``'s batches of partition ``index`` (``part = (index,
    inner_part)``), kept for the fit ``fit_id`` in the memory of the process reading them, up to
    ``budget_bytes`` there, and past it on that machine's disk (``disk``)."""

    inner: object
    fit_id: str
    budget_bytes: int
    disk: bool = True

    def _key(self, index: int, columns, batch_size: int) -> tuple:
        return self.fit_id, index, tuple(columns), batch_size

    def holds(self, part, columns, batch_size: int) -> bool:
        """Whether this process keeps the partition's batches (a read of it then reads no source)."""
        key = self._key(part[0], columns, batch_size)
        with _KEPT.lock:
            return key in _KEPT.items or key in _KEPT.files

    def __call__(self, part, columns, batch_size: int):
        index, inner_part = part
        key = self._key(index, columns, batch_size)
        with _KEPT.lock:
            batches, path = _KEPT.items.get(key), _KEPT.files.get(key)
            room = _KEPT.in_memory.get(self.fit_id, 0) < self.budget_bytes
        if batches is not None:
            yield from batches
            return
        if path is not None:  # mapped, not copied; the map lives as long as a batch of it does
            yield from pa.ipc.open_stream(pa.memory_map(path))
            return
        yield from self._read_and_keep(key, inner_part, columns, batch_size, room)

    def _read_and_keep(self, key, inner_part, columns, batch_size: int, room: bool):
        """The source's batches, each kept as it passes (in memory while ``room``, else on disk);
        registered once the partition was read whole (a read stopped early, by an error or an
        interrupt, keeps nothing)."""
        kept, size, writer, path, whole = [], 0, None, None, False
        try:
            for batch in self.inner(inner_part, columns, batch_size):
                if room:
                    kept.append(batch)
                elif self.disk and writer is not False:
                    writer, path = _written(writer, path, self.fit_id, key[1], batch)
                size += batch.nbytes
                yield batch
            whole = True
        finally:
            if writer:
                try:
                    writer.close()
                except OSError:  # the disk filled up at the last write: nothing kept on it
                    whole = False
            if path and not whole:
                os.remove(path)
                path = None
        with _KEPT.lock:
            in_memory = room and _KEPT.in_memory.get(self.fit_id, 0) + size <= self.budget_bytes
            if in_memory and self.fit_id not in _KEPT.closed and key not in _KEPT.items and key not in _KEPT.files:
                _KEPT.items[key] = kept
                _KEPT.in_memory[self.fit_id] = _KEPT.in_memory.get(self.fit_id, 0) + size
                return
        if kept and not in_memory and self.disk:  # the memory share filled up during this partition
            writer = None
            for batch in kept:
                writer, path = _written(writer, path, self.fit_id, key[1], batch)
            if writer:
                writer.close()
        if path:
            with _KEPT.lock:
                if self.fit_id not in _KEPT.closed and key not in _KEPT.items and key not in _KEPT.files:
                    _KEPT.files[key] = path
                    _KEPT.on_disk[self.fit_id] = _KEPT.on_disk.get(self.fit_id, 0) + os.path.getsize(path)
                    return
            os.remove(path)  # the fit ended meanwhile, or another read of the partition kept it first


def _written(writer, path: str | None, fit_id: str, index: int, batch: pa.RecordBatch) -> tuple:
    """``batch`` appended to partition ``index``'s file (opened at its first batch): ``(writer, path)``.
    A disk that fills up (or no file to be had) keeps nothing: the writer becomes False, the file is
    removed, and a later read of the partition reads the source (a pass, the same rows)."""
    try:
        if writer is None:
            path = _new_file(fit_id, index)
            writer = pa.ipc.new_stream(path, batch.schema) if path else False
        if writer:
            writer.write_batch(batch)
        return writer, path
    except OSError:
        if writer:
            try:
                writer.close()
            except OSError:
                pass
        if path and os.path.exists(path):
            os.remove(path)
        return False, None


def _new_file(fit_id: str, index: int) -> str | None:
    """A file for partition ``index``'s batches in the fit's folder: the worker's local directory
    (Dask removes it with the worker), else the temporary directory."""
    try:
        from distributed import get_worker

        base = get_worker().local_directory
    except (ImportError, ValueError):
        base = tempfile.gettempdir()
    folder = os.path.join(base, f"rainforest-batches-{fit_id}")
    os.makedirs(folder, exist_ok=True)
    with _KEPT.lock:
        if fit_id in _KEPT.closed:
            return None
        _KEPT.folders[fit_id] = folder
    return os.path.join(folder, f"part-{index}-{threading.get_ident()}.arrows")


def drop(fit_id: str) -> int:
    """Release this process's batches of ``fit_id``, in memory and on disk; returns the bytes freed."""
    return _KEPT.drop(fit_id)


def held() -> dict:
    """Bytes of batches this process holds, per fit id, in memory and (key ``"disk"``) in files: what a
    test asks the workers with ``client.run``."""
    return _KEPT.held()
