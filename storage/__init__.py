"""Where rows live, and how one pass over them is made.

Every source yields Arrow record batches in a stable order and counts its
passes; see :class:`rainforest.storage.base.Source`.

The sources that read files, databases or a Dask cluster are imported on first use
(``from rainforest.storage import ParquetSource``): a fit on arrays in a fresh process
does not pay for loading them.
"""
from importlib import import_module

from .base import PassTask, Source, SourceError
from .memory import TableSource, as_table

_LAZY = {"MissingPathError": "parquet", "ParquetSource": "parquet", "DaskSource": "dask",
         "DuckDBSource": "duckdb_source", "PostgresSource": "postgres", "SqlSource": "sql"}

__all__ = ["Source", "PassTask", "SourceError", "MissingPathError", "ParquetSource", "DaskSource", "TableSource", "as_table",
           "DuckDBSource", "PostgresSource", "SqlSource"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'rainforest.storage' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value  # once: later reads find it without this hook
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
