"""Rows that DuckDB reads in this process: a relation, SQL text, a table or view, or Parquet files.

See :mod:`rainforest.storage.sql` for row identity and how rows cross (``transfer=``).
"""
from __future__ import annotations

import os
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .base import Source, SourceError
from .parquet import expand_paths, first_line
from .sql import ROW_ID, SOURCE_VIEW, SqlSource, qualified, query_snippet, quote_ident, quote_text


def _duckdb_error(exc: Exception, what: str) -> SourceError:
    return SourceError(f"DuckDB cannot read {what}: {first_line(exc)}")


class DuckDBSource(SqlSource):
    """Rows that DuckDB reads: a relation, SQL text, a table or view, or Parquet files.

    Give exactly one of ``relation``, ``query``, ``table`` or ``parquet``.

    Parameters
    ----------
    relation : duckdb.DuckDBPyRelation, optional
        A relation of any connection (``con.sql("...")``, ``duckdb.read_parquet(...)``).
    query : str, optional
        SQL text whose result is the data (``"SELECT * FROM t WHERE year >= 2020"``).
    table : str or tuple of str, optional
        A table or view name (``"t"`` or ``("schema", "t")``), quoted as given.
    parquet : str, path-like or list, optional
        Parquet files read by DuckDB: a file, a folder, a glob or a list, as for
        :class:`rainforest.storage.ParquetSource` (files in natural order; hive partitions as columns).
    database : str or path-like, optional
        A DuckDB database file, opened read-only (for ``query`` and ``table``); in memory if
        not given.
    connection : duckdb.DuckDBPyConnection, optional
        An open connection to use instead of ``database``.
    row_id : str, optional
        An integer column that identifies rows (see the module notes).
    hive_partitioning : bool, default=True
        With ``parquet``: folder names ``key=value`` become columns.
    transfer : {"auto", "rows", "aggregates"}, default="auto"
        How a pass's data cross: ``"rows"`` streams the rows out as Arrow batches (2 queries a
        tree); ``"aggregates"`` pushes each pass down as one aggregate query (one a level). ``"auto"``
        is ``"rows"`` for DuckDB. See :mod:`rainforest.storage.sql`.
    """

    dialect = "duckdb"

    def __init__(self, relation=None, *, query=None, table=None, parquet=None, database=None, connection=None,
                 row_id=None, hive_partitioning=True, transfer="auto"):
        import duckdb

        Source.__init__(self)
        self._set_transfer(transfer)
        given = [n for n, v in (("relation", relation), ("query", query), ("table", table), ("parquet", parquet))
                 if v is not None]
        if len(given) != 1:
            raise SourceError("give DuckDBSource exactly one of relation, query=, table= or parquet=, "
                              f"not {', '.join(given) or 'none'}")
        self.relation_, self.query, self.table, self.parquet = relation, query, table, parquet
        self.database, self.connection, self.row_id, self.hive_partitioning = database, connection, row_id, \
            hive_partitioning
        self._schema = self._files = self._file_rows = None
        self._con = None
        if relation is not None:
            if not isinstance(relation, duckdb.DuckDBPyRelation):
                raise SourceError(f"relation must be a duckdb.DuckDBPyRelation, got {type(relation).__name__}")
        elif connection is not None:
            self._con = connection
        elif database is not None:
            path = os.fspath(database)
            if not os.path.exists(path):
                raise SourceError(f"no such DuckDB database file: {path!r}")
            try:
                self._con = duckdb.connect(path, read_only=True)
            except duckdb.Error as exc:
                raise SourceError(f"cannot open DuckDB database {path!r}: {first_line(exc)}") from None
        else:
            self._con = duckdb.connect()
        if parquet is not None:
            self._files = expand_paths(parquet)
            try:
                self._file_rows = [pq.read_metadata(f).num_rows for f in self._files]
            except Exception as exc:
                raise SourceError(f"cannot read Parquet file list {parquet!r}: {first_line(exc)}") from None
        self._schema = self._read_schema()
        if row_id is not None:
            self.check_columns([row_id])

    def __repr__(self) -> str:
        return f"DuckDBSource({self.description})"

    @property
    def description(self) -> str:
        if self.relation_ is not None:
            return "a DuckDB relation"
        if self.query is not None:
            return f"the DuckDB query {query_snippet(self.query)}"
        if self.table is not None:
            where = f" of {os.fspath(self.database)!r}" if self.database is not None else ""
            return f"the DuckDB table {qualified(self.table)}{where}"
        return f"Parquet data {self.parquet!r} read by DuckDB"

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def _read_schema(self) -> pa.Schema:
        try:
            schema = self._run(f"SELECT * FROM {self._from_sql()} LIMIT 0").to_arrow_table().schema
        except Exception as exc:
            raise _duckdb_error(exc, self.description) from None
        if ROW_ID in schema.names:
            schema = schema.remove(schema.get_field_index(ROW_ID))
        return schema

    def _run(self, sql: str):
        import duckdb
        try:
            return self._statement(sql)
        except duckdb.Error as exc:
            raise _duckdb_error(exc, self.description) from None

    def _statement(self, sql: str):
        """``sql`` run where the source's rows are: its relation's connection (the relation as a view), or
        its own; DuckDB's errors as they are."""
        if self.relation_ is not None:
            return self.relation_.query(SOURCE_VIEW, sql)
        return self._con.sql(sql)

    def _from_sql(self) -> str:
        if self.relation_ is not None:
            return quote_ident(SOURCE_VIEW)
        if self.query is not None:
            return f"({self.query}) AS src"
        if self.table is not None:
            return qualified(self.table)
        files = ", ".join(quote_text(f) for f in self._files)
        offsets, start = [], 0
        for f, n in zip(self._files, self._file_rows):
            offsets.append(f"WHEN {quote_text(f)} THEN {start}")
            start += n
        # the row's identity is the Parquet source's: the file's offset plus the row's number in it
        return (f"(SELECT * EXCLUDE (filename, file_row_number), file_row_number + CASE filename "
                f"{' '.join(offsets)} END AS {quote_ident(ROW_ID)} FROM read_parquet([{files}], filename = true, "
                f"file_row_number = true, hive_partitioning = {'true' if self.hive_partitioning else 'false'})) AS src")

    def _native_row_id(self) -> str | None:
        if self.parquet is not None:
            return quote_ident(ROW_ID)
        if self.table is not None and self._has_rowid():
            return "rowid"
        return None

    def _has_rowid(self) -> bool:
        try:
            self._run(f"SELECT rowid FROM {self._from_sql()} LIMIT 0")
            return True
        except SourceError:
            return False

    def _auto_transfer(self) -> tuple[str, str]:
        return "rows", "DuckDB runs in this process: streaming its rows costs no network"

    def _relation(self, sql: str):
        return self._run(sql)

    def _write_table(self, sql: str, target: str) -> None:
        import duckdb
        try:
            if self.relation_ is not None:
                self._run(sql).create(target)
            else:
                self._con.execute(f"CREATE TABLE {target} AS {sql}")
        except duckdb.Error as exc:
            raise SourceError(f"cannot write the table {target} from {self.description}: {first_line(exc)}") from None

    def create_temp_table(self, name: str, select_sql: str, serial: bool = False) -> str | None:
        import duckdb
        sql = f"CREATE TEMPORARY TABLE {name} AS {select_sql}"
        try:
            self._statement(sql)
        except (duckdb.PermissionException, duckdb.OutOfMemoryException, duckdb.IOException) as exc:
            return first_line(exc)  # no room or no right: the fit routes from the root instead
        except duckdb.Error as exc:
            raise _duckdb_error(exc, self.description) from None
        return None

    def drop_temp_table(self, name: str) -> None:
        self._run(f"DROP TABLE IF EXISTS temp.main.{name}")

    def count_rows(self) -> int:
        return int(self.query_table(f"SELECT count(*) AS n FROM {self._from_sql()}").column(0)[0].as_py())

    def query_table(self, sql: str, ordered: bool = False, work_bytes: int = 0) -> pa.Table:
        rel = self._run(sql)  # DuckDB's sorts share its memory_limit: no per-sort cap to raise
        try:
            return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.fetch_arrow_table()
        except Exception as exc:
            raise _duckdb_error(exc, self.description) from None

    def _stream(self, sql: str, batch_size: int) -> Iterator[pa.RecordBatch]:
        rel = self._run(sql)
        try:
            reader = rel.to_arrow_reader(batch_size) if hasattr(rel, "to_arrow_reader") \
                else rel.fetch_record_batch(batch_size)
            yield from reader
        except Exception as exc:
            if isinstance(exc, SourceError):
                raise
            raise _duckdb_error(exc, self.description) from None
