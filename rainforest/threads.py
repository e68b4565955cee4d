"""How many threads the Numba kernels use during one call."""
from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np


@contextmanager
def numba_threads(n_jobs):
    """Run with ``n_jobs`` Numba threads (-1 or None: all cores); results do not depend on it."""
    cores = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None or n_jobs == -1:
        n = cores
    elif isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs != 0:
        n = max(1, min(cores, n_jobs if n_jobs > 0 else cores + 1 + n_jobs))
    else:
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}")
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)
