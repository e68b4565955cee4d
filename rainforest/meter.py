"""A pass's progress: a bar on stderr while a person watches, then one log line with its speed.

The bar (tqdm: the pass and level, rows done of the total, rows/s, time left) is drawn when
``verbose >= 1`` and stderr is a terminal; nothing is drawn into a file or a pipe. The line
(``logging`` at INFO always) is also printed when ``verbose >= 2``, or when ``verbose >= 1`` and
no bar is drawn, so that ``-v`` into a log file still says what each pass did.
"""
from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("rainforest")


def shows_bar(verbose: int, stream=None) -> bool:
    """Whether a progress bar is drawn: ``verbose >= 1`` and the stream (stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return verbose >= 1 and callable(isatty) and isatty()


class PassMeter:
    """Counts a pass's rows (``total`` expected, 0: unknown): a progress bar while ``verbose`` and
    stderr is a terminal, then one log line with the rows per second."""

    def __init__(self, label: str, verbose: int, total: int = 0):
        self.label, self.verbose, self.total = label, verbose, total
        self.rows = 0
        self.start = time.perf_counter()
        self.bar = None
        if shows_bar(verbose):
            from tqdm import tqdm  # a well-kept bar: rate and time left, redrawn at most ~10 times a second
            self.bar = tqdm(total=total or None, desc=label, unit=" rows", unit_scale=True, leave=False,
                            file=sys.stderr, dynamic_ncols=True, mininterval=0.1)

    def __call__(self, n: int) -> None:
        self.rows += n
        if self.bar is not None:
            self.bar.update(n)

    def done(self) -> None:
        seconds = time.perf_counter() - self.start
        rate = self.rows / seconds if seconds > 0 else float("inf")
        msg = f"{self.label}: {self.rows:,} rows in {seconds:.2f}s ({rate:,.0f} rows/s)"
        log.info(msg)
        if self.bar is not None:
            self.bar.close()
        if self.verbose and (self.verbose >= 2 or self.bar is None):
            print(msg, flush=True)
