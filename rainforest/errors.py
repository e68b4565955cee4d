"""Exceptions of the engine; each message names the file, column or value at fault."""
from rainforest.storage.base import SourceError


class DataError(SourceError):
    """The data cannot be trained on as given (bad target, bad column, bad value)."""


class BudgetError(ValueError):
    """The memory budget is too small for the smallest unit of work."""


class NotFittedError(ValueError, AttributeError):
    """The estimator is used before ``fit``."""
