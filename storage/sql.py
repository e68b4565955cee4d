"""Rows in a database: DuckDB (in process) and PostgreSQL (a server), with passes pushed down.

A pass over a SQL source is one query.  When the pass's task can say itself as an aggregate
query (``task.sql_aggregate(relation)``, see :mod:`rainforest.pushdown`), the database
computes the AVC-groups and only they cross the wire; otherwise (a task that must see
rows, such as a boosting round's weights) the rows are streamed in the source's row order
as Arrow batches and folded like any source's.

A row's stable identity (what the profiling sample, and later bootstrap weights and folds,
hash) is, in this order of preference: the ``row_id`` column the user names; a DuckDB
table's ``rowid``; a Parquet glob read by DuckDB: the file's offset in the file list (natural order)
plus the row's number in its file (the identity the Parquet source gives the same files);
otherwise the row's position in the relation's scan order, which is stable while the data
is not modified (PostgreSQL scans are made serial and unsynchronized for it).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from .base import Source, SourceError
from .parquet import expand_paths, first_line

SOURCE_VIEW = "__rainforest_source"
ROW_ID = "__rainforest_row"


@dataclass
class SqlRelation:
    """What a task needs to write its pass as SQL: the dialect, a ``FROM`` item, the SQL of a
    row's stable identity (a bigint over the ``FROM`` item's columns) and the Arrow schema."""

    dialect: str
    from_sql: str
    row_id: str
    schema: pa.Schema


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (quotes inside doubled); the one quoting of names."""
    if not isinstance(name, str) or "\x00" in name:
        raise SourceError(f"{name!r} cannot be an SQL identifier")
    return '"' + name.replace('"', '""') + '"'


def quote_text(text: str) -> str:
    """``text`` as a standard SQL string literal (quotes inside doubled); the one quoting of text
    values where backslashes are plain characters (DuckDB always; PostgreSQL with
    ``standard_conforming_strings = on``, which its sources set)."""
    if "\x00" in text:
        raise SourceError(f"the value {text!r} holds a NUL character, which SQL text cannot carry")
    return "'" + text.replace("'", "''") + "'"


def quote_escaped_text(text: str) -> str:
    """``text`` as a PostgreSQL escape string ``E'...'`` (backslashes and quotes doubled): the same
    value whatever ``standard_conforming_strings`` says, for SQL text run in sessions not ours."""
    return "E" + quote_text(text.replace("\\", "\\\\"))


def _qualified(name: str | Sequence[str]) -> str:
    """A table name, quoted: ``"t"``, or ``"schema"."t"`` from a tuple/list."""
    parts = [name] if isinstance(name, str) else list(name)
    return ".".join(quote_ident(p) for p in parts)


@dataclass
class SqlSource(Source):
    """The parts of DuckDB and PostgreSQL sources that do not depend on the engine."""

    distributed = True  # rows stay in the database: growth keeps and spills none of them
    dialect = ""

    def relation(self) -> SqlRelation:
        return SqlRelation(self.dialect, self._from_sql(), self._row_id_sql(), self.schema)

    def run_pass(self, task, columns: Sequence[str], batch_size: int = 65536, progress=None):
        """One counted pass: one aggregate query when ``task`` can be pushed down, else the rows
        streamed and folded."""
        self.check_columns(columns)
        self.n_passes += 1
        make = getattr(task, "sql_aggregate", None)
        query = make(self.relation()) if make is not None else None
        if query is None:
            return self.fold(task, list(columns), batch_size, progress)
        state = query.finish(self.query_table(query.sql, ordered=query.row_id))
        if progress is not None:
            progress(query.rows)
        return state

    def column_values(self, expression: str, batch_size: int = 65536) -> Iterator[pa.Array]:
        """The values of one SQL ``expression`` over the rows, in the source's row order, in chunks
        (scoring in the database: only the result column comes back)."""
        for batch in self._stream(f"SELECT {expression} AS v FROM {self._from_sql()}", batch_size):
            yield batch.column(0)

    @staticmethod
    def quote(name: str) -> str:
        """``name`` as a double-quoted SQL identifier."""
        return quote_ident(name)

    def select(self, items: str, into=None):
        """``SELECT items FROM`` the source, run in the database: written to the new table ``into``
        (one ``CREATE TABLE ... AS`` statement: all of it or nothing), or (DuckDB only) a lazy relation."""
        sql = f"SELECT {items} FROM {self._from_sql()}"
        if into is None:
            return self._relation(sql)
        self._write_table(sql, _qualified(into))
        return into

    def _relation(self, sql: str):
        raise SourceError(f"{self.description} cannot return a relation; give into= a table name to write")

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        select = ", ".join(self._select_column(c) for c in columns)
        for batch in self._stream(f"SELECT {select} FROM {self._from_sql()}", batch_size):
            yield pa.RecordBatch.from_arrays(list(batch.columns), names=list(columns))

    def _select_column(self, name: str) -> str:
        return quote_ident(name)

    # engine specific
    def _from_sql(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _row_id_sql(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def query_table(self, sql: str, ordered: bool = False) -> pa.Table:  # pragma: no cover - abstract
        raise NotImplementedError

    def _stream(self, sql: str, batch_size: int) -> Iterator[pa.RecordBatch]:  # pragma: no cover - abstract
        raise NotImplementedError


# -- DuckDB ------------------------------------------------------------------------------------

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
    """

    dialect = "duckdb"

    def __init__(self, relation=None, *, query=None, table=None, parquet=None, database=None, connection=None,
                 row_id=None, hive_partitioning=True):
        import duckdb

        Source.__init__(self)
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
            q = " ".join(self.query.split())
            return f"the DuckDB query {q[:60] + ('...' if len(q) > 60 else '')!r}"
        if self.table is not None:
            where = f" of {os.fspath(self.database)!r}" if self.database is not None else ""
            return f"the DuckDB table {_qualified(self.table)}{where}"
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
            if self.relation_ is not None:
                return self.relation_.query(SOURCE_VIEW, sql)
            return self._con.sql(sql)
        except duckdb.Error as exc:
            raise _duckdb_error(exc, self.description) from None

    def _from_sql(self) -> str:
        if self.relation_ is not None:
            return quote_ident(SOURCE_VIEW)
        if self.query is not None:
            return f"({self.query}) AS src"
        if self.table is not None:
            return _qualified(self.table)
        files = ", ".join(quote_text(f) for f in self._files)
        offsets, start = [], 0
        for f, n in zip(self._files, self._file_rows):
            offsets.append(f"WHEN {quote_text(f)} THEN {start}")
            start += n
        # the row's identity is the Parquet source's: the file's offset plus the row's number in it
        return (f"(SELECT * EXCLUDE (filename, file_row_number), file_row_number + CASE filename "
                f"{' '.join(offsets)} END AS {quote_ident(ROW_ID)} FROM read_parquet([{files}], filename = true, "
                f"file_row_number = true, hive_partitioning = {'true' if self.hive_partitioning else 'false'})) AS src")

    def _row_id_sql(self) -> str:
        if self.row_id is not None:
            return f"CAST({quote_ident(self.row_id)} AS BIGINT)"
        if self.parquet is not None:
            return quote_ident(ROW_ID)
        if self.table is not None and self._has_rowid():
            return "rowid"
        return "(row_number() OVER () - 1)"

    def _has_rowid(self) -> bool:
        try:
            self._run(f"SELECT rowid FROM {self._from_sql()} LIMIT 0")
            return True
        except SourceError:
            return False

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

    def count_rows(self) -> int:
        return int(self.query_table(f"SELECT count(*) AS n FROM {self._from_sql()}").column(0)[0].as_py())

    def query_table(self, sql: str, ordered: bool = False) -> pa.Table:
        rel = self._run(sql)
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


# -- PostgreSQL ---------------------------------------------------------------------------------

_PG_TYPES = {"int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "float4": pa.float32(),
             "float8": pa.float64(), "numeric": pa.float64(), "text": pa.string(), "varchar": pa.string(),
             "bpchar": pa.string(), "name": pa.string(), "bool": pa.bool_(), "date": pa.date32(),
             "timestamp": pa.timestamp("us"), "timestamptz": pa.timestamp("us", tz="UTC")}


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


@dataclass
class PostgresSource(SqlSource):
    """Rows of a PostgreSQL table or query, read through psycopg 3.

    Parameters
    ----------
    url : str
        A libpq connection URL, ``postgresql://user@host:port/database``.
    table : str or tuple of str, optional
        A table or view name (``"t"`` or ``("schema", "t")``), quoted as given.
    query : str, optional
        SQL text whose result is the data. Give exactly one of ``table`` and ``query``.
    row_id : str, optional
        An integer column that identifies rows (a primary key); without it, a row's identity
        is its position in a serial scan, stable while the table is not modified.
    connect_timeout : int, default=10
        Seconds to wait for the server.
    """

    url: str = ""
    table: object = None
    query: str | None = None
    row_id: str | None = None
    connect_timeout: int = 10
    _conn: object = field(default=None, init=False, repr=False)
    _schema: pa.Schema = field(default=None, init=False, repr=False)
    _numeric: set = field(default_factory=set, init=False, repr=False)
    dialect = "postgres"

    def __post_init__(self):
        try:
            import psycopg
        except ImportError:
            raise SourceError("PostgresSource needs psycopg 3: pip install 'rainforest[postgres]'") from None
        if (self.table is None) == (self.query is None):
            raise SourceError("give PostgresSource exactly one of table= and query=")
        try:
            self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=self.connect_timeout)
        except psycopg.Error as exc:
            raise SourceError(f"cannot connect to PostgreSQL at {_safe_url(self.url)}: {first_line(exc)}") from None
        # a serial, unsynchronized scan keeps the row order stable from pass to pass; standard strings
        # (a backslash is a plain character) whatever the server's or the role's default
        self._conn.execute("SET synchronize_seqscans = off")
        self._conn.execute("SET standard_conforming_strings = on")
        self._schema = self._read_schema()
        if self.row_id is not None:
            self.check_columns([self.row_id])

    @property
    def description(self) -> str:
        if self.table is not None:
            return f"the PostgreSQL table {_qualified(self.table)} at {_safe_url(self.url)}"
        q = " ".join(self.query.split())
        return f"the PostgreSQL query {q[:60] + ('...' if len(q) > 60 else '')!r}"

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def _read_schema(self) -> pa.Schema:
        fields = []
        with self._cursor() as cur:
            self._execute(cur, f"SELECT * FROM {self._from_sql()} LIMIT 0")
            for col in cur.description:
                info = self._conn.adapters.types.get(col.type_code)
                typ = _PG_TYPES.get(info.name if info else "", pa.binary())  # binary: not splittable, named if used
                if info is not None and info.name == "numeric":
                    self._numeric.add(col.name)
                fields.append(pa.field(col.name, typ))
        return pa.schema(fields)

    def _cursor(self, name: str | None = None):
        return self._conn.cursor(name=name) if name else self._conn.cursor()

    def _execute(self, cur, sql: str) -> None:
        import psycopg
        try:
            cur.execute(sql)
        except psycopg.Error as exc:
            raise SourceError(f"PostgreSQL cannot read {self.description}: {first_line(exc)}") from None

    def _from_sql(self) -> str:
        return _qualified(self.table) if self.table is not None else f"({self.query}) AS src"

    def _row_id_sql(self) -> str:
        if self.row_id is not None:
            return f"CAST({quote_ident(self.row_id)} AS BIGINT)"
        return "(row_number() OVER () - 1)"

    def _select_column(self, name: str) -> str:
        c = quote_ident(name)
        return f"CAST({c} AS double precision)" if name in self._numeric else c

    def _write_table(self, sql: str, target: str) -> None:
        import psycopg
        try:
            self._conn.execute(f"CREATE TABLE {target} AS {sql}")
        except psycopg.Error as exc:
            raise SourceError(f"cannot write the table {target} from {self.description}: {first_line(exc)}") from None

    def count_rows(self) -> int:
        with self._cursor() as cur:
            self._execute(cur, f"SELECT count(*) FROM {self._from_sql()}")
            return int(cur.fetchone()[0])

    def query_table(self, sql: str, ordered: bool = False) -> pa.Table:
        with self._conn.transaction(), self._cursor() as cur:
            if ordered:  # the scan order is the row identity: no parallel workers
                cur.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            self._execute(cur, sql)
            names = [c.name for c in cur.description]
            rows = cur.fetchall()
        columns = list(zip(*rows)) if rows else [[] for _ in names]
        return pa.table({n: _arrow_values(v) for n, v in zip(names, columns)})

    def _stream(self, sql: str, batch_size: int) -> Iterator[pa.RecordBatch]:
        with self._conn.transaction():
            with self._cursor() as setup:
                setup.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            with self._cursor(name="rainforest_scan") as cur:
                self._execute(cur, sql)
                names = [c.name for c in cur.description]
                while True:
                    rows = cur.fetchmany(batch_size)
                    if not rows:
                        break
                    cols = list(zip(*rows))
                    yield pa.RecordBatch.from_arrays([_arrow_values(v) for v in cols], names=names)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _arrow_values(values) -> pa.Array:
    return pa.array(list(values), from_pandas=False)
