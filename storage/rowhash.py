"""A pseudo-random 63-bit value per row, from the row's stable identity and a seed.

Everything that picks rows at random without materializing a sample (the binning sample
of the profiling pass, bootstrap weights, cross-validation folds, BOAT's sample) hashes a
row's stable identity, so every pass, batch size, backend and machine sees the same
choice.  The hash is built from 32-bit multiply-xorshift rounds whose every intermediate
value stays below 2**63, so a SQL engine computes it exactly in signed 64-bit integers:
:func:`row_hash_sql` is the same function as SQL text, and pushed-down passes over
DuckDB or PostgreSQL choose the very rows the Parquet source chooses.  It lives in the
storage layer, the lowest, because row selections (:mod:`rainforest.storage.selection`)
use it as much as the learners do.
"""
from __future__ import annotations

import numba
import numpy as np

M32 = 0xFFFFFFFF
HASH_SPAN = 1 << 63  # row_hash values lie in [0, 2**63)
# Odd multipliers below 2**31 (a product with a 32-bit value fits a signed 64-bit integer),
# from the "lowbias32" family of 32-bit integer hashes.
_C1 = 0x21F0AAAD
_C2 = 0x735A2D97
_SEED_MIX = 0x9E3779B9  # so that no seed leaves row 0 at hash 0
_SEED_MIX2 = 0x85EBCA6B


@numba.njit(cache=True, nogil=True, inline="always")
def _mix32(x):
    x = x ^ (x >> 16)
    x = (x * _C1) & M32
    x = x ^ (x >> 15)
    x = (x * _C2) & M32
    return x ^ (x >> 15)


def seed_keys(seed: int) -> tuple[int, int]:
    """The two 32-bit keys :func:`hash_row` takes for ``seed`` (those of ``row_hash(rows, seed)``).

    The second keys a second round, so that two seeds never give the same hashes on rows
    renumbered by a fixed xor (as one xored key alone would)."""
    s1 = (int(seed) ^ _SEED_MIX) & M32
    # the kernel's own Python code on one int64: no cached kernel to load for one number
    return s1, int(_mix32.py_func(np.int64(s1 ^ _SEED_MIX2)))


def row_hash(rows: np.ndarray, seed: int) -> np.ndarray:
    """The hash of each row identity in ``rows`` (non-negative integers below 2**62), as uint64
    values below 2**63; ``seed`` (its low 32 bits) picks one of many independent hashes."""
    r = np.asarray(rows).astype(np.int64)
    s1, s2 = seed_keys(seed)
    out = np.empty(r.shape, np.uint64)
    _row_hashes(r.reshape(-1), s1, s2, out.reshape(-1))
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def hash_row(r, s1, s2):
    """:func:`row_hash` of the row identity ``r`` under the keys ``(s1, s2)`` of :func:`seed_keys`, inside
    a Numba kernel (every intermediate stays below 2**63, so int64 is exact)."""
    a = _mix32(_mix32((r & M32) ^ s1) ^ s2)
    b = _mix32((r >> 32) ^ a)
    return ((b & 0x7FFFFFFF) << 32) | a


@numba.njit(cache=True, nogil=True)
def _row_hashes(r, s1, s2, out):
    """:func:`row_hash`, one row at a time: no temporary arrays."""
    for i in range(r.shape[0]):
        out[i] = np.uint64(hash_row(r[i], s1, s2))


def _mix32_sql(x: str, xor) -> str:
    x = xor(x, f"({x} >> 16)")
    x = f"(({x} * {_C1}) & {M32})"
    x = xor(x, f"({x} >> 15)")
    x = f"(({x} * {_C2}) & {M32})"
    return xor(x, f"({x} >> 15)")


def row_hash_sql(row: str, seed: int, xor, names: tuple[str, str]) -> list[tuple[str, str]]:
    """:func:`row_hash` as SQL text, in steps that keep the text linear in size: a list of
    ``(name, expression)``, each to be computed in a derived table over the previous ones (the
    first over the bigint expression ``row``); the last one is the hash.  ``names`` are the two
    intermediate columns' names; ``xor(x, y)`` writes the dialect's bitwise exclusive or."""
    s1, s2 = seed_keys(seed)
    a1, a2 = names
    b = _mix32_sql(xor(f"({row} >> 32)", a2), xor)
    return [(a1, _mix32_sql(xor(f"({row} & {M32})", str(s1)), xor)),
            (a2, _mix32_sql(xor(a1, str(s2)), xor)),
            ("hash", f"((({b} & 2147483647) << 32) | {a2})")]
