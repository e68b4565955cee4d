"""Talking to a Dask scheduler: connecting in bounded time, waiting for workers, and a pass that
waits while its cluster has any worker (a lost one is survived; losing them all is an error)."""
from __future__ import annotations

import threading
import time

from .base import SourceError

#: Seconds to wait for a scheduler to answer before giving up.
CONNECT_TIMEOUT = 10.0
#: Seconds a pass waits for the scheduler to have at least one worker before giving up.
WORKER_TIMEOUT = 60.0


def connect(address: str, timeout: float = CONNECT_TIMEOUT):
    """A ``distributed.Client`` of the scheduler at ``address``; a SourceError naming it if unreachable.

    The address is probed first (one connection and handshake, bounded by ``timeout``), so
    that a failed attempt leaves no half-started client behind.
    """
    if not isinstance(address, str) or not address:
        raise SourceError(f"a Dask scheduler address must be a string such as 'tcp://host:8786', got {address!r}")
    try:
        probe(address, timeout)
        from distributed import Client

        return Client(address, timeout=timeout, set_as_default=False)
    except Exception as exc:  # refused, timed out, not a scheduler (any garbage in the handshake)
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise SourceError(f"cannot connect to the Dask scheduler at {address!r} within {timeout:g} s "
                          f"(is 'dask scheduler' running there?): {reason}") from None


def probe(address: str, timeout: float) -> None:
    """Open and close one comm to ``address``, in a thread of its own (the caller may run an event loop)."""
    import asyncio

    from distributed.comm import connect as open_comm

    async def probe():
        comm = await open_comm(address, timeout=timeout)
        await comm.close()

    failure: list = []

    def run():
        try:
            asyncio.run(asyncio.wait_for(probe(), timeout + 1))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="rainforest-dask-probe", daemon=True)
    thread.start()
    thread.join(timeout + 2)
    if thread.is_alive():
        raise TimeoutError(f"no answer after {timeout:g} s")
    if failure:
        raise failure[0]


def wait_for_workers(client, timeout: float) -> None:
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError) as exc:
        raise SourceError(f"the Dask scheduler at {client.scheduler.address!r} has no worker "
                          f"(waited {timeout:g} s): {exc}") from None


def wait_while_workers(client, futures, timeout: float) -> None:
    """Wait for ``futures``; a SourceError if the cluster has had no worker for ``timeout`` seconds.

    Losing some workers is survived (their partitions are recomputed elsewhere); losing all of
    them would otherwise wait forever for one to join.
    """
    pending = len(futures)
    lock, done = threading.Lock(), threading.Event()

    def one_done(_future):  # called on the client's event loop thread
        nonlocal pending
        with lock:
            pending -= 1
            if pending == 0:
                done.set()

    for f in futures:
        f.add_done_callback(one_done)
    alone_since = None
    while not done.wait(1.0):
        if client.scheduler_info(n_workers=-1)["workers"]:
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > timeout:
            raise SourceError(f"the Dask cluster of the scheduler at {client.scheduler.address!r} lost all its "
                              f"workers during a pass and none joined within {timeout:g} s (see the workers' "
                              f"logs; a worker that cannot import rainforest dies on its first task)")
