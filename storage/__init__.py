"""Where rows live, and how one pass over them is made.

Every source yields Arrow record batches in a stable order and counts its
passes; see :class:`rainforest.storage.base.Source`.
"""
from .base import PassTask, Source, SourceError
from .dask import DaskSource
from .memory import TableSource, as_table
from .parquet import MissingPathError, ParquetSource
from .duckdb_source import DuckDBSource
from .postgres import PostgresSource
from .sql import SqlSource

__all__ = ["Source", "PassTask", "SourceError", "MissingPathError", "ParquetSource", "DaskSource", "TableSource", "as_table",
           "DuckDBSource", "PostgresSource", "SqlSource"]
