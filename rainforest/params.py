"""scikit-learn's estimator conventions (get_params / set_params / clone / repr) without depending on it."""
from __future__ import annotations

import inspect


class ParamsMixin:
    """Parameters are exactly the keyword arguments of ``__init__``, stored unchanged."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind == p.KEYWORD_ONLY
                or p.kind == p.POSITIONAL_OR_KEYWORD and p.name != "self"]

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params):
        valid = self._param_names()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}; valid: {', '.join(valid)}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if defaults.get(k) is not v
                   and not _equal(defaults.get(k), v)]
        return f"{type(self).__name__}({', '.join(changed)})"


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False
