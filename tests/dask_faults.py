"""A PassTask wrapper that stalls one Dask worker in the middle of a pass, so that a test can kill it.

It lives in its own module (not in test_dask.py) because the workers must import it to
unpickle the task: the test starts them with this folder on their PYTHONPATH.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass
class StallOnce:
    """``inner``, except that the first batch at or after row ``from_row`` stalls its worker.

    The worker that gets there first writes its pid to ``marker`` (created exclusively, so
    exactly one worker ever stalls) and sleeps until it is killed. Every other call, and the
    retry of the stalled partition on another worker, runs ``inner`` unchanged.
    """

    inner: object
    marker: str
    from_row: int

    def new_state(self):
        return self.inner.new_state()

    def _stall(self) -> None:
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(300)  # the test kills this process long before

    def update(self, state, batch, first_row):
        if first_row >= self.from_row:
            self._stall()
        return self.inner.update(state, batch, first_row)

    # a task counting partitions kept on the workers (storage/dask_store.py): the first kept
    # piece counted stalls its worker, whose partitions are then read again elsewhere
    @property
    def store(self):
        return getattr(self.inner, "store", None)

    def encode(self, batch, first_row):
        return self.inner.encode(batch, first_row)

    def count_piece(self, state, piece):
        self._stall()
        return self.inner.count_piece(state, piece)

    def hold(self, pieces):
        return self.inner.hold(pieces)

    def count_held(self, state, held):
        self._stall()
        return self.inner.count_held(state, held)

    def merge(self, a, b):
        return self.inner.merge(a, b)
