"""Rows of a PostgreSQL table or query: metadata and aggregates through psycopg 3, rows through ADBC.

See :mod:`rainforest.storage.sql` for row identity and how rows cross (``transfer=``).
"""
from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa

from .base import SourceError
from .parquet import first_line
from .sql import SqlSource, qualified, query_snippet, quote_ident

log = logging.getLogger("rainforest")

# A growth pass's query is mostly CASE expressions (each attribute's bins, the tree's routing): tens of
# kB of SQL over cheap columns, which PostgreSQL's JIT took longer to compile than it saved (a depth-3
# level over 1M rows: 8.0 s with JIT, 1.1 s without). The profile's query (8 kB, row hashes: arithmetic)
# gains from it (16.6 s with, 26.6 s without). Queries longer than this run without JIT.
JIT_TEXT_LIMIT = 16_000

# the most a query's sorts and hash tables may be given (``work_mem``, for one transaction)
WORK_MEM_CAP = 256 << 20

# SQLSTATEs of a refused temporary table (rainforest.storage.temp_tables): no TEMPORARY privilege, a
# read-only transaction (a role's default_transaction_read_only, a hot standby); and class 53, no room
REFUSED_TEMP = ("42501", "25006")

_PG_TYPES = {"int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "float4": pa.float32(),
             "float8": pa.float64(), "numeric": pa.float64(), "text": pa.string(), "varchar": pa.string(),
             "bpchar": pa.string(), "name": pa.string(), "bool": pa.bool_(), "date": pa.date32(),
             "timestamp": pa.timestamp("us"), "timestamptz": pa.timestamp("us", tz="UTC")}


def _safe_url(url: str) -> str:
    """The URL (or ``key=value`` DSN) without its password, for messages."""
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url))


def conninfo(connection) -> str:
    """A libpq connection string for what users hold: a URL or ``key=value`` DSN; a SQLAlchemy URL
    (``postgresql+psycopg://...``, its driver dropped), ``sqlalchemy.engine.URL`` or ``Engine``; or an
    open psycopg connection (its parameters, password included)."""
    if isinstance(connection, str):
        return re.sub(r"^(postgres(?:ql)?)\+\w+://", r"\1://", connection)
    url = getattr(connection, "url", connection)  # an Engine's URL
    if hasattr(url, "render_as_string"):
        return conninfo(url.render_as_string(hide_password=False))
    info = getattr(connection, "info", None)
    if info is not None and hasattr(info, "dsn"):  # psycopg 3
        from psycopg.conninfo import make_conninfo
        return make_conninfo(info.dsn, password=info.password) if info.password else info.dsn
    raise SourceError("PostgresSource needs a URL or DSN string, a SQLAlchemy URL or Engine, or a psycopg "
                      f"connection, not {type(connection).__name__}")


@dataclass
class PostgresSource(SqlSource):
    """Rows of a PostgreSQL table or query: queries through psycopg 3, rows streamed through ADBC.

    Rows (``transfer="rows"``, a boosting round's weights, ``column_values``) come out through
    the ADBC PostgreSQL driver (``adbc-driver-postgresql``: binary ``COPY`` straight into Arrow
    batches), in a second connection of the same URL; without it installed they are fetched
    through psycopg, several times slower, and a log line says so.

    Parameters
    ----------
    url : str, sqlalchemy URL or Engine, or psycopg.Connection
        Where the server is: a libpq URL ``postgresql://user@host:port/database`` or ``key=value``
        DSN, a SQLAlchemy URL (``postgresql+psycopg://...``, string or object) or Engine, or an
        open psycopg connection. The source opens its own connections with those parameters
        (its session settings never touch yours) and closes them in :meth:`close`.
    table : str or tuple of str, optional
        A table or view name (``"t"`` or ``("schema", "t")``), quoted as given.
    query : str, optional
        SQL text whose result is the data. Give exactly one of ``table`` and ``query``.
    row_id : str, optional
        An integer column that identifies rows (a primary key); without it, a row's identity
        is its position in a serial scan, stable while the table is not modified.
    connect_timeout : int, default=10
        Seconds to wait for the server.
    transfer : {"auto", "rows", "aggregates"}, default="auto"
        How a pass's data cross: ``"rows"`` streams the rows out (2 queries a tree);
        ``"aggregates"`` pushes each pass down as one aggregate query and only AVC-groups cross
        (for rows that must not leave the server). ``"auto"``: rows unless they would not fit the
        local disk. See :mod:`rainforest.storage.sql`.
    """

    url: object = ""
    table: object = None
    query: str | None = None
    row_id: str | None = None
    connect_timeout: int = 10
    transfer: str = "auto"
    _mode: str | None = field(default=None, init=False, repr=False)
    _dsn: str = field(default="", init=False, repr=False)
    _conn: object = field(default=None, init=False, repr=False)
    _rows_conn: object = field(default=None, init=False, repr=False)
    _schema: pa.Schema = field(default=None, init=False, repr=False)
    _numeric: set = field(default_factory=set, init=False, repr=False)
    dialect = "postgres"
    copies_rows = True  # a scan costs the server's COPY each time (see rainforest.storage.row_copy)

    def __post_init__(self):
        try:
            import psycopg
        except ImportError:
            raise SourceError("PostgresSource needs psycopg 3: pip install 'rainforest[postgres]'") from None
        if (self.table is None) == (self.query is None):
            raise SourceError("give PostgresSource exactly one of table= and query=")
        self._set_transfer(self.transfer)
        self._dsn = conninfo(self.url)
        try:
            self._conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=self.connect_timeout)
        except psycopg.Error as exc:
            raise SourceError(f"cannot connect to PostgreSQL at {_safe_url(self._dsn)}: {first_line(exc)}") from None
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
            return f"the PostgreSQL table {qualified(self.table)} at {_safe_url(self._dsn)}"
        return f"the PostgreSQL query {query_snippet(self.query)}"

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
            raise self._read_error(exc) from None

    def _from_sql(self) -> str:
        return qualified(self.table) if self.table is not None else f"({self.query}) AS src"

    def _select_column(self, name: str) -> str:
        c = quote_ident(name)
        return f"CAST({c} AS double precision)" if name in self._numeric else c

    def _write_table(self, sql: str, target: str) -> None:
        import psycopg
        try:
            self._conn.execute(f"CREATE TABLE {target} AS {sql}")
        except psycopg.Error as exc:
            raise SourceError(f"cannot write the table {target} from {self.description}: {first_line(exc)}") from None

    def create_temp_table(self, name: str, select_sql: str, serial: bool = False) -> str | None:
        import psycopg
        sql = f"CREATE TEMPORARY TABLE {name} AS {select_sql}"
        try:
            with self._conn.transaction(), self._cursor() as cur:
                self._settings_for(cur, sql, serial)
                cur.execute(sql)
                # statistics, so that a level's GROUPING SETS hash rather than sort (a temporary table is
                # never analyzed by autovacuum): 1M rows, 9 attributes: 1.1 s against 3.6 s
                cur.execute(f"ANALYZE {name}")
        except psycopg.Error as exc:
            state = exc.sqlstate or ""
            if state in REFUSED_TEMP or state.startswith("53"):
                return first_line(exc)
            raise self._read_error(exc) from None
        return None

    def drop_temp_table(self, name: str) -> None:
        import psycopg
        try:
            self._conn.execute(f"DROP TABLE IF EXISTS pg_temp.{name}")
        except psycopg.Error as exc:
            raise SourceError(f"cannot drop the temporary table {name} of {self.description}: {first_line(exc)}") \
                from None

    def count_rows(self) -> int:
        with self._cursor() as cur:
            self._execute(cur, f"SELECT count(*) FROM {self._from_sql()}")
            return int(cur.fetchone()[0])

    def _auto_transfer(self) -> tuple[str, str]:
        """Extract while the rows, at 8 bytes a column, fit the temporary folder's free space (the
        spill folder's and the row copy's default), else push down (see rainforest.storage.sql)."""
        folder = tempfile.gettempdir()
        need = self.estimated_rows() * 8 * len(self.schema)
        free = shutil.disk_usage(folder).free
        if need <= free:
            return "rows", f"{need:,} bytes of rows at most, {free:,} free in {folder}"
        return "aggregates", f"the rows could take {need:,} bytes, and {folder} has {free:,} free"

    def estimated_rows(self) -> int:
        """The planner's estimate of the rows (``EXPLAIN``: nothing is scanned, however large the table
        or costly the query); at least the table's statistics after ``ANALYZE``."""
        with self._cursor() as cur:
            self._execute(cur, f"EXPLAIN (FORMAT JSON) SELECT * FROM {self._from_sql()}")
            plan = cur.fetchone()[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        return int(plan[0]["Plan"]["Plan Rows"])

    @staticmethod
    def _settings_for(cur, sql: str, serial: bool, work_bytes: int = 0) -> None:
        """The transaction's settings for one statement: no parallel workers where the scan order is the
        row identity (``serial``); no JIT for long text (:data:`JIT_TEXT_LIMIT`); ``work_mem`` raised to
        ``work_bytes`` (at most :data:`WORK_MEM_CAP`) where the server's is lower, so that the query's
        sorts and hash tables stay in memory. At PostgreSQL's default 4 MB, the profile's top-N sort
        of its sample wrote all 10M rows to disk (1 GB, 8.6 s), and a level's GROUPING SETS sorted
        every row where hashing them was a single pass (11.7 s against 5.6 s)."""
        if serial:
            cur.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        if len(sql) > JIT_TEXT_LIMIT:
            cur.execute("SET LOCAL jit = off")
        if work_bytes:  # one round trip: set_config(..., true) is SET LOCAL, made only where work_mem (kB) is lower
            want = -(-min(work_bytes, WORK_MEM_CAP) // 1024)
            cur.execute("SELECT set_config('work_mem', %s, true) FROM pg_settings "
                        "WHERE name = 'work_mem' AND setting::bigint < %s", (f"{want}kB", want))

    def query_table(self, sql: str, ordered: bool = False, work_bytes: int = 0) -> pa.Table:
        with self._conn.transaction(), self._cursor() as cur:
            self._settings_for(cur, sql, ordered, work_bytes)
            self._execute(cur, sql)
            names = [c.name for c in cur.description]
            rows = cur.fetchall()
        columns = list(zip(*rows)) if rows else [[] for _ in names]
        return pa.table({n: _arrow_values(v) for n, v in zip(names, columns)})

    def _stream(self, sql: str, batch_size: int) -> Iterator[pa.RecordBatch]:
        rows = self._rows_connection()
        if rows is None:
            yield from self._fetched(sql, batch_size)
            return
        import adbc_driver_manager
        # the driver's errors, and the reader's (an OSError), name the source; not the caller's
        failures = (adbc_driver_manager.Error, pa.ArrowException, OSError)
        cur = rows.cursor()
        try:
            try:
                cur.execute(sql)
                reader = cur.fetch_record_batch()
            except failures as exc:
                raise self._read_error(exc) from None
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except failures as exc:
                    raise self._read_error(exc) from None
                yield batch
        finally:
            cur.close()

    def _read_error(self, exc: Exception) -> SourceError:
        return SourceError(f"PostgreSQL cannot read {self.description}: {first_line(exc)}")

    def _rows_connection(self):
        """The ADBC connection that streams rows (opened at first use), or None without the driver."""
        if self._rows_conn is None:
            try:
                import adbc_driver_postgresql.dbapi as adbc
            except ImportError:
                log.info("adbc-driver-postgresql is not installed: rows of %s are fetched through psycopg "
                         "(pip install 'rainforest[postgres]')", self.description)
                self._rows_conn = False
                return None
            try:
                from psycopg.conninfo import make_conninfo
                conn = adbc.connect(make_conninfo(self._dsn, connect_timeout=str(self.connect_timeout)),
                                    autocommit=True)
            except Exception as exc:  # the driver's own error classes
                raise SourceError(f"cannot connect to PostgreSQL at {_safe_url(self._dsn)}: {first_line(exc)}") \
                    from None
            with conn.cursor() as cur:  # serial scans: the row order is the row identity
                for setting in ("synchronize_seqscans = off", "standard_conforming_strings = on",
                                "max_parallel_workers_per_gather = 0", "jit = off"):
                    cur.execute(f"SET {setting}")
            self._rows_conn = conn
        return self._rows_conn or None

    def _fetched(self, sql: str, batch_size: int) -> Iterator[pa.RecordBatch]:
        """Rows fetched through psycopg, ``batch_size`` at a time (without the ADBC driver)."""
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
        if self._rows_conn:
            self._rows_conn.close()
        self._rows_conn = None
        if self._conn is not None:
            self._conn.close()


def _arrow_values(values) -> pa.Array:
    return pa.array(list(values), from_pandas=False)
