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
