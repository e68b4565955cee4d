"""Ordered read-ahead: pieces of a source decoded by worker threads, their batches yielded in order.

Decoding Parquet is most of a pass's cost. Decoding one row group on each thread spends less
CPU than decoding each batch's columns on a thread pool (``use_threads=True``, which
synchronises once per batch and column) and keeps the cores busy: on 2 cores, over 100M
Agrawal rows in 1M-row row groups, a pass that computes nothing took 2.09 s against 2.51 s
and a naive Bayes fit 2.67 s against 3.17 s (medians of 3, alternating). The row order, and
so every row's global index, is unchanged: batches are yielded piece by piece in order.

Memory stays bounded by batches, not by pieces: besides the batch being consumed, at most
``ahead + 1`` decoded batches wait, plus one being decoded by each worker. A worker is held
back while ``ahead`` batches wait, except the one on the piece being consumed when none of
that piece's batches waits (the consumer may be waiting on it), so the wait cannot deadlock.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Callable, Iterator, Sequence

import pyarrow as pa

Piece = Callable[[], Iterator[pa.RecordBatch]]


def ordered_batches(pieces: Sequence[Piece], threads: int, ahead: int) -> Iterator[pa.RecordBatch]:
    """Yield the batches of every piece in order, the pieces decoded by up to ``threads`` threads.

    Parameters
    ----------
    pieces : sequence of callables
        Each returns an iterator over one piece's batches (decoding as it goes); it is called
        and iterated in a worker thread.
    threads : int
        Worker threads (at least 1).
    ahead : int
        Decoded batches that may wait for the consumer (at least 1).

    An exception raised by a piece is raised here when the consumer reaches that piece, as a
    serial read would raise it. Closing the generator (or an exception in the consumer, such
    as KeyboardInterrupt) stops the workers and waits for them.
    """
    n = len(pieces)
    lock = threading.Condition()
    buffers = [deque() for _ in range(n)]
    done = [False] * n
    errors: list = [None] * n
    state = {"next": 0, "current": 0, "held": 0, "stop": False}

    def work():
        while True:
            with lock:
                i = state["next"]
                if state["stop"] or i >= n:
                    return
                state["next"] = i + 1
            batches = None
            try:
                batches = iter(pieces[i]())
                while True:
                    with lock:
                        # held back while enough is decoded, unless the consumer is waiting on it
                        while not state["stop"] and state["held"] >= ahead and not (
                                i == state["current"] and not buffers[i]):
                            lock.wait()
                        if state["stop"]:
                            return
                    batch = next(batches, None)
                    if batch is None:
                        break
                    with lock:
                        buffers[i].append(batch)
                        state["held"] += 1
                        lock.notify_all()
            except BaseException as exc:  # handed to the consumer, raised in its thread
                errors[i] = exc
            finally:
                close = getattr(batches, "close", None)
                if close is not None:
                    close()
                with lock:
                    done[i] = True
                    lock.notify_all()

    workers = [threading.Thread(target=work, name=f"rainforest-read-{k}", daemon=True)
               for k in range(max(1, min(threads, n)))]
    for w in workers:
        w.start()
    try:
        for i in range(n):
            while True:
                with lock:
                    while not buffers[i] and not done[i]:
                        lock.wait()
                    if buffers[i]:
                        batch = buffers[i].popleft()
                        state["held"] -= 1
                        lock.notify_all()
                    elif errors[i] is not None:
                        raise errors[i]
                    else:
                        state["current"] = i + 1
                        lock.notify_all()
                        break
                yield batch
    finally:
        with lock:
            state["stop"] = True
            lock.notify_all()
        for w in workers:
            w.join()
