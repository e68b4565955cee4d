#!/usr/bin/env python
"""SQL benchmark: one tree on DuckDB and PostgreSQL, passes pushed down or rows streamed out, against Parquet.

A SQL source's ``transfer=`` says how a pass's data cross: ``"aggregates"`` pushes every pass down as
one aggregate query (``rainforest.pushdown``, one per level; only the AVC-groups come back);
``"rows"`` streams the rows out as Arrow batches into the local row store (PostgreSQL through the
ADBC driver, on a second connection): 2 passes a tree (profile, extract) with ``algorithm="hybrid"``.
Every contender runs in its own child process (its peak RSS is its own), all with
``DecisionTreeClassifier(max_depth=10, max_bins=255)`` on Agrawal data (function 7):

* DuckDB, at ``--rows-duckdb`` training rows (default 10,000,000, 20 Parquet files):
  ``parquet-read`` (``storage.ParquetSource(train)``, ``algorithm="read"``: the baseline);
  ``duckdb-read`` (``storage.DuckDBSource(parquet=train, transfer="aggregates")``, ``"read"``);
  ``parquet-hybrid`` (``ParquetSource(train)``, the default ``"hybrid"``); ``duckdb-rows``
  (``DuckDBSource(parquet=train, transfer="rows")``, ``"hybrid"``); ``duckdb-table-rows``
  (``DuckDBSource(table="agrawal", database=<data>/agrawal.duckdb, transfer="rows")``, ``"hybrid"``:
  a builder child writes the database once from the training files in natural order, timed apart;
  reused while it holds the right row count and is newer than the data's ``_meta.json``).
* PostgreSQL, at ``--rows-postgres`` training rows (default 1,000,000): ``parquet-read`` and
  ``parquet-hybrid`` on the same rows, then the parent starts a throw-away server
  (``scripts/postgres_server.py``), a loader child copies the training files into the table
  ``agrawal`` (``load_table``, ``VACUUM ANALYZE``; timed apart), and ``postgres-read``
  (``storage.PostgresSource(url, table="agrawal", transfer="aggregates")``, ``"read"``) and
  ``postgres-rows`` (``PostgresSource(url, table="agrawal", transfer="rows")``, ``"hybrid"``) run.

Per contender: fit time (over ``parquet-read`` and over the Parquet contender of the same algorithm),
passes, the profiling and growth passes' times (the ``rainforest`` logger's INFO lines), the bytes
that came back from the database (``query_table`` results or streamed Arrow batches; for PostgreSQL
also the loopback interface's), peak RSS, held-out accuracy and whether the tree equals
``parquet-read``'s. The parent reads the training files (or the DuckDB database) once before each
Parquet/DuckDB contender (the same warm page cache for all); each child first fits 5,000 rows, untimed.

    python benchmarks/bench_sql.py --rows-duckdb 10000000 --rows-postgres 1000000

Writes ``<out>.md``, ``<out>.json`` and ``<out>.png`` (``--out`` defaults to ``benchmarks/results/sql``).
Data go to ``benchmarks/data/`` and are reused when their ``_meta.json`` matches.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, SEED, fmt as _fmt, vm_rss_mb as _vm_rss_mb  # noqa: E402
from harness import rows_label  # noqa: E402

CONTENDERS = ("parquet-read", "duckdb-read", "parquet-hybrid", "duckdb-rows", "duckdb-table-rows",
              "postgres-read", "postgres-rows")
SOURCE = {"parquet-read": "parquet", "duckdb-read": "duckdb", "parquet-hybrid": "parquet", "duckdb-rows": "duckdb",
          "duckdb-table-rows": "duckdb-table", "postgres-read": "postgres", "postgres-rows": "postgres"}
ALGORITHM = {"parquet-read": "read", "duckdb-read": "read", "parquet-hybrid": "hybrid", "duckdb-rows": "hybrid",
             "duckdb-table-rows": "hybrid", "postgres-read": "read", "postgres-rows": "hybrid"}
TRANSFER = {"duckdb-read": "aggregates", "duckdb-rows": "rows", "duckdb-table-rows": "rows",
            "postgres-read": "aggregates", "postgres-rows": "rows"}  # SQL sources only
DUCKDB_PART = ("parquet-read", "duckdb-read", "parquet-hybrid", "duckdb-rows", "duckdb-table-rows")
POSTGRES_PART = ("parquet-read", "parquet-hybrid", "postgres-read", "postgres-rows")
COLORS = {"parquet-read": "#6f6f6f", "duckdb-read": "#e6b800", "parquet-hybrid": "#b0b0b0",
          "duckdb-rows": "#f5d76e", "duckdb-table-rows": "#b38f00", "postgres-read": "#336791",
          "postgres-rows": "#7fa7d1"}
PACKAGES = ("rainforest", "numba", "pyarrow", "duckdb", "psycopg", "adbc-driver-postgresql")
MAX_BINS = 255
TABLE = "agrawal"
WARMUP_TABLE = "agrawal_warmup"
PASS_LINE = re.compile(r"^(?P<label>.*): (?P<rows>[\d,]+) rows in (?P<seconds>[0-9.]+)s \(")


# ---------------------------------------------------------------------------
# children


def _loopback_bytes():
    """Bytes received on the loopback interface so far (``/proc/net/dev``), or None off Linux."""
    try:
        with open("/proc/net/dev") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name.strip() == "lo":
                    return int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return None


class _PassLog(logging.Handler):
    """A handler on the ``rainforest`` logger (attached within ``with``) that keeps each pass's INFO line."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list = []
        self.logger = logging.getLogger("rainforest")

    def emit(self, record):
        self.lines.append(record.getMessage())

    def __enter__(self):
        self.logger_level = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self)
        self.logger.setLevel(self.logger_level)

    def passes(self) -> list:
        """``{"label", "kind" (data, memory, spill), "rows", "seconds"}`` per parsed line."""
        out = []
        for line in self.lines:
            m = PASS_LINE.match(line)
            if not m:
                continue
            label = m.group("label")
            # a pushed-down level that reads the fit's node table in the database is a growth pass too
            kind = "data" if "over the data" in label or "node table" in label else (
                "memory" if "kept in memory" in label else "spill")
            out.append({"label": label, "kind": kind, "rows": int(m.group("rows").replace(",", "")),
                        "seconds": float(m.group("seconds"))})
        return out


def _tcp_counter(conn):
    """A function giving ``(bytes sent and acknowledged, bytes received)`` on ``conn``'s TCP socket (Linux
    ``TCP_INFO``: ``tcpi_bytes_acked`` and ``tcpi_bytes_received``), or None when it cannot be read."""
    import socket
    import struct

    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            sock.close()
            return None
    except (OSError, AttributeError, ValueError):
        return None

    def read():
        try:
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        except OSError:
            return None
        return struct.unpack_from("QQ", info, 120) if len(info) >= 136 else None

    return read if read() is not None else None


def _meter(source, calls: list, queries: list, streams: list) -> None:
    """Wrap ``source.run_pass`` (time and task of each pass; the bytes sent and received on a PostgreSQL
    source's psycopg connection, and on the loopback interface, while it ran) and, on a SQL source,
    ``source.query_table`` (rows, Arrow bytes and SQL length of each result) and ``source._stream``
    (batches, rows and Arrow bytes of each stream of rows), on the instance."""
    run_pass = source.run_pass
    conn = getattr(source, "_conn", None)
    tcp = _tcp_counter(conn) if conn is not None else None

    def timed_pass(task, columns, batch_size=65536, progress=None):
        lo0 = _loopback_bytes()
        tcp0 = tcp() if tcp else None
        t0 = time.perf_counter()
        state = run_pass(task, columns, batch_size, progress)
        seconds = time.perf_counter() - t0
        tcp1 = tcp() if tcp else None
        lo1 = _loopback_bytes()
        call = {"task": type(task).__name__, "seconds": seconds,
                "loopback_bytes": lo1 - lo0 if lo0 is not None and lo1 is not None else None}
        if tcp0 is not None and tcp1 is not None:
            call["tcp_bytes_sent"], call["tcp_bytes_received"] = tcp1[0] - tcp0[0], tcp1[1] - tcp0[1]
        calls.append(call)
        return state

    source.run_pass = timed_pass
    query_table = getattr(source, "query_table", None)
    if query_table is None:
        return

    def weighed(sql, ordered=False, work_bytes=0):
        t0 = time.perf_counter()
        table = query_table(sql, ordered=ordered, work_bytes=work_bytes)
        queries.append({"pass": len(calls), "seconds": time.perf_counter() - t0, "rows": int(table.num_rows),
                        "nbytes": int(table.nbytes), "sql_bytes": len(sql.encode()), "ordered": bool(ordered)})
        return table

    source.query_table = weighed
    stream = source._stream

    def counted(sql, batch_size):
        # a pass's calls entry is appended when it ends: len(calls) is the running pass's index
        rec = {"pass": len(calls), "batches": 0, "rows": 0, "nbytes": 0, "sql_bytes": len(sql.encode())}
        streams.append(rec)
        for batch in stream(sql, batch_size):
            rec["batches"] += 1
            rec["rows"] += batch.num_rows
            rec["nbytes"] += batch.nbytes
            yield batch

    source._stream = counted


def _make_source(kind: str, transfer: str | None, train: str, url: str | None, table: str, database=None):
    from rainforest.storage import DuckDBSource, ParquetSource, PostgresSource

    if kind == "parquet":
        return ParquetSource(train)
    if kind == "duckdb":
        return DuckDBSource(parquet=train, transfer=transfer)
    if kind == "duckdb-table":
        return DuckDBSource(table=table, database=database, transfer=transfer)
    return PostgresSource(url, table=table, transfer=transfer)


def _write_duckdb(database: str, files) -> int:
    """Write the table ``agrawal`` of ``files`` (in this order; DuckDB keeps the insertion order) into a
    new DuckDB database file; returns its row count."""
    import duckdb

    from rainforest.storage.sql import quote_text

    with duckdb.connect(database) as con:
        con.execute(f"CREATE TABLE {TABLE} AS SELECT * FROM read_parquet([{', '.join(map(quote_text, files))}])")
        return int(con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])


def _build_duckdb(database: str, train: str) -> dict:
    """Builder child: the DuckDB database of the training files, reused when it holds their rows and is
    newer than the data's ``_meta.json``; written under a temporary name, so a partial one is never reused."""
    import duckdb
    import pyarrow.parquet as pq

    from rainforest.storage.parquet import expand_paths

    files = expand_paths(train)
    out = {"path": database, "reused": False}
    if os.path.exists(database) and os.path.getmtime(database) >= os.path.getmtime(Path(train).parent / "_meta.json"):
        with contextlib.suppress(duckdb.Error), duckdb.connect(database, read_only=True) as con:
            out["reused"] = con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] \
                == sum(pq.read_metadata(f).num_rows for f in files)
    if not out["reused"]:
        tmp = database + ".tmp"
        for f in (tmp, tmp + ".wal", database + ".wal"):  # an old log would be replayed into the new file
            if os.path.exists(f):
                os.remove(f)
        t0 = time.perf_counter()
        out["rows"] = _write_duckdb(tmp, files)
        os.replace(tmp, database)
        out["build_seconds"] = time.perf_counter() - t0
    out["bytes"] = os.path.getsize(database)
    return out


def _warm_up(kind: str, transfer, algorithm: str, depth: int, function: int, url: str | None) -> float:
    """Untimed small fits: in memory (Numba kernels) and on a source of the contender's kind."""
    from rainforest import DecisionTreeClassifier
    from rainforest.datasets import agrawal_table, write_agrawal_parquet
    from rainforest.storage.parquet import expand_paths

    t0 = time.perf_counter()
    params = dict(max_depth=depth, max_bins=MAX_BINS, algorithm=algorithm)
    warm = agrawal_table(5000, function=function, seed=SEED + 1)
    DecisionTreeClassifier(**params).fit(warm, target=LABEL).predict(warm)
    with tempfile.TemporaryDirectory() as tmp:
        files, database = os.path.join(tmp, "w"), os.path.join(tmp, "w.duckdb")
        if kind != "postgres":
            write_agrawal_parquet(files, 5000, function=function, n_files=2, seed=SEED + 1)
        if kind == "duckdb-table":
            _write_duckdb(database, expand_paths(files))
        table = WARMUP_TABLE if kind == "postgres" else TABLE
        source = _make_source(kind, transfer, files, url, table, database)
        DecisionTreeClassifier(**params).fit(source, target=LABEL)
        if hasattr(source, "close"):
            source.close()
    return time.perf_counter() - t0


def _run(name: str, args) -> dict:
    from rainforest import DecisionTreeClassifier

    kind, algorithm, transfer = SOURCE[name], ALGORITHM[name], TRANSFER.get(name)
    row = {"source": kind, "algorithm": algorithm, "transfer": transfer}
    row["warmup_seconds"] = _warm_up(kind, transfer, algorithm, args.depth, args.function, args.url)
    source = _make_source(kind, transfer, args.train, args.url, TABLE, args.database)
    if kind.startswith("duckdb"):
        row["duckdb_threads"] = int(source.query_table("SELECT current_setting('threads') AS t").column(0)[0].as_py())
    calls, queries, streams = [], [], []
    _meter(source, calls, queries, streams)
    clf = DecisionTreeClassifier(max_depth=args.depth, max_bins=MAX_BINS, algorithm=algorithm)
    row["rss_before_fit_mb"] = _vm_rss_mb()
    with _PassLog() as plog:
        t0 = time.perf_counter()
        clf.fit(source, target=LABEL)
        row["seconds"] = time.perf_counter() - t0
    grow = plog.passes()
    data = [p for p in grow if p["kind"] == "data"]
    other = [p for p in grow if p["kind"] != "data"]
    profile = [c for c in calls if c["task"] == "ProfileTask"]
    row.update(
        passes=int(clf.n_passes_), passes_per_level=[int(p) for p in clf.n_passes_per_level_],
        growth_passes=grow, run_pass_calls=calls, queries=queries, streams=streams,
        profile_seconds=sum(c["seconds"] for c in profile) if profile else None,
        data_pass_seconds_mean=sum(p["seconds"] for p in data) / len(data) if data else None,
        data_pass_seconds_total=sum(p["seconds"] for p in data),
        memory_passes=len(other), memory_pass_seconds_total=sum(p["seconds"] for p in other),
    )
    if transfer is not None:  # what came back from the database, and what the source chose
        row["transfer_mode"] = source.transfer_mode()
        row["moved_bytes"] = sum(q["nbytes"] for q in queries) + sum(b["nbytes"] for b in streams)
    lo = [c["loopback_bytes"] for c in calls]
    row["loopback_bytes"] = sum(lo) if lo and None not in lo else None
    # the brief's "profile = fit - growth passes": profiling plus split finding and bookkeeping
    row["fit_minus_growth_seconds"] = row["seconds"] - sum(p["seconds"] for p in grow)
    if row["profile_seconds"] is not None:
        row["rest_seconds"] = row["fit_minus_growth_seconds"] - row["profile_seconds"]
    if transfer == "aggregates":  # the database's own floor: one scan counting the classes (median of 3)
        query_table = type(source).query_table.__get__(source)  # not recorded among the fit's queries
        floor = []
        for _ in range(3):
            t0 = time.perf_counter()
            query_table(f"SELECT {source.quote(LABEL)}, count(*) AS n FROM {source.relation().from_sql} GROUP BY 1")
            floor.append(time.perf_counter() - t0)
        row["scan_floor_seconds"] = sorted(floor)[1]
    row["tree_sha256"] = hashlib.sha256(clf.tree_.to_json().encode()).hexdigest()
    row["node_count"] = int(clf.tree_.node_count)
    row["tree_depth"] = int(clf.get_depth())
    row["n_rows"] = int(clf.n_rows_)
    if hasattr(source, "close"):
        source.close()
    row["test_accuracy"] = float(clf.score(args.test, target=LABEL))
    return row


def _load(url: str, train: str, function: int) -> dict:
    """Loader child: COPY the training files (sorted order) into ``agrawal`` and a 5,000-row warm-up table,
    VACUUM ANALYZE; the sizes of the data (Arrow, PostgreSQL relation). Prints one JSON line."""
    import psycopg
    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(harness.ROOT / "scripts"))
    from postgres_server import load_table

    from rainforest.datasets import agrawal_table
    from rainforest.storage.parquet import expand_paths

    out = {}
    t0 = time.perf_counter()
    table = pa.concat_tables([pq.read_table(f) for f in expand_paths(train)])
    out["read_parquet_seconds"] = time.perf_counter() - t0
    out["rows"] = int(table.num_rows)
    out["arrow_nbytes"] = int(table.nbytes)
    t0 = time.perf_counter()
    load_table(url, TABLE, table)
    out["copy_seconds"] = time.perf_counter() - t0
    del table
    load_table(url, WARMUP_TABLE, agrawal_table(5000, function=function, seed=SEED + 1))
    with psycopg.connect(url, autocommit=True) as conn:
        t0 = time.perf_counter()
        conn.execute(f"VACUUM ANALYZE {TABLE}")
        conn.execute(f"VACUUM ANALYZE {WARMUP_TABLE}")
        out["vacuum_seconds"] = time.perf_counter() - t0
        out["pg_total_relation_size"] = int(conn.execute(f"SELECT pg_total_relation_size('{TABLE}')").fetchone()[0])
        out["pg_relation_size"] = int(conn.execute(f"SELECT pg_relation_size('{TABLE}')").fetchone()[0])
        out["server_version"] = conn.execute("SHOW server_version").fetchone()[0]
        out["max_parallel_workers_per_gather"] = conn.execute("SHOW max_parallel_workers_per_gather").fetchone()[0]
    out["load_seconds"] = out["read_parquet_seconds"] + out["copy_seconds"] + out["vacuum_seconds"]
    return out


# ---------------------------------------------------------------------------
# report


_ok = harness.finished  # a row that ran to the end, with its seconds


def _base(rows, r, algorithm="read"):
    """The ``parquet-<algorithm>`` row of ``r``'s part, when it ran."""
    name = f"parquet-{algorithm}"
    return next((x for x in rows if x["name"] == name and x.get("part") == r.get("part") and _ok(x)), None)


def _ratio(rows, r, key="seconds", same_algorithm=False):
    b = _base(rows, r, ALGORITHM[r["name"]] if same_algorithm else "read")
    return r[key] / b[key] if _ok(r) and b and r.get(key) and b.get(key) else None


def _same_tree(rows, r):
    b = _base(rows, r)
    if not _ok(r) or b is None:
        return None
    return r.get("tree_sha256") == b.get("tree_sha256")


def _growth_queries(r) -> list:
    """The query_table records of the growth passes (pass index >= 1: after the profiling pass)."""
    return [q for q in r.get("queries") or [] if q["pass"] >= 1]


def _mean_max(vals, scale=1.0, spec=".1f") -> str:
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    return f"{format(sum(vals) / len(vals) / scale, spec)} / {format(max(vals) / scale, spec)}"


def _yes(same) -> str:
    return "-" if same is None else ("yes" if same else "**no**")


def _moved(r) -> str:
    """What came back from the database in the fit, in MB, with the count of results or batches."""
    if not _ok(r) or r.get("moved_bytes") is None:
        return "-"
    batches = sum(b["batches"] for b in r.get("streams") or [])
    n = f"{batches:,} batches" if batches else f"{len(r.get('queries') or [])} results"
    return f"{r['moved_bytes'] / 1e6:.2f} ({n})"


def _table_row(r, rows, middle: str) -> str:
    """Name, source, transfer, algorithm, fit time and its ratios, passes, ``middle`` (the table's own
    cells), peak RSS, same tree, accuracy and status."""
    ok = _ok(r)
    return (f"| {r['name']} | {r.get('source', SOURCE[r['name']])} | {TRANSFER.get(r['name'], '-')} | "
            f"{r.get('algorithm', ALGORITHM[r['name']])} | {_fmt(r['seconds'] if ok else None, '.2f')} | "
            f"{_fmt(_ratio(rows, r), '.2f')} | {_fmt(_ratio(rows, r, same_algorithm=True), '.2f')} | "
            f"{_fmt(r.get('passes') if ok else None, 'd')} | {_fmt(r.get('profile_seconds') if ok else None, '.2f')} | "
            f"{_fmt(r.get('data_pass_seconds_mean') if ok else None, '.2f')} | "
            f"{_fmt(_ratio(rows, r, 'data_pass_seconds_mean', True), '.2f')} | {_floor_ratio(r)} | {middle} | "
            f"{_fmt(r.get('peak_rss_mb'), '.0f')} | {_yes(_same_tree(rows, r))} | "
            f"{_fmt(r.get('test_accuracy') if ok else None, '.4f')} | {r['status']} |")


def _floor_ratio(r) -> str:
    """A pushed-down fit's mean growth pass over the database's one-scan floor (``scan_floor_seconds``)."""
    if not _ok(r) or not r.get("scan_floor_seconds") or r.get("data_pass_seconds_mean") is None:
        return "-"
    return f"{r['data_pass_seconds_mean'] / r['scan_floor_seconds']:.2f} ({r['scan_floor_seconds']:.3f} s)"


HEAD = ("| contender | source | transfer | algorithm | fit s | × parquet read | × parquet same algorithm | passes "
        "| profile s | growth pass s (mean) | × parquet per pass (same algorithm) | × one GROUP BY scan (scan s) | ")
TAIL = "peak RSS MB | same tree | test accuracy | status |"
RULE = "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"  # then the table's own, then TAIL's


def _duckdb_lines(rows, info) -> list:
    duck = [r for r in rows if r.get("part") == "duckdb"]
    if not duck:
        return []
    lines = ["", f"## DuckDB, {duck[0]['rows']:,} rows", ""]
    built = info.get("duckdb_table")
    if built and built.get("status") == "ok":
        lines += [f"- DuckDB database for `duckdb-table-rows`: `{built['shown']}`, {built['bytes'] / 1e6:.1f} MB, "
                  + ("reused" if built["reused"] else f"built in {built['build_seconds']:.2f} s (not part of any fit)"),
                  ""]
    elif built:
        lines += [f"- building the DuckDB database failed: {built.get('status')}", ""]
    lines += [HEAD + "in-memory passes (n / s) | rest s | result KB/pass (mean / max) | moved MB per fit | " + TAIL,
              RULE + "---:|---:|---:|---:|---:|---|---:|---|"]
    for r in duck:
        ok = _ok(r)
        memory = f"{r['memory_passes']} / {r['memory_pass_seconds_total']:.2f}" if ok and r.get("memory_passes") else "-"
        lines.append(_table_row(r, rows, f"{memory} | {_fmt(r.get('rest_seconds') if ok else None, '.2f')} | "
                                f"{_mean_max([q['nbytes'] for q in _growth_queries(r)], 1e3) if ok else '-'} | "
                                f"{_moved(r)}"))
    return lines


def _postgres_lines(rows, info) -> list:
    pg = [r for r in rows if r.get("part") == "postgres"]
    if not pg:
        return []
    load = info.get("postgres_load") or {}
    lines = ["", f"## PostgreSQL, {pg[0]['rows']:,} rows", ""]
    if load.get("status", "ok") == "ok" and load.get("rows"):
        lines += [
            f"- server: PostgreSQL {load.get('server_version', '?')} from `scripts/postgres_server.py` "
            f"(127.0.0.1, `fsync=off`, `shared_buffers=32MB`, max_parallel_workers_per_gather "
            f"{load.get('max_parallel_workers_per_gather', '?')})",
            f"- loading (not part of any fit): read the Parquet files {load['read_parquet_seconds']:.2f} s, "
            f"`load_table` (COPY) {load['copy_seconds']:.2f} s, `VACUUM ANALYZE` {load['vacuum_seconds']:.2f} s; "
            f"total {load['load_seconds']:.2f} s",
            f"- the data: {load['rows']:,} rows; Arrow table {load['arrow_nbytes'] / 1e6:.1f} MB; "
            f"`pg_total_relation_size('{TABLE}')` {load['pg_total_relation_size'] / 1e6:.1f} MB "
            f"(heap {load['pg_relation_size'] / 1e6:.1f} MB)",
            "",
        ]
    elif load:
        lines += [f"- loading failed: {load.get('status')}", ""]
    lines += [HEAD + "result rows/pass (mean / max) | result KB/pass (mean / max) | received KB/pass (mean / max) "
              "| sent KB/pass (max) | moved MB per fit | wire MB (loopback) | psycopg socket: received MB / sent MB "
              "| " + TAIL,
              RULE + "---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for r in pg:
        ok = _ok(r)
        gq = _growth_queries(r)
        calls = [c for c in r.get("run_pass_calls") or [] if c["task"] != "ProfileTask"]
        every = r.get("run_pass_calls") or []
        socket = "-"
        if ok and every and all("tcp_bytes_received" in c for c in every):
            socket = " / ".join(f"{sum(c[k] for c in every) / 1e6:.2f}"
                                for k in ("tcp_bytes_received", "tcp_bytes_sent"))
        loopback = r.get("loopback_bytes") if ok and r.get("source") == "postgres" else None
        lines.append(_table_row(r, rows, (
            f"{_mean_max([q['rows'] for q in gq], 1, ',.0f') if ok else '-'} | "
            f"{_mean_max([q['nbytes'] for q in gq], 1e3) if ok else '-'} | "
            f"{_mean_max([c.get('tcp_bytes_received') for c in calls], 1e3) if ok else '-'} | "
            f"{_fmt(max((c.get('tcp_bytes_sent') or 0) for c in calls) / 1e3 if ok and calls and 'tcp_bytes_sent' in calls[0] else None, '.1f')} | "
            f"{_moved(r)} | {_fmt(loopback / 1e6 if loopback is not None else None, '.2f')} | {socket}")))
    return lines


NOTES = [
    "",
    "Notes:",
    "",
    "- *transfer*: the SQL source's `transfer=`. `aggregates`: each pass that can be said as one aggregate query "
    "is pushed down and only its result comes back (one query per level); the root's pass encodes the rows into "
    "a temporary node table (`rainforest/node_tables.py`) that later levels read instead of the source, so "
    "*passes* (queries over the source) are 2. `rows`: the rows are streamed out as "
    "Arrow batches (PostgreSQL through the ADBC driver, on a second connection) into the local row store, so a "
    "`hybrid` tree takes 2 passes (profile, extract) whatever its depth.",
    "- *fit s*: wall-clock `fit(source, target=\"class\")` after an untimed 5,000-row warm-up fit on a source "
    "of the same kind in the same process (Numba kernels loaded, DuckDB/psycopg/ADBC set up), divided by the "
    "`parquet-read` fit on the same rows (*× parquet read*) and by the Parquet fit of the same algorithm "
    "(*× parquet same algorithm*: `parquet-read` or `parquet-hybrid`).",
    "- *passes*: `n_passes_`, profiling included. *profile s*: the profiling pass, timed around `source.run_pass`. "
    "*growth pass s*: mean of the growth passes over the data, from the `rainforest` logger's INFO lines "
    "(`level L, pass P over the data, ...: N rows in X.XXs`), divided by the same-algorithm Parquet fit's "
    "(*× parquet per pass*); pushed down, a level's line names the fit's node table and its time includes making "
    "that table where the level makes one. *× one GROUP BY scan*: that mean over the database's own floor, "
    "`SELECT class, count(*) FROM <the source> GROUP BY 1` run after the fit (median of 3). *in-memory passes*: RF-Hybrid's levels counted from the rows it keeps (no pass "
    "over the data). *rest s*: fit minus profile minus the logged growth passes (split finding, bookkeeping). "
    "The JSON keeps every pass's line, `fit_minus_growth_seconds` and every query and stream.",
    "- *result*: what `query_table` returned per growth pass (the aggregate result: one row per node, class "
    "and slot of each attribute, `GROUPING SETS`), its rows and its Arrow `nbytes` (nullable int64/float64 "
    "columns, so wider than the wire). *moved MB per fit*: what came back from the database over the fit, "
    "profiling included, as Arrow `nbytes`: the `query_table` results (`aggregates`) or every streamed batch "
    "(`rows`), to set against the data's size above.",
    "- *received* / *sent*: the bytes that crossed the psycopg connection while a pass ran (`TCP_INFO` "
    "`tcpi_bytes_received` / `tcpi_bytes_acked`): the aggregate result in PostgreSQL's text format and the "
    "query text (the tree so far and the bin edges compiled into `CASE`). Streamed rows do not cross that "
    "socket (ADBC's own connection, binary `COPY`): *wire MB (loopback)* sums the bytes received on the "
    "loopback interface while the passes ran, which counts every process on the machine: run on a quiet machine.",
    "- *same tree*: the tree's JSON (`tree_.to_json()`, node for node with counts) hashes equal to "
    "`parquet-read`'s on the same rows. *test accuracy*: `score` on the held-out Parquet rows. *peak RSS*: "
    "the fitting child's VmHWM (DuckDB runs in process, so its memory is counted; PostgreSQL's is not).",
    "",
]


def write_markdown(path: Path, rows, info) -> None:
    m = info["machine"]
    lines = [
        "# SQL benchmark: one tree on DuckDB and PostgreSQL (passes pushed down or rows streamed out) "
        "against the Parquet source",
        "",
        f"- command: `{info['command']}`",
        f"- date: {info['date']}",
        f"- machine: {m['cores']} cores ({m['usable_cores']} usable), {_fmt(m['ram_gb'], '.1f')} GB RAM, "
        f"{m['cpu']}; Python {m['python']}, {m['platform']}",
        f"- tree: `DecisionTreeClassifier(max_depth={info['depth']}, max_bins={MAX_BINS}, algorithm=...)`, "
        "default memory budget (1 GB), `n_jobs=-1`",
        f"- versions: {', '.join(f'{k} {v}' for k, v in info['versions'].items())}",
    ]
    for part in info["parts"]:
        d = part["data"]
        lines.append(f"- data ({part['part']}): Agrawal F{info['function']}, {d['rows']:,} training rows in "
                     f"{d['files']} Parquet files (`{d['train']}`, {d['parquet_bytes'] / 1e6:.1f} MB on disk), "
                     f"{d['test_rows']:,} held-out rows (`{d['test']}`)"
                     + (" (reused)" if d["reused"] else " (generated)"))
    lines += _duckdb_lines(rows, info) + _postgres_lines(rows, info) + NOTES
    path.write_text("\n".join(lines))


def draw_plot(axes, rows, info) -> str:
    ok = [r for r in rows if _ok(r)]
    labels = [f"{r['name']} {rows_label(r['rows'])}" for r in ok]
    colors = [COLORS.get(r["name"], "#888888") for r in ok]
    for ax, key, title in ((axes[0], "data_pass_seconds_mean", "time per growth pass over the data (s, mean)"),
                           (axes[1], "seconds", "fit time (s)")):
        vals = [r.get(key) or 0.0 for r in ok]
        ax.bar(range(len(vals)), vals, color=colors)
        for i, v in enumerate(vals):
            ax.annotate(f"{v:.2f}" if v < 10 else f"{v:.1f}", (i, v), textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize=8)
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(labels, fontsize=6, rotation=45, ha="right")  # up to 9 bars
        ax.set_title(title, fontsize=9)
    parts = ", ".join(f"{p['part']} {rows_label(p['data']['rows'])}" for p in info["parts"])
    return (f"one tree, SQL (pushed down or rows streamed out) vs Parquet: Agrawal F{info['function']}, "
            f"depth {info['depth']}, {MAX_BINS} bins; {parts} rows; {info['machine']['usable_cores']} cores")


# ---------------------------------------------------------------------------


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.parquet"))


def _dataset(args, rows: int) -> dict:
    test_rows = max(1, min(100_000, rows // 10))
    data_dir = Path(args.data_root) / f"agrawal_f{args.function}_{rows}_{args.files}"
    meta = harness.data_meta(rows, args.files, args.function, test_rows, 1)
    reused = harness.prepare_data(__file__, data_dir, meta)
    train, test = data_dir / "train", data_dir / "test"
    return {"rows": rows, "files": args.files, "test_rows": test_rows, "train_path": str(train),
            "test_path": str(test), "train": harness.shown(train), "test": harness.shown(test),
            "parquet_bytes": _folder_bytes(train), "reused": reused}


def _warm_file(path: Path) -> float:
    """Read ``path`` once (plain ``read``), as ``harness.warm_page_cache`` does for Parquet files."""
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.read(8 << 20):
            pass
    return time.perf_counter() - t0


def _run_one(args, name: str, part: str, data: dict, rows: list, url=None, database=None) -> dict:
    cache = None if SOURCE[name] == "postgres" else _warm_file(Path(database)) if database \
        else harness.warm_page_cache(Path(data["train_path"]))
    print(f"running {name} ({part}, {data['rows']:,} rows) ..."
          + (f" (page cache warmed in {cache:.1f} s)" if cache is not None else ""), flush=True)
    child_args = ["--train", data["train_path"], "--test", data["test_path"], "--function", str(args.function),
                  "--depth", str(args.depth)]
    child_args += (["--url", url] if url else []) + (["--database", database] if database else [])
    load_before = os.getloadavg()[0]
    row = harness.run_contender(__file__, name, child_args, args.timeout, "seconds")
    row = {"part": part, "rows": data["rows"], **row}
    row["loadavg_1min_before"], row["loadavg_1min_after"] = load_before, os.getloadavg()[0]
    row["cache_warm_seconds"] = cache
    rows.append(row)
    print(f"  {name}: status={row['status']} seconds={_fmt(row.get('seconds'), '.2f')} passes={row.get('passes')} "
          f"pass_mean={_fmt(row.get('data_pass_seconds_mean'), '.3f')} "
          f"same_tree={_same_tree(rows, row)} acc={_fmt(row.get('test_accuracy'), '.4f')}", flush=True)
    return row


def _not_run(rows: list, name: str, part: str, data: dict, why: str) -> None:
    rows.append({"part": part, "rows": data["rows"], "name": name, "status": f"not run: {why}", "seconds": None,
                 "passes": None, "test_accuracy": None, "peak_rss_mb": None})


def _run_builder(data: dict, args) -> dict:
    database = str(Path(data["train_path"]).parent / f"{TABLE}.duckdb")
    print(f"DuckDB database {database} ...", flush=True)
    built = harness.run_helper(__file__, "builder", ["--build-duckdb", database, "--train", data["train_path"]], args.timeout)
    if built["status"] == "ok":
        built["shown"] = harness.shown(Path(database))
        print("  reused (matching row count)" if built["reused"] else
              f"  built in {built['build_seconds']:.1f} s, {built['bytes'] / 1e6:.1f} MB", flush=True)
    return built


def _postgres_part(args, pg: list, data: dict, rows: list):
    """The PostgreSQL part: the Parquet baselines, then a server, the loaded table and the SQL contenders;
    returns the loading record (None when no SQL contender ran)."""
    for name in (c for c in pg if SOURCE[c] == "parquet"):
        _run_one(args, name, "postgres", data, rows)
    sql = [c for c in pg if SOURCE[c] == "postgres"]
    if not sql:
        return None
    sys.path.insert(0, str(harness.ROOT / "scripts"))
    from postgres_server import PostgresServer

    print("starting PostgreSQL ...", flush=True)
    t0 = time.perf_counter()
    with PostgresServer() as server:
        start = time.perf_counter() - t0
        print(f"  {server.url} in {start:.1f} s; loading {data['rows']:,} rows ...", flush=True)
        load = harness.run_helper(__file__, "loader", ["--load", server.url, "--train", data["train_path"],
                                      "--function", str(args.function)], args.timeout)
        load["server_start_seconds"] = start
        if load["status"] != "ok":
            for name in sql:
                _not_run(rows, name, "postgres", data, f"loading {load['status']}")
            return load
        print(f"  loaded in {load['load_seconds']:.1f} s (COPY {load['copy_seconds']:.1f} s, "
              f"VACUUM ANALYZE {load['vacuum_seconds']:.1f} s); table "
              f"{load['pg_total_relation_size'] / 1e6:.1f} MB", flush=True)
        for name in sql:
            _run_one(args, name, "postgres", data, rows, url=server.url)
    return load


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows-duckdb", type=int, default=10_000_000,
                   help="training rows of the DuckDB part (default 10000000; 0 skips the part)")
    p.add_argument("--rows-postgres", type=int, default=1_000_000,
                   help="training rows of the PostgreSQL part (default 1000000; 0 skips the part)")
    p.add_argument("--files", type=int, default=20, help="training Parquet files per data set (default 20)")
    p.add_argument("--function", type=int, default=7, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal classification function (default 7)")
    p.add_argument("--depth", type=int, default=10, help="max depth of the tree (default 10)")
    harness.add_common_options(p, CONTENDERS, 1800.0, "seconds per child (default 1800)", "sql")
    p.add_argument("--time-limit", type=float, dest="timeout", default=1800.0,
                   help="seconds per child, killed past it (same as --timeout; default 1800)")
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--database", help=argparse.SUPPRESS)
    p.add_argument("--load", help=argparse.SUPPRESS)
    p.add_argument("--build-duckdb", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    code = harness.internal_mode(args, lambda: _run(args.child, args), "seconds")
    if code is not None:
        return code
    if args.load or args.build_duckdb:  # the loader and builder children: one JSON line
        out = _load(args.load, args.train, args.function) if args.load else _build_duckdb(args.build_duckdb, args.train)
        print(json.dumps(out), flush=True)
        return 0

    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    for opt, n in (("--rows-duckdb", args.rows_duckdb), ("--rows-postgres", args.rows_postgres)):
        if n < 0 or (0 < n < args.files):
            p.error(f"{opt} must be 0 or at least --files")
    rows: list = []
    info_parts: list = []
    load = built = None

    duck = [c for c in DUCKDB_PART if c in contenders]
    if args.rows_duckdb and duck:
        data = _dataset(args, args.rows_duckdb)
        info_parts.append({"part": "duckdb", "data": data})
        if "duckdb-table-rows" in duck:  # built before any fit, so no fit shares the machine with it
            built = _run_builder(data, args)
        for name in duck:
            if SOURCE[name] == "duckdb-table" and built["status"] != "ok":
                _not_run(rows, name, "duckdb", data, f"building the database {built['status']}")
            else:
                _run_one(args, name, "duckdb", data, rows,
                         database=built["path"] if SOURCE[name] == "duckdb-table" else None)

    pg = [c for c in POSTGRES_PART if c in contenders]
    if args.rows_postgres and pg:
        data = _dataset(args, args.rows_postgres)
        info_parts.append({"part": "postgres", "data": data})
        load = _postgres_part(args, pg, data, rows)

    if not rows:
        p.error("nothing to run (check --contenders, --rows-duckdb and --rows-postgres)")
    for part in info_parts:
        part["data"] = {k: v for k, v in part["data"].items() if not k.endswith("_path")}
    if built:
        built.pop("path", None)  # absolute; "shown" says where
    info = {**harness.run_info(PACKAGES), "function": args.function, "depth": args.depth, "max_bins": MAX_BINS,
            "parts": info_parts, "postgres_load": load, "duckdb_table": built, "timeout": args.timeout}
    for r in rows:
        r["ratio_to_parquet_read"] = _ratio(rows, r)
        r["ratio_to_parquet_same_algorithm"] = _ratio(rows, r, same_algorithm=True)
        r["pass_ratio_to_parquet_read"] = _ratio(rows, r, "data_pass_seconds_mean")
        r["pass_ratio_to_parquet_same_algorithm"] = _ratio(rows, r, "data_pass_seconds_mean", True)
        r["same_tree_as_parquet_read"] = _same_tree(rows, r)
    harness.write_results(args.out, info, rows, write_markdown, draw_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
