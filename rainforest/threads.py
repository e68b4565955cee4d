"""How many threads the Numba kernels use during one call, and how idle ones wait.

Results never depend on the thread count (each thread owns whole attributes, nodes or trees), so
the count is chosen for speed alone:

* ``n_jobs`` threads (-1 or None: all cores), but **one** for inputs known to be small: waking a
  team of threads for each of a small fit's many short kernels costs more than the kernels
  (measured: a 1,000-row depth-3 fit took about 7 times as long on all cores of a busy 2-core
  machine as on one).
* Numba's BLAS probe is answered without importing SciPy's linear algebra (:func:`skip_blas_probe`).
* Idle OpenMP threads **sleep** rather than spin (``OMP_WAIT_POLICY=PASSIVE``), so that between
  kernels they leave the cores to the Python thread that reads and encodes the next batch, and to
  other work on the machine. Set here, before Numba loads its OpenMP layer (on the first parallel
  kernel), and only where the user has not chosen a policy.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402  (after the wait policy is set)
import numpy as np  # noqa: E402


def skip_blas_probe() -> None:
    """Load ``numba.np.arraymath`` with its BLAS probe answered by whether SciPy is installed.

    On import, that module (loaded by the first kernel a process compiles or loads from the
    cache) asks whether BLAS is there by importing ``scipy.linalg``: about 0.17 s of a fresh
    process's 0.8 s import and first small fit, for a library none of our kernels calls. The
    answer is the same (SciPy installed or not); a kernel that did use ``np.dot`` would still
    import SciPy's BLAS when Numba compiles it, through the probe restored here."""
    if "numba.np.arraymath" in sys.modules:
        return
    import numba.np.linalg as linalg

    probe = linalg.ensure_blas

    def scipy_installed() -> None:
        if importlib.util.find_spec("scipy") is None:
            raise ImportError("scipy is required for linear algebra")

    linalg.ensure_blas = scipy_installed
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        linalg.ensure_blas = probe


skip_blas_probe()

#: inputs with fewer rows than this run on one thread
SMALL_ROWS = 50_000
#: ranges per thread in :func:`run_ranges` (more even out uneven work; fewer cost less to hand out)
RANGES_PER_THREAD = 4
_pool: ThreadPoolExecutor | None = None


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


def run_ranges(n: int, work) -> None:
    """Call ``work(lo, hi)`` on ranges covering ``0 .. n - 1``, on as many threads as Numba's thread
    count (:func:`numba_threads`), the calling thread one of them; ranges are handed out in order
    as threads come free.

    For serial ``nogil`` kernels whose ranges write disjoint outputs, so the result does not depend
    on the thread count: the parallelism of a ``parallel=True`` kernel without its compile time."""
    threads = min(numba.get_num_threads(), n)
    if threads <= 1:
        if n > 0:
            work(0, n)
        return
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                   thread_name_prefix="rainforest")
    cuts = np.linspace(0, n, min(n, threads * RANGES_PER_THREAD) + 1).astype(np.int64)
    ranges = iter(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    lock = threading.Lock()

    def drain() -> None:
        while True:
            with lock:
                r = next(ranges, None)
            if r is None:
                return
            work(*r)

    helpers = [_pool.submit(drain) for _ in range(threads - 1)]
    try:
        drain()
    finally:
        for f in helpers:
            f.result()
