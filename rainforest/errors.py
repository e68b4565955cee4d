"""Exceptions of the engine; each message names the file, column or value at fault."""
from rainforest.storage.base import SourceError


class DataError(SourceError):
    """The data cannot be trained on as given (bad target, bad column, bad value)."""


class MissingDependency(ImportError):
    """An optional package or program a requested output needs is not installed; the message names
    what to install."""


class BudgetError(ValueError):
    """The memory budget is too small for the smallest unit of work."""


class NotFittedError(ValueError, AttributeError):
    """The estimator is used before ``fit``."""


class ModelError(ValueError):
    """A model file (or document) that is not a valid rainforest model: the message names the
    file and the field at fault. A ValueError, so code catching those keeps working.

    Attributes
    ----------
    path : str
        The file (``"<document>"`` or ``"<tree>"`` when not read from a file).
    field : str
        The field at fault, as a dotted path such as ``tree.nodes.first_child[3]`` ("" for the whole).
    """

    def __init__(self, message: str, path: str = "<document>", field: str = ""):
        super().__init__(message)
        self.path = path
        self.field = field
