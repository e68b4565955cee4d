"""Modules imported on first use, so that ``import rainforest`` stays quick.

``pyarrow.dataset`` imports pandas (about half a second); a fit on in-memory arrays never needs
either.  ``ds = lazy_module("pyarrow.dataset")`` reads like the import it replaces.
"""
from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for the module ``name``; the first attribute read imports it."""

    def __init__(self, name: str):
        self.__name = name

    def __getattr__(self, attr: str):
        module: ModuleType = importlib.import_module(self.__name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self.__name!r}, imported on first use>"


def lazy_module(name: str) -> LazyModule:
    """A stand-in for ``import name`` that imports ``name`` when an attribute is first read."""
    return LazyModule(name)


def lazy_names(package: str, names: dict, namespace: dict, public: list) -> tuple:
    """A package's module ``__getattr__`` and ``__dir__`` (PEP 562) for ``names`` (name -> the submodule
    defining it), each imported on first use and then kept in the package's ``namespace``."""
    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        namespace[name] = value  # once: later reads find it without this hook
        return value

    def __dir__():
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
