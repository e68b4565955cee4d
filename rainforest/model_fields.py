"""The fields of a model document, checked one by one: each failure names the file and the field.

The building blocks of :mod:`rainforest.model_check`: :class:`At` says where a value sits in a
document (``tree.nodes.first_child[3]`` of a file), the ``check_*`` functions and the array
readers refuse anything but the expected type, range and length with one ModelError.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .errors import ModelError

LABEL_TYPES = (str, int, float, bool)
#: the largest count (weight, alpha) a model may hold: sums of many stay far from overflow
MAX_COUNT = 1e250


# -- where a problem is -------------------------------------------------------------------
@dataclass(frozen=True)
class At:
    """A field of a document: ``At(path, what) / "tree" / "nodes"`` names ``tree.nodes`` of ``path``."""

    path: str
    what: str  # the estimator (or part) the document holds, for the message
    field: str = ""

    def __truediv__(self, key) -> "At":
        if isinstance(key, int):
            return replace(self, field=f"{self.field}[{key}]")
        return replace(self, field=f"{self.field}.{key}" if self.field else str(key))

    def fail(self, problem: str):
        where = f"{self.field}: " if self.field else ""
        raise ModelError(f"{self.path!r} holds a corrupt {self.what} model: {where}{problem}", self.path, self.field)

    def get(self, d, key: str, default=...):
        """``d[key]``, failing when ``d`` is no object or (without a default) has no such entry."""
        if not isinstance(d, dict):
            self.fail(f"expected an object, got {kind_of(d)}")
        if key not in d:
            if default is not ...:
                return default
            missing = (self / key).field
            raise ModelError(f"{self.path!r} holds a corrupt {self.what} model: the entry {missing!r} is missing",
                             self.path, missing)
        return d[key]


def kind_of(v) -> str:
    return "null" if v is None else type(v).__name__


# -- scalars ---------------------------------------------------------------------------------
def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_int(at: At, v, least=None, most=None) -> int:
    if not is_int(v):
        at.fail(f"expected an integer, got {kind_of(v)} {v!r}"[:200])
    if (least is not None and v < least) or (most is not None and v > most):
        at.fail(f"{v} is out of range [{least}, {'...' if most is None else most}]")
    return v


def is_finite_number(v) -> bool:
    """A JSON number that is finite as a float (an integer literal of 400 digits is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) < 1.7e308 if isinstance(v, int) else math.isfinite(v)


def check_number(at: At, v, least=None, positive=False, most=None) -> float:
    """A finite number (JSON reads NaN and Infinity too: both are refused), at most ``most``."""
    if not is_finite_number(v):
        at.fail(f"expected a finite number, got {kind_of(v)} {v!r}"[:200])
    if (least is not None and v < least) or (positive and v <= 0):
        at.fail(f"{v!r} must be {'> 0' if positive else f'>= {least}'}")
    if most is not None and v > most:
        at.fail(f"{v!r} is more than {most!r}")
    return float(v)


def check_str(at: At, v) -> str:
    if not isinstance(v, str):
        at.fail(f"expected a string, got {kind_of(v)} {v!r}"[:200])
    return v


def check_list(at: At, v, length=None, least=0) -> list:
    if not isinstance(v, list):
        at.fail(f"expected a list, got {kind_of(v)}")
    if length is not None and len(v) != length:
        at.fail(f"has {len(v)} entries, expected {length}")
    if len(v) < least:
        at.fail(f"has {len(v)} entries, expected at least {least}")
    return v


def is_label(v) -> bool:
    return type(v) in LABEL_TYPES


def check_labels(at: At, v, least=1) -> list:
    """Class labels or categories: plain JSON scalars of one type, distinct, finite."""
    check_list(at, v, least=least)
    types = {type(x) for x in v}
    if not types <= set(LABEL_TYPES) or len(types) > 1:
        at.fail(f"expected values of one type (string, integer, number or boolean), got "
                f"{', '.join(sorted(t.__name__ for t in types))}")
    if float in types and not all(math.isfinite(x) for x in v):
        at.fail("holds a non-finite number")
    if len(set(v)) != len(v):
        at.fail("holds a value twice")
    return v


def check_version(at: At, d, fmt: str, version: int, name: str) -> None:
    """``d`` is an object of format ``fmt`` and version ``version`` (``name`` for the message)."""
    if at.get(d, "format", None) != fmt:
        (at / "format").fail(f"no {name} model in it (format {d.get('format')!r})")
    if at.get(d, "version", None) != version or isinstance(d["version"], bool):
        (at / "version").fail(f"{name} format version {d.get('version')!r}; this build reads {version}")


# -- arrays ------------------------------------------------------------------------------------
def int_array(at: At, v, length=None, least=None, most=None) -> np.ndarray:
    check_list(at, v, length)
    bad = next((k for k, x in enumerate(v) if not is_int(x)), None)
    if bad is not None:
        (at / bad).fail(f"expected an integer, got {kind_of(v[bad])} {v[bad]!r}"[:200])
    lo = -2**63 if least is None else max(least, -2**63)
    hi = 2**63 - 1 if most is None else min(most, 2**63 - 1)
    if v and (min(v) < lo or max(v) > hi):  # Python's integers are unbounded; int64 is not
        k = next(k for k, x in enumerate(v) if not lo <= x <= hi)
        (at / k).fail(f"{v[k]} is out of range [{lo}, {hi}]")
    return np.array(v, dtype=np.int64)


def float_array(at: At, v, length=None, least=None, special=False, most=None) -> np.ndarray:
    """Finite numbers in [least, most]; with ``special``, also NaN and infinities (None and
    "inf" / "-inf" as ``Tree.to_dict`` writes them)."""
    check_list(at, v, length)
    if special:
        v = [math.nan if x is None else math.inf if x == "inf" else -math.inf if x == "-inf" else x for x in v]
    bad = next((k for k, x in enumerate(v) if not (is_finite_number(x) or special and isinstance(x, float))), None)
    if bad is not None:
        (at / bad).fail(f"expected a finite number, got {kind_of(v[bad])} {v[bad]!r}"[:200])
    a = np.array(v, dtype=np.float64)
    return _in_range(at, a, least, most)


def _in_range(at: At, a: np.ndarray, least, most) -> np.ndarray:
    bad = np.zeros(len(a), bool)
    if least is not None:
        bad |= a < least
    if most is not None:
        bad |= a > most
    if bad.any():
        k = int(np.argmax(bad))
        (at / k).fail(f"{a[k]} is out of range [{least}, {'...' if most is None else most}]")
    return a


def matrix(at: At, v, n_rows: int, n_cols: int, signed: bool = False) -> np.ndarray:
    """Counts (numbers in [0, MAX_COUNT]; ``signed``: any finite numbers, a regressor's means) of shape
    (n_rows, n_cols), as nested lists."""
    check_list(at, v, n_rows)
    for k, row in enumerate(v):
        check_list(at / k, row, n_cols)
    flat = float_array(at, [x for row in v for x in row], least=None if signed else 0,
                       most=None if signed else MAX_COUNT)
    return flat.reshape(n_rows, n_cols)
