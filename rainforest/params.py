"""Estimator parameters: their constraints, declared once per estimator, checked in one place.

Each estimator lists ``_parameter_constraints``, a dict from parameter name to one constraint (or a
tuple of them: any may hold), as scikit-learn does. :meth:`ParamsMixin.validate_params` checks every
parameter against it at the start of ``fit``; the command line derives its option types from the
same constraints (``constraint.parse``), so a range is never written twice.

Also scikit-learn's parameter conventions (``get_params`` / ``set_params`` with nested
``estimator__name`` keys, ``clone`` and ``repr``) without depending on it.
"""
from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass

import numpy as np


def is_int(v) -> bool:
    """An integer, and not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_real(v) -> bool:
    return is_int(v) or isinstance(v, (float, np.floating))


# -- constraints: each says what it accepts, checks a value, and reads one from command-line text ----
@dataclass(frozen=True)
class Integer:
    """An integer in ``[low, high]`` (``high`` None: no upper bound)."""

    low: int
    high: int | None = None

    def accepts(self, v) -> bool:
        return is_int(v) and v >= self.low and (self.high is None or v <= self.high)

    def describe(self) -> str:
        return f"an integer >= {self.low}" if self.high is None else f"an integer from {self.low} to {self.high}"

    def parse(self, text: str):
        return int(text)


@dataclass(frozen=True)
class Real:
    """A real number above ``low`` (``low`` included when ``closed``), at most ``high`` when given."""

    low: float
    high: float | None = None
    closed: bool = True

    def accepts(self, v) -> bool:
        if not is_real(v) or v != v:  # NaN is no number here
            return False
        return (v >= self.low if self.closed else v > self.low) and (self.high is None or v <= self.high)

    def describe(self) -> str:
        lo = f"{'>=' if self.closed else '>'} {self.low}"
        return f"a number {lo}" if self.high is None else f"a number {lo} and <= {self.high}"

    def parse(self, text: str):
        return float(text)


@dataclass(frozen=True)
class Fraction:
    """A float in (0, 1]."""

    def accepts(self, v) -> bool:
        return isinstance(v, (float, np.floating)) and 0.0 < v <= 1.0

    def describe(self) -> str:
        return "a fraction in (0, 1]"

    def parse(self, text: str):
        return float(text)


@dataclass(frozen=True)
class Options:
    """One of the strings ``values``."""

    values: tuple

    def accepts(self, v) -> bool:
        return isinstance(v, str) and v in self.values

    def describe(self) -> str:
        return "one of " + ", ".join(map(repr, self.values))

    def parse(self, text: str):
        return text


@dataclass(frozen=True)
class NoneValue:
    """None; on the command line, the word ``cli_word`` when one is given (e.g. ``"all"``)."""

    cli_word: str | None = None

    def accepts(self, v) -> bool:
        return v is None

    def describe(self) -> str:
        return "None"

    def parse(self, text: str):
        if self.cli_word is not None and text == self.cli_word:
            return None
        raise ValueError(text)


@dataclass(frozen=True)
class Boolean:
    def accepts(self, v) -> bool:
        return isinstance(v, (bool, np.bool_))

    def describe(self) -> str:
        return "True or False"

    def parse(self, text: str):
        raise ValueError(text)


@dataclass(frozen=True)
class ByteSize:
    """A byte count, or text such as ``"512MB"`` (see :func:`rainforest.budget.parse_bytes`)."""

    def accepts(self, v) -> bool:
        from .budget import parse_bytes
        try:
            parse_bytes(v)
        except (ValueError, TypeError):
            return False
        return not isinstance(v, bool)

    def describe(self) -> str:
        return "a positive byte count or a size such as '512MB'"

    def parse(self, text: str):
        if not self.accepts(text):
            raise ValueError(text)
        return text


@dataclass(frozen=True)
class NJobs:
    """Numba threads: a non-zero integer (negative counts from the cores: -1 is all) or None."""

    def accepts(self, v) -> bool:
        return v is None or (is_int(v) and v != 0)

    def describe(self) -> str:
        return "a non-zero integer or None"

    def parse(self, text: str):
        return int(text)


@dataclass(frozen=True)
class Columns:
    """``"auto"`` or a list of column names (or positions, for arrays)."""

    def accepts(self, v) -> bool:
        return (isinstance(v, str) and v == "auto") or isinstance(v, (list, tuple, np.ndarray))

    def describe(self) -> str:
        return "'auto' or a list of columns"

    def parse(self, text: str):
        return text


@dataclass(frozen=True)
class ClassWeights:
    """``"balanced"`` or a dict from class to a finite weight >= 0 (its classes are checked against the
    target in ``fit``): a negative or non-finite weight would give negative or NaN probabilities."""

    def accepts(self, v) -> bool:
        if isinstance(v, dict):
            return all(isinstance(w, (int, float, np.integer, np.floating)) and not isinstance(w, bool)
                       and math.isfinite(w) and w >= 0 for w in v.values())
        return isinstance(v, str) and v == "balanced"

    def describe(self) -> str:
        return "'balanced' or a dict of finite weights >= 0"

    def parse(self, text: str):
        return text


@dataclass(frozen=True)
class Path:
    """A file or folder path (made or checked where it is used)."""

    def accepts(self, v) -> bool:
        return isinstance(v, (str, os.PathLike))

    def describe(self) -> str:
        return "a path"

    def parse(self, text: str):
        return text


@dataclass(frozen=True)
class Anything:
    """Any value (checked where it is used, e.g. a folder or a nested estimator)."""

    def accepts(self, v) -> bool:
        return True

    def describe(self) -> str:
        return "anything"

    def parse(self, text: str):
        return text


def as_tuple(rule) -> tuple:
    return rule if isinstance(rule, tuple) else (rule,)


def check_param(name: str, value, rule) -> None:
    """Raise ValueError naming ``name`` unless ``value`` meets one of ``rule``'s constraints."""
    rules = as_tuple(rule)
    if not any(r.accepts(value) for r in rules):
        raise ValueError(f"{name} must be {' or '.join(r.describe() for r in rules)}, got {value!r}")


def parse_option(rule, text: str):
    """A command-line value read by the first of ``rule``'s constraints that takes ``text``, and holds."""
    for r in as_tuple(rule):
        try:
            value = r.parse(text)
        except (ValueError, TypeError):
            continue
        if r.accepts(value):
            return value
    words = [repr(r.cli_word) if isinstance(r, NoneValue) else r.describe() for r in as_tuple(rule)
             if not (isinstance(r, NoneValue) and r.cli_word is None)]
    raise ValueError(f"expected {' or '.join(words)}, got {text!r}")


# -- parameters as scikit-learn has them ------------------------------------------------------
class ParamsMixin:
    """Parameters are exactly the keyword arguments of ``__init__``, stored unchanged."""

    #: name -> constraint (or a tuple of constraints, any of which may hold); every estimator declares its own
    _parameter_constraints: dict = {}

    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def get_params(self, deep: bool = True) -> dict:
        """The parameters; with ``deep``, also those of nested estimators as ``name__param``."""
        out = {}
        for k in self._get_param_names():
            v = getattr(self, k)
            out[k] = v
            if deep and hasattr(v, "get_params") and not isinstance(v, type):
                out.update((f"{k}__{kk}", vv) for kk, vv in v.get_params(deep=True).items())
        return out

    def set_params(self, **params):
        """Set parameters; ``estimator__max_depth=3`` sets the nested estimator's. Returns ``self``."""
        valid = self._get_param_names()
        nested: dict[str, dict] = {}
        for k, v in params.items():
            name, sep, sub = k.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; valid: {', '.join(valid)}")
            if sep:
                nested.setdefault(name, {})[sub] = v
            else:
                setattr(self, name, v)
        for name, sub in nested.items():
            inner = getattr(self, name)
            if not hasattr(inner, "set_params"):
                raise ValueError(f"{name} of {type(self).__name__} is {inner!r}, which has no parameters to set")
            inner.set_params(**sub)
        return self

    def validate_params(self) -> None:
        """Check every declared parameter against ``_parameter_constraints`` (ValueError naming it)."""
        for name, rule in self._parameter_constraints.items():
            check_param(name, getattr(self, name), rule)

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items() if defaults.get(k) is not v
                   and not _equal(defaults.get(k), v)]
        return f"{type(self).__name__}({', '.join(changed)})"


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False
