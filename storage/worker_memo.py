"""Arrays a fit computes where a partition is read and may reuse at a later pass of the same fit.

A pass folded on Dask workers (or this process's threads) runs its task's code there; what that code
works out for a batch (say, which rows a boosting round's learner gets wrong) can be kept in that
process for the next pass of the same fit, keyed by the fit's id and the caller's key (its batch's
first row).  Like the row store (:mod:`rainforest.storage.dask_store`), this is a cache, never the
only copy: a value not found (a new worker, one past the room) is computed again, and gives the same
result.  :func:`drop` releases a fit's values (``client.run`` on every worker) when the fit ends,
also on an error.

Only this module's functions run on the workers; it imports nothing from the learners.
"""
from __future__ import annotations

import threading

import numpy as np

_VALUES: dict = {}  # (fit id, key) -> array
_BYTES: dict = {}  # fit id -> bytes held here
_CLOSED: set = set()  # fits that have ended: a late task of one keeps nothing
_LOCK = threading.Lock()


def remembered(fit_id: str, key, compute, room_bytes: int) -> np.ndarray:
    """The array kept here for ``(fit_id, key)``, else ``compute()``'s, kept while the fit's values in
    this process stay within ``room_bytes``."""
    with _LOCK:
        value = _VALUES.get((fit_id, key))
    if value is not None:
        return value
    value = compute()
    with _LOCK:
        if fit_id not in _CLOSED and _BYTES.get(fit_id, 0) + value.nbytes <= room_bytes:
            _VALUES[(fit_id, key)] = value
            _BYTES[fit_id] = _BYTES.get(fit_id, 0) + value.nbytes
    return value


def drop(fit_id: str) -> int:
    """Release this process's values of ``fit_id``; returns the bytes freed."""
    with _LOCK:
        _CLOSED.add(fit_id)
        for key in [k for k in _VALUES if k[0] == fit_id]:
            del _VALUES[key]
        return _BYTES.pop(fit_id, 0)


def held() -> dict:
    """Bytes of values this process holds, per fit id: what a test asks the workers with ``client.run``."""
    with _LOCK:
        return {k: v for k, v in _BYTES.items() if v}
