"""The temporary tables one fit makes in a database, and their removal when the fit ends.

Pushdown (``transfer="aggregates"``) keeps each row's encoded slots and tree node in a temporary
table, made by the root's pass and moved on as the tree grows (:mod:`rainforest.node_tables`), so
that a level's query reads a narrow table of the rows still growing instead of encoding and
routing every row of the source from the root. The tables
live in the session's temporary schema (PostgreSQL's ``pg_temp``, DuckDB's ``temp``), are named
``__rainforest_<random>``, and are dropped when the fit ends, fails or is interrupted
(:meth:`rainforest.storage.Source.during_fit`); the source's own tables are never written.

A database that refuses temporary tables (a PostgreSQL role in read-only transactions or
without the ``TEMPORARY`` privilege, a full disk) is told once with a warning, and the fit goes
on routing every row from the root in each level's query, as it did before node tables.
"""
from __future__ import annotations

import logging
import uuid
import warnings

from .base import SourceError

log = logging.getLogger("rainforest")

PREFIX = "__rainforest_"


class TempTables:
    """The temporary tables of one fit on ``source`` (a :class:`rainforest.storage.sql.SqlSource`).

    ``memo`` belongs to whoever writes the tables' SQL (:mod:`rainforest.pushdown`): what the
    current table holds, kept from one pass to the next.  ``refused`` is the database's reason
    once it has refused a table; no table is asked for after that.
    """

    def __init__(self, source):
        self.source = source
        self.names: list[str] = []
        self.memo: dict = {}
        self.refused: str | None = None
        self.reads = 0  # queries that read a table made here instead of the source

    def create(self, select_sql: str, serial: bool = False) -> str | None:
        """``CREATE TEMPORARY TABLE ... AS select_sql``: the new table's quoted name, or None when the
        database refuses temporary tables (then warned once). ``serial``: the rows keep the scan's order
        (PostgreSQL: no parallel workers), for a row identity computed in it."""
        if self.refused is not None:
            return None
        name = f'"{PREFIX}{uuid.uuid4().hex[:16]}"'  # quoted; nothing in it needs escaping
        self.names.append(name)  # before it exists: an interrupt midway still drops it (IF EXISTS)
        refused = self.source.create_temp_table(name, select_sql, serial)
        if refused is None:
            return name
        self.names.remove(name)
        self.refused = refused
        warnings.warn(f"{self.source.description}: the database refused a temporary table ({refused}); "
                      "each level's query routes every row from the root instead (slower)",
                      RuntimeWarning, stacklevel=2)
        return None

    def drop(self, name: str) -> None:
        """Drop one of the tables made here."""
        self.source.drop_temp_table(name)
        self.names.remove(name)

    def drop_all(self) -> None:
        """Drop every table made here (the end of the fit, also after an error or an interrupt)."""
        while self.names:
            name = self.names.pop()
            try:
                self.source.drop_temp_table(name)
            except SourceError as exc:  # the session's end drops it anyway
                log.warning("could not drop the temporary table %s: %s", name, exc)
        self.memo.clear()
