"""A pass's progress: a bar on stderr while ``verbose``, then one log line with its speed."""
from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("rainforest")


class PassMeter:
    """Counts a pass's rows: while ``verbose``, a progress bar on stderr (level, pass, rows done of
    ``total``); then one log line (``logging`` at INFO, and printed when ``verbose``) with rows/s."""

    WIDTH = 24

    def __init__(self, label: str, verbose: int, total: int = 0):
        self.label, self.verbose, self.total = label, verbose, total
        self.rows = 0
        self.start = self.shown = time.perf_counter()

    def bar(self) -> str:
        if self.total <= 0:
            return f"{self.label}: {self.rows:,} rows"
        done = min(1.0, self.rows / self.total)
        filled = int(round(done * self.WIDTH))
        return (f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done:4.0%} "
                f"{self.rows:,}/{self.total:,} rows")

    def __call__(self, n: int) -> None:
        self.rows += n
        now = time.perf_counter()
        if self.verbose and now - self.shown > 0.5:
            self.shown = now
            print(f"\r  {self.bar()}", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        seconds = time.perf_counter() - self.start
        rate = self.rows / seconds if seconds > 0 else float("inf")
        msg = f"{self.label}: {self.rows:,} rows in {seconds:.2f}s ({rate:,.0f} rows/s)"
        log.info(msg)
        if self.verbose:
            if self.shown > self.start:  # end the progress bar's line
                print(f"\r  {self.bar()}", file=sys.stderr, flush=True)
            print(msg, flush=True)
