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

How rows cross (``transfer=``, decided once per source; the choice and its reason are logged):

* ``"rows"`` (extract): every pass streams the rows out as Arrow batches, in the source's row
  order (by ``row_id`` when one is named), and folds them here like a Parquet source's.  The
  source is then local: growth encodes the rows of its first growth pass into the row store
  (memory, then the spill folder) and reads the store after that, so a tree costs 2 queries over
  the table (profile, extract) whatever its depth, and is the Parquet source's tree, node for node.
  A source that ``copies_rows`` (PostgreSQL, whose scans cost the server's ``COPY`` each time)
  keeps what a fit's first query streamed in a local copy for the fit's later passes: 1 query.
  In this mode a row's identity is its position in that order (with ``row_id``: the rank of its
  ``row_id``, not the value).
* ``"aggregates"`` (pushdown): every pass that can be said as one aggregate query is pushed down
  and only AVC-groups come back; the rows never leave the database.  One query per level.
* ``"auto"`` (default): DuckDB extracts (it runs in this process: there is no network to save);
  PostgreSQL extracts unless the rows, at 8 bytes a column, would not fit the free space of the
  temporary folder (the spill folder's default), and then pushes down.
"""
from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa

from .base import Source, SourceError
from .row_copy import RowCopy
from .temp_tables import TempTables

log = logging.getLogger("rainforest")

TRANSFERS = ("auto", "rows", "aggregates")
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
    temp: object = None  # the fit's TempTables (pushdown's node tables), while a fit lasts


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


def qualified(name: str | Sequence[str]) -> str:
    """A table name, quoted: ``"t"``, or ``"schema"."t"`` from a tuple/list."""
    parts = [name] if isinstance(name, str) else list(name)
    return ".".join(quote_ident(p) for p in parts)


@dataclass
class SqlSource(Source):
    """The parts of DuckDB and PostgreSQL sources that do not depend on the engine."""

    dialect = ""
    # Whether a fit keeps the rows of its first streamed pass on local disk for its later passes
    # (see rainforest.storage.row_copy): where a scan costs more than reading the copy back.
    copies_rows = False
    _copy = None  # the fit's RowCopy, while one lives
    _temp = None  # the fit's TempTables, while a fit pushes down
    kept_rows_name = "the fit's node table in the database"
    _streamed_kinds = None  # the kinds of pass that streamed rows out while pushing down (warned once each)

    def relation(self) -> SqlRelation:
        return SqlRelation(self.dialect, self._from_sql(), self._row_id_sql(), self.schema, self._temp)

    @property
    def distributed(self) -> bool:
        """Whether rows stay in the database (``transfer="aggregates"``): growth then keeps and spills
        none of them, and its passes come back as aggregates."""
        return self.transfer_mode() == "aggregates"

    def transfer_mode(self) -> str:
        """``"rows"`` or ``"aggregates"``: ``transfer`` as given, or what ``"auto"`` chose (once; logged)."""
        if self._mode is None:
            if self.transfer != "auto":
                self._mode, why = self.transfer, "as asked"
            else:
                self._mode, why = self._auto_transfer()
            log.info("%s: transfer=%s (%s)", self.description, self._mode, why)
        return self._mode

    def _set_transfer(self, transfer: str) -> None:
        if transfer not in TRANSFERS:
            raise SourceError(f"transfer must be one of {', '.join(map(repr, TRANSFERS))}, not {transfer!r}")
        self.transfer, self._mode = transfer, None

    @contextmanager
    def during_fit(self):
        """What one fit keeps, removed when it ends (also after an error or an interrupt): pushing down,
        its temporary node tables (:mod:`rainforest.storage.temp_tables`); with ``copies_rows`` and rows
        streamed out, a local copy of its first streamed pass, which its later passes read."""
        if self._temp is not None or self._copy is not None:  # a fit inside a fit (a learner's inner tree)
            yield
            return
        mode = self.transfer_mode()
        if mode == "aggregates":
            self._temp = TempTables(self)
        elif self.copies_rows:
            self._copy = RowCopy()
        try:
            yield
        finally:
            if self._temp is not None:
                if self._temp.reads:
                    log.info("%s: %d query(ies) read temporary node tables instead of the source",
                             self.description, self._temp.reads)
                self._temp.drop_all()
                self._temp = None
            if self._copy is not None:
                if self._copy.columns is not None:  # a finished copy
                    log.info("%s: %d later pass(es) read the local copy of its rows (%s bytes) instead of the "
                             "database", self.description, self._copy.reads, f"{self._copy.bytes_written:,}")
                self._copy.remove()
                self._copy = None

    def copied(self, columns: Sequence[str]) -> bool:
        return self._copy is not None and self._copy.covers(columns)

    def run_pass(self, task, columns: Sequence[str], batch_size: int = 65536, progress=None):
        """One counted pass: one aggregate query when the source pushes down and ``task`` can be said
        so, else the rows streamed (or read from the fit's local copy) and folded."""
        self.check_columns(columns)
        make = getattr(task, "sql_aggregate", None) if self.distributed else None
        query = make(self.relation()) if make is not None else None
        if query is None:
            if self.distributed:
                self._warn_streamed(task)
            self.count_pass(columns)
            return self.fold(task, list(columns), batch_size, progress)
        if query.reads_source:  # else it reads a temporary table of this fit's
            self.count_pass(columns)
        state = self._answer(query)
        while query.instead is not None:  # the result asked for another query: a second scan
            query = query.instead
            self.count_pass(columns)
            state = self._answer(query)
        if progress is not None:
            progress(query.rows)
        return state

    def _answer(self, query):
        """``query`` run here and its result handed to its ``finish``."""
        return query.finish(self.query_table(query.sql, ordered=query.row_id, work_bytes=query.work_bytes))

    def _warn_streamed(self, task) -> None:
        """Pushing down, a pass that must see rows (a forest's, a boosting round's, BOAT's) streams them out
        of the database: the user asked for rows that stay, so say so, once per kind of pass."""
        kind = type(task).__name__
        seen = self._streamed_kinds = self._streamed_kinds or set()
        if kind not in seen:
            seen.add(kind)
            warnings.warn(f"transfer='aggregates': a pass of kind {kind} cannot be said as one aggregate query, so "
                          f"the rows of {self.description} that it reads stream out of the database",
                          RuntimeWarning, stacklevel=3)

    def column_values(self, expression: str, batch_size: int = 65536) -> Iterator[pa.Array]:
        """The values of one SQL ``expression`` over the rows, in the source's row order, in chunks
        (scoring in the database: only the result column comes back)."""
        for batch in self._stream(f"SELECT {expression} AS v FROM {self._from_sql()}{self._order()}", batch_size):
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
        self._write_table(sql, qualified(into))
        return into

    def _relation(self, sql: str):
        raise SourceError(f"{self.description} cannot return a relation; give into= a table name to write")

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        if self._copy is None:
            return self._streamed(columns, batch_size)
        return self._copy.batches(columns, lambda: self._streamed(columns, batch_size))

    def _streamed(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        select = ", ".join(self._select_column(c) for c in columns)
        for batch in self._stream(f"SELECT {select} FROM {self._from_sql()}{self._order()}", batch_size):
            yield pa.RecordBatch.from_arrays([_as_type(a, self.schema.field(c).type) for a, c in
                                              zip(batch.columns, columns)], names=list(columns))

    def _order(self) -> str:
        """Rows come out in identity order: by ``row_id`` when named, else as the scan gives them."""
        return f" ORDER BY {quote_ident(self.row_id)}" if self.row_id is not None else ""

    def _select_column(self, name: str) -> str:
        return quote_ident(name)

    def _row_id_sql(self) -> str:
        """A row's identity in SQL (see the module notes): the ``row_id`` column, else the engine's own
        (:meth:`_native_row_id`), else the row's position in the scan."""
        if self.row_id is not None:
            return f"CAST({quote_ident(self.row_id)} AS BIGINT)"
        return self._native_row_id() or "(row_number() OVER () - 1)"

    def _native_row_id(self) -> str | None:
        """The engine's stable identity of a row of this relation, if it has one."""
        return None

    # engine specific
    def _from_sql(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _auto_transfer(self) -> tuple[str, str]:  # pragma: no cover - abstract
        """What ``transfer="auto"`` means for this engine, and why."""
        raise NotImplementedError

    def query_table(self, sql: str, ordered: bool = False, work_bytes: int = 0) -> pa.Table:  # pragma: no cover
        """The result of ``sql`` as an Arrow table. ``ordered``: rows are numbered in scan order, so the
        scan must be serial; ``work_bytes``: memory the query's sorts and hash tables need to stay in
        memory (an engine that caps their memory raises the cap to it, for this query only)."""
        raise NotImplementedError

    def create_temp_table(self, name: str, select_sql: str, serial: bool = False) -> str | None:
        """Make the temporary table ``name`` (quoted) from ``select_sql``: None when made, or the
        database's reason when it refuses temporary tables (see :mod:`rainforest.storage.temp_tables`);
        a SourceError for any other failure."""
        raise NotImplementedError  # pragma: no cover - abstract

    def drop_temp_table(self, name: str) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _stream(self, sql: str, batch_size: int) -> Iterator[pa.RecordBatch]:  # pragma: no cover - abstract
        raise NotImplementedError


def query_snippet(query: str) -> str:
    """SQL text shortened for messages: its whitespace collapsed, the first 60 characters, quoted."""
    q = " ".join(query.split())
    return repr(q[:60] + ("..." if len(q) > 60 else ""))


def _as_type(values: pa.Array, typ: pa.DataType) -> pa.Array:
    """``values`` as the schema's type where a driver chose another (ADBC's for a type the schema
    reads as binary, say); as they are where no cast exists."""
    if values.type == typ:
        return values
    try:
        return values.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return values
