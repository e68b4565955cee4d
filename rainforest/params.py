"""scikit-learn's estimator conventions (get_params / set_params / clone / repr, and the prediction
methods that follow from ``predict_proba``) without depending on it."""
from __future__ import annotations

import inspect

import numpy as np

from .inputs import accuracy


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


class ClassifierMixin:
    """``predict``, ``predict_log_proba`` and ``score`` from a class's ``predict_proba``, and the
    fitted attributes that describe the inputs, as scikit-learn names them."""

    def _set_fitted_inputs(self, classes, features, has_names: bool) -> None:
        self.classes_ = np.asarray(classes)
        self.n_classes_ = len(self.classes_)
        self.n_outputs_ = 1
        self.n_features_in_ = len(features)
        if has_names:
            self.feature_names_in_ = np.asarray(features, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # a refit on unnamed columns
            del self.feature_names_in_

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row (the first one on ties, as scikit-learn)."""
        proba = self.predict_proba(X)  # checks that the model is fitted before classes_ is read
        return self.classes_[np.argmax(proba, axis=1)]

    def predict_log_proba(self, X) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def score(self, X, y=None, *, target=None) -> float:
        """Accuracy on ``X``; with a path or Source, the labels come from ``target``."""
        return accuracy(self.predict, X, y, target)
