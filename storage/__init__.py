"""Where rows live, and how one pass over them is made.

Every source yields Arrow record batches in a stable order and counts its
passes; see :class:`rainforest.storage.base.Source`.

The sources that read files, databases or a Dask cluster are imported on first use
(``from rainforest.storage import ParquetSource``): a fit on arrays in a fresh process
does not pay for loading them.
"""
from .base import PassTask, Source, SourceError
from .lazy import lazy_names
from .memory import TableSource, as_table

_LAZY = {"MissingPathError": "parquet", "ParquetSource": "parquet", "DaskSource": "dask",
         "DuckDBSource": "duckdb_source", "PostgresSource": "postgres", "SqlSource": "sql"}

__all__ = ["Source", "PassTask", "SourceError", "MissingPathError", "ParquetSource", "DaskSource", "TableSource", "as_table",
           "DuckDBSource", "PostgresSource", "SqlSource"]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
