"""Compiling the split search in a second process while the first compiles the rest.

Numba compiles each kernel on its first use, one at a time (its compiler holds a lock), and
caches the result on disk.  On a fresh install the first fit spends most of its time there; the
split search alone is about a third of it.  :func:`start` runs :func:`compile_search` in a child
process, which writes the search's kernels to Numba's cache while the parent generates data and
compiles the counting and routing kernels; the parent's search then loads them from the cache.
The child compiles the very specializations a fit uses: every argument of the search has the
same type whatever the data (the AVC-groups are float64, the layouts int64, the kinds int8), and
the numeric-only one (``max_exhaustive`` None) or the one with categorical code.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np


def compile_search(categorical: bool) -> None:
    """Compile (or load from the cache) the split search's kernels, as a fit over numeric attributes
    only (``categorical`` False) or with categorical ones calls them."""
    from .criteria import best_splits

    kinds = np.array([0, 1] if categorical else [0], np.int8)
    offsets = np.array([[0, 3, 6] if categorical else [0, 3]], np.int64)
    block = np.ones((int(offsets[0, -1]), 2))
    best_splits(block, np.array([0, len(block)], np.int64), offsets, kinds, 2, False, 0, False, 1.0, 0.0, 12, 3, 0)


def start(categorical: bool) -> subprocess.Popen | None:
    """:func:`compile_search` in a child process (None where one cannot be started); the caller
    waits for it or stops it (:func:`stop`)."""
    try:
        return subprocess.Popen([sys.executable, "-m", "rainforest.warm_up", "1" if categorical else "0"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def stop(child: subprocess.Popen | None) -> None:
    """Stop the child (if it is still compiling, the cache keeps what it finished) and reap it."""
    if child is None:
        return
    if child.poll() is None:
        child.terminate()
    child.wait()


if __name__ == "__main__":
    compile_search(sys.argv[1:] == ["1"])
