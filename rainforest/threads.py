"""How many threads the Numba kernels use during one call, and how idle ones wait.

Results never depend on the thread count (each thread owns whole attributes, nodes or trees), so
the count is chosen for speed alone:

* ``n_jobs`` threads (-1 or None: all cores), but **one** for inputs known to be small: waking a
  team of threads for each of a small fit's many short kernels costs more than the kernels
  (measured: a 1,000-row depth-3 fit took about 7 times as long on all cores of a busy 2-core
  machine as on one).
* Idle OpenMP threads **sleep** rather than spin (``OMP_WAIT_POLICY=PASSIVE``), so that between
  kernels they leave the cores to the Python thread that reads and encodes the next batch, and to
  other work on the machine. Set here, before Numba loads its OpenMP layer (on the first parallel
  kernel), and only where the user has not chosen a policy.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402  (after the wait policy is set)
import numpy as np  # noqa: E402

#: inputs with fewer rows than this run on one thread
SMALL_ROWS = 50_000


def thread_count(n_jobs, rows: int | None = None) -> int:
    """Threads for ``n_jobs`` (-1 or None: all cores; -2: all but one, ...) and ``rows`` input rows
    (None: unknown, so not small)."""
    cores = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None or n_jobs == -1:
        n = cores
    elif isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs != 0:
        n = max(1, min(cores, n_jobs if n_jobs > 0 else cores + 1 + n_jobs))
    else:
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}")
    return 1 if rows is not None and rows < SMALL_ROWS else n


@contextmanager
def numba_threads(n_jobs, rows: int | None = None):
    """Run with the Numba threads :func:`thread_count` gives; results do not depend on it."""
    n = thread_count(n_jobs, rows)
    old = numba.get_num_threads()
    if n != old:
        numba.set_num_threads(n)
    try:
        yield
    finally:
        if n != old:
            numba.set_num_threads(old)
