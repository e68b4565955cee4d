"""Writing scratch files in a thread of their own, so that a pass goes on while the disk catches up.

The spill folder (:mod:`rainforest.spill`) is written while a pass decodes, encodes and counts the
data.  Past the kernel's dirty-page limit (20 % of memory by default) every ``write`` waits for the
disk: at 100M Agrawal rows the spill is 4.8 GB, and its writes took 12.7 s of a 62 s exact fit, the
pass standing still meanwhile.  A :class:`WriteBehind` takes the buffers and writes them, in the
order given, in its own thread (``write`` releases the GIL), holding at most ``limit`` bytes not yet
written: the pass waits only once it is that far ahead.  Buffers are made by the caller (Numba's
parallel kernels run in the pass's thread alone).  An error in the thread is raised in the caller
at its next :meth:`write` or :meth:`flush`.  :meth:`run` takes any writing action in the same order
(BOAT's node files hand over Parquet row groups, which pyarrow encodes and writes without the GIL).
"""
from __future__ import annotations

import collections
import threading

WRITE_AHEAD = 64 << 20  # bytes handed over and not yet written, at most (besides one larger piece)


def write_ahead(budget_bytes: int) -> int:
    """The bytes a pass may hand over and not yet see written, within ``budget_bytes``: a quarter of
    the batches' quarter (a 1 GB budget hands over 62 MB), at most :data:`WRITE_AHEAD`, at least 1 MB."""
    return max(1 << 20, min(WRITE_AHEAD, budget_bytes // 16))


class WriteBehind:
    """Runs writing actions (``(file, buffers)`` pieces, or callables) in order in a daemon thread,
    started at the first piece."""

    def __init__(self, limit: int = WRITE_AHEAD):
        self.limit = limit
        self._pieces: collections.deque = collections.deque()
        self._pending = 0  # bytes handed over, not yet written
        self._error: BaseException | None = None
        self._stopping = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def __getstate__(self) -> dict:
        """Only the limit: a copy (a pickled BOAT model holds its node files') starts with nothing
        pending and no thread; pieces not yet written stay the original's to write."""
        return {"limit": self.limit}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["limit"])

    def write(self, file, buffers: list) -> None:
        """Write ``buffers`` (objects with the buffer protocol, kept unchanged until written) to
        ``file`` after every piece before them; waits while more than ``limit`` bytes are pending."""

        def action():
            for b in buffers:
                file.write(b)
        self.run(action, sum(memoryview(b).nbytes for b in buffers), getattr(file, "name", "a file"))

    def run(self, action, size: int, name: str) -> None:
        """Call ``action()`` (which writes ``size`` bytes to the file ``name``, from data it holds and
        no one changes) in the thread, after every piece before it; waits while more than ``limit``
        bytes are pending.  An OSError it raises is raised again here, naming ``name``."""
        with self._changed:
            while self._pending and self._pending + size > self.limit and self._error is None:
                self._changed.wait()
            self._raise()
            self._pieces.append((action, name, size))
            self._pending += size
            self._changed.notify_all()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rainforest-write-behind", daemon=True)
            self._thread.start()

    def flush(self) -> None:
        """Wait until every piece is written and end the thread (the next piece starts another: no
        thread outlives the writing); raise the thread's error, if any."""
        with self._changed:
            while self._pending and self._error is None:
                self._changed.wait()
            self._raise()
        self.close()

    def close(self) -> None:
        """End the thread, dropping pieces not yet written (the caller removes their files): after an
        error or an interrupt.  A write under way ends first.  The thread's error, if any, is dropped
        too: a later piece starts afresh."""
        with self._changed:
            self._stopping = True
            self._pieces.clear()
            self._pending = 0
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._stopping = False
        self._error = None

    def _raise(self) -> None:
        if self._error is not None:  # every later call too: the thread has ended
            raise self._error

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._pieces and not self._stopping:
                    self._changed.wait()
                if self._stopping:
                    return
                action, name, size = self._pieces[0]
            try:
                action()
            except BaseException as exc:  # raised in the caller's thread, an OSError naming the file
                if isinstance(exc, OSError):
                    named = OSError(exc.errno, f"{exc.strerror or exc}: writing {name}")
                    named.__cause__, exc = exc, named
                with self._changed:
                    self._error = exc
                    self._pieces.clear()
                    self._pending = 0
                    self._changed.notify_all()
                return
            with self._changed:
                if self._pieces:  # close() may have dropped it meanwhile
                    self._pieces.popleft()
                self._pending = max(0, self._pending - size)
                self._changed.notify_all()
