#!/usr/bin/env python
"""SQL benchmark: one tree on DuckDB and PostgreSQL with the passes pushed down, against the Parquet source.

Two parts, every contender in its own child process (so its peak RSS is its own), all with
``DecisionTreeClassifier(max_depth=10, max_bins=255)`` on Agrawal data (function 7):

* DuckDB, at ``--rows-duckdb`` training rows (default 10,000,000, 20 Parquet files):

  - ``parquet-read``   -- ``storage.ParquetSource(train)``, ``algorithm="read"`` (the baseline);
  - ``duckdb-read``    -- ``storage.DuckDBSource(parquet=train)``, ``algorithm="read"``: every pass
    is one aggregate SQL query (``rainforest.pushdown``) that DuckDB runs over the same files;
  - ``parquet-hybrid`` -- ``ParquetSource(train)`` with the default ``algorithm="hybrid"``, for reference.

* PostgreSQL, at ``--rows-postgres`` training rows (default 1,000,000): the parent starts a
  throw-away server (``scripts/postgres_server.py``), a loader child copies the training Parquet
  files into the table ``agrawal`` (``load_table``, then ``VACUUM ANALYZE``; timed apart, not
  part of any fit), then

  - ``parquet-read``   -- ``ParquetSource`` on the same rows (baseline and reference tree);
  - ``postgres-read``  -- ``storage.PostgresSource(url, table="agrawal")``, ``algorithm="read"``;
    each pass's ``query_table`` results (the aggregates that come back) are weighed: rows, Arrow
    bytes, and the bytes that crossed the loopback interface while the pass ran.

Per contender: fit time, passes (``n_passes_``), the profiling pass's time, each growth pass's
time (parsed from the ``rainforest`` logger's INFO lines ``...: N rows in X.XXs (...)``), peak
RSS, accuracy on the held-out rows and whether the tree's JSON equals the ParquetSource
``read`` tree's on the same rows. Before each Parquet/DuckDB contender the parent reads every
training file once, so each starts from the same warm OS page cache; each child warms up
(Numba kernels, the source's set-up) with an untimed 5,000-row fit first.

    python benchmarks/bench_sql.py --rows-duckdb 10000000 --rows-postgres 1000000

Writes ``<out>.md``, ``<out>.json`` and ``<out>.png`` (``--out`` defaults to
``benchmarks/results/sql``). Data go to ``benchmarks/data/`` and are reused when their
``_meta.json`` matches.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, SEED, fmt as _fmt, vm_rss_mb as _vm_rss_mb  # noqa: E402
from harness import rows_label  # noqa: E402

CONTENDERS = ("parquet-read", "duckdb-read", "parquet-hybrid", "postgres-read")
SOURCE = {"parquet-read": "parquet", "duckdb-read": "duckdb", "parquet-hybrid": "parquet",
          "postgres-read": "postgres"}
ALGORITHM = {"parquet-read": "read", "duckdb-read": "read", "parquet-hybrid": "hybrid", "postgres-read": "read"}
DUCKDB_PART = ("parquet-read", "duckdb-read", "parquet-hybrid")
POSTGRES_PART = ("parquet-read", "postgres-read")
COLORS = {"parquet-read": "#6f6f6f", "duckdb-read": "#e6b800", "parquet-hybrid": "#b0b0b0",
          "postgres-read": "#336791"}
PACKAGES = ("rainforest", "numba", "pyarrow", "duckdb", "psycopg")
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


class _PassLog:
    """A ``logging.Handler`` on the ``rainforest`` logger that keeps each pass's INFO line."""

    def __init__(self):
        import logging

        class Handler(logging.Handler):
            def __init__(self, lines):
                super().__init__(logging.INFO)
                self.lines = lines

            def emit(self, record):
                self.lines.append(record.getMessage())

        self.lines: list = []
        self.handler = Handler(self.lines)
        self.logger = logging.getLogger("rainforest")

    def __enter__(self):
        import logging

        self.level = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)

    def passes(self) -> list:
        """``{"label", "kind" (data, memory, spill), "rows", "seconds"}`` per parsed line."""
        out = []
        for line in self.lines:
            m = PASS_LINE.match(line)
            if not m:
                continue
            label = m.group("label")
            kind = "data" if "over the data" in label else ("memory" if "kept in memory" in label else "spill")
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


def _meter(source, calls: list, queries: list) -> None:
    """Wrap ``source.run_pass`` (time and task of each pass; the bytes sent and received on a PostgreSQL
    source's connection, and on the loopback interface, while it ran) and, on a SQL source,
    ``source.query_table`` (rows, Arrow bytes and SQL length of each result), on the instance."""
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

    def weighed(sql, ordered=False):
        t0 = time.perf_counter()
        table = query_table(sql, ordered=ordered)
        queries.append({"pass": len(calls), "seconds": time.perf_counter() - t0, "rows": int(table.num_rows),
                        "nbytes": int(table.nbytes), "sql_bytes": len(sql.encode()), "ordered": bool(ordered)})
        return table

    source.query_table = weighed


def _make_source(kind: str, train: str, url: str | None, table: str):
    from rainforest.storage import DuckDBSource, ParquetSource, PostgresSource

    if kind == "parquet":
        return ParquetSource(train)
    if kind == "duckdb":
        return DuckDBSource(parquet=train)
    return PostgresSource(url, table=table)


def _warm_up(kind: str, algorithm: str, depth: int, function: int, url: str | None) -> float:
    """Untimed small fits: in memory (Numba kernels) and on a source of the contender's kind."""
    from rainforest import DecisionTreeClassifier
    from rainforest.datasets import agrawal_table, write_agrawal_parquet

    t0 = time.perf_counter()
    params = dict(max_depth=depth, max_bins=MAX_BINS, algorithm=algorithm)
    warm = agrawal_table(5000, function=function, seed=SEED + 1)
    DecisionTreeClassifier(**params).fit(warm, target=LABEL).predict(warm)
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "postgres":
            source = _make_source(kind, "", url, WARMUP_TABLE)
        else:
            write_agrawal_parquet(os.path.join(tmp, "w"), 5000, function=function, n_files=2, seed=SEED + 1)
            source = _make_source(kind, os.path.join(tmp, "w"), url, WARMUP_TABLE)
        DecisionTreeClassifier(**params).fit(source, target=LABEL)
        if hasattr(source, "close"):
            source.close()
    return time.perf_counter() - t0


def _run(name: str, args) -> dict:
    from rainforest import DecisionTreeClassifier

    kind, algorithm = SOURCE[name], ALGORITHM[name]
    row = {"source": kind, "algorithm": algorithm}
    row["warmup_seconds"] = _warm_up(kind, algorithm, args.depth, args.function, args.url)
    source = _make_source(kind, args.train, args.url, TABLE)
    if kind == "duckdb":
        row["duckdb_threads"] = int(source.query_table("SELECT current_setting('threads') AS t").column(0)[0].as_py())
    calls: list = []
    queries: list = []
    _meter(source, calls, queries)
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
        growth_passes=grow, run_pass_calls=calls, queries=queries,
        profile_seconds=sum(c["seconds"] for c in profile) if profile else None,
        data_pass_seconds_mean=sum(p["seconds"] for p in data) / len(data) if data else None,
        data_pass_seconds_total=sum(p["seconds"] for p in data),
        memory_passes=len(other), memory_pass_seconds_total=sum(p["seconds"] for p in other),
    )
    # the brief's "profile = fit - growth passes": profiling plus split finding and bookkeeping
    row["fit_minus_growth_seconds"] = row["seconds"] - sum(p["seconds"] for p in grow)
    if row["profile_seconds"] is not None:
        row["rest_seconds"] = row["fit_minus_growth_seconds"] - row["profile_seconds"]
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


def _ok(r) -> bool:
    return r.get("status") == "ok" and r.get("seconds") is not None


def _base(rows, r):
    return next((x for x in rows if x["name"] == "parquet-read" and x.get("part") == r.get("part") and _ok(x)), None)


def _ratio(rows, r, key="seconds"):
    b = _base(rows, r)
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


def write_markdown(path: Path, rows, info) -> None:
    m = info["machine"]
    lines = [
        "# SQL benchmark: one tree on DuckDB and PostgreSQL (passes pushed down) against the Parquet source",
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
    duck = [r for r in rows if r.get("part") == "duckdb"]
    if duck:
        n = duck[0]["rows"]
        lines += [
            "",
            f"## DuckDB, {n:,} rows",
            "",
            "| contender | source | algorithm | fit s | × parquet read | passes | profile s | growth pass s "
            "(mean) | × parquet per pass | in-memory passes (n / s) | rest s | result KB/pass (mean / max) "
            "| peak RSS MB | same tree | test accuracy | status |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
        ]
        for r in duck:
            ok = _ok(r)
            gq = _growth_queries(r)
            lines.append(
                f"| {r['name']} | {r.get('source', SOURCE[r['name']])} | {r.get('algorithm', ALGORITHM[r['name']])} | "
                f"{_fmt(r['seconds'] if ok else None, '.2f')} | {_fmt(_ratio(rows, r), '.2f')} | "
                f"{_fmt(r.get('passes') if ok else None, 'd')} | {_fmt(r.get('profile_seconds') if ok else None, '.2f')} | "
                f"{_fmt(r.get('data_pass_seconds_mean') if ok else None, '.2f')} | "
                f"{_fmt(_ratio(rows, r, 'data_pass_seconds_mean'), '.2f')} | "
                f"{(str(r['memory_passes']) + ' / ' + format(r['memory_pass_seconds_total'], '.2f')) if ok and r.get('memory_passes') else '-'} | "
                f"{_fmt(r.get('rest_seconds') if ok else None, '.2f')} | "
                f"{_mean_max([q['nbytes'] for q in gq], 1e3) if ok else '-'} | "
                f"{_fmt(r.get('peak_rss_mb'), '.0f')} | {_yes(_same_tree(rows, r))} | "
                f"{_fmt(r.get('test_accuracy') if ok else None, '.4f')} | {r['status']} |")
    pg = [r for r in rows if r.get("part") == "postgres"]
    if pg:
        n = pg[0]["rows"]
        load = info.get("postgres_load") or {}
        lines += [
            "",
            f"## PostgreSQL, {n:,} rows",
            "",
        ]
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
        else:
            lines += [f"- loading failed: {load.get('status')}", ""]
        lines += [
            "| contender | source | fit s | × parquet read | passes | profile s | growth pass s (mean) "
            "| × parquet per pass | result rows/pass (mean / max) | result KB/pass (mean / max) "
            "| received KB/pass (mean / max) | sent KB/pass (max) | all passes: result MB / received MB / sent MB "
            "| peak RSS MB | same tree | test accuracy | status |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
        ]
        for r in pg:
            ok = _ok(r)
            gq = _growth_queries(r)
            calls = [c for c in r.get("run_pass_calls") or [] if c["task"] != "ProfileTask"]
            sql_q = r.get("queries") or []
            every = r.get("run_pass_calls") or []
            totals = "-"
            if ok and sql_q:
                totals = " / ".join([f"{sum(q['nbytes'] for q in sql_q) / 1e6:.2f}"]
                                    + [f"{sum(c[k] for c in every) / 1e6:.2f}" if every and all(k in c for c in every)
                                       else "-" for k in ("tcp_bytes_received", "tcp_bytes_sent")])
            lines.append(
                f"| {r['name']} | {r.get('source', SOURCE[r['name']])} | {_fmt(r['seconds'] if ok else None, '.2f')} | "
                f"{_fmt(_ratio(rows, r), '.2f')} | {_fmt(r.get('passes') if ok else None, 'd')} | "
                f"{_fmt(r.get('profile_seconds') if ok else None, '.2f')} | "
                f"{_fmt(r.get('data_pass_seconds_mean') if ok else None, '.2f')} | "
                f"{_fmt(_ratio(rows, r, 'data_pass_seconds_mean'), '.2f')} | "
                f"{_mean_max([q['rows'] for q in gq], 1, ',.0f') if ok else '-'} | "
                f"{_mean_max([q['nbytes'] for q in gq], 1e3) if ok else '-'} | "
                f"{_mean_max([c.get('tcp_bytes_received') for c in calls], 1e3) if ok else '-'} | "
                f"{_fmt(max((c.get('tcp_bytes_sent') or 0) for c in calls) / 1e3 if ok and calls and 'tcp_bytes_sent' in calls[0] else None, '.1f')} | "
                f"{totals} | "
                f"{_fmt(r.get('peak_rss_mb'), '.0f')} | {_yes(_same_tree(rows, r))} | "
                f"{_fmt(r.get('test_accuracy') if ok else None, '.4f')} | {r['status']} |")
    lines += [
        "",
        "Notes:",
        "",
        "- *fit s*: wall-clock `fit(source, target=\"class\")` after an untimed 5,000-row warm-up fit on a source "
        "of the same kind in the same process (Numba kernels loaded, DuckDB/psycopg set up). *× parquet read* "
        "divides by the `parquet-read` fit on the same rows.",
        "- *passes*: `n_passes_`, the profiling pass included. *profile s*: the profiling pass, timed around "
        "`source.run_pass`. *growth pass s*: mean of the growth passes over the data, parsed from the "
        "`rainforest` logger's INFO lines (`level L, pass P over the data, ...: N rows in X.XXs`); "
        "*× parquet per pass* divides by `parquet-read`'s mean. *in-memory passes*: RF-Hybrid's levels counted "
        "from the rows it keeps in memory (no pass over the data). *rest s*: fit minus profile minus all "
        "logged growth passes (split finding, bookkeeping). The JSON keeps every pass's line, "
        "`fit_minus_growth_seconds` (fit minus the logged passes, i.e. profile + rest) and every query.",
        "- *result*: what `query_table` returned per growth pass (the aggregate result: one row per node, class "
        "and slot of each attribute, `GROUPING SETS`), its rows and its Arrow `nbytes` (nullable int64/float64 columns, so wider than the wire). *received* "
        "/ *sent*: the bytes that crossed the source's own TCP connection to the server while the pass ran "
        "(`TCP_INFO` `tcpi_bytes_received` / `tcpi_bytes_acked` of the psycopg socket): the result in "
        "PostgreSQL's text wire format, and the query text (the tree so far and the bin edges compiled into "
        "`CASE`). *all passes*: the three summed over every pass, profiling included, to set against the "
        "data's size above (what streaming the rows would move, once per pass). The JSON also has each pass's "
        "loopback-interface bytes (every process on the machine, so not used here) and the SQL text lengths.",
        "- *same tree*: the tree's JSON (`tree_.to_json()`, node for node with counts) hashes equal to "
        "`parquet-read`'s on the same rows. *test accuracy*: `score` on the held-out Parquet rows.",
        "- *peak RSS*: the fitting child's VmHWM (DuckDB runs in process, so its memory is counted; the "
        "PostgreSQL server's is not).",
        "",
    ]
    path.write_text("\n".join(lines))


def draw_plot(axes, rows, info) -> str:
    ok = [r for r in rows if _ok(r)]
    labels = [f"{r['name']}\n{rows_label(r['rows'])}" for r in ok]
    colors = [COLORS.get(r["name"], "#888888") for r in ok]
    for ax, key, title in ((axes[0], "data_pass_seconds_mean", "time per growth pass over the data (s, mean)"),
                           (axes[1], "seconds", "fit time (s)")):
        vals = [r.get(key) or 0.0 for r in ok]
        ax.bar(range(len(vals)), vals, color=colors)
        for i, v in enumerate(vals):
            ax.annotate(f"{v:.2f}" if v < 10 else f"{v:.1f}", (i, v), textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize=8)
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_title(title, fontsize=9)
    parts = ", ".join(f"{p['part']} at {rows_label(p['data']['rows'])} rows" for p in info["parts"])
    return (f"one tree, SQL pushdown vs Parquet: Agrawal F{info['function']}, depth {info['depth']}, "
            f"{MAX_BINS} bins; {parts}; {info['machine']['usable_cores']} cores")


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


def _run_one(args, name: str, part: str, data: dict, rows: list, url=None) -> dict:
    cache = None
    if SOURCE[name] != "postgres":
        cache = harness.warm_page_cache(Path(data["train_path"]))
    print(f"running {name} ({part}, {data['rows']:,} rows) ..."
          + (f" (page cache warmed in {cache:.1f} s)" if cache is not None else ""), flush=True)
    child_args = ["--train", data["train_path"], "--test", data["test_path"], "--function", str(args.function),
                  "--depth", str(args.depth)]
    if url:
        child_args += ["--url", url]
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


def _run_loader(url: str, data: dict, args) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--load", url, "--train", data["train_path"],
           "--function", str(args.function)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    out = None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                out = json.loads(line)
                break
            except ValueError:
                continue
    if proc.returncode != 0 or out is None:
        tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        print("  [loader stderr]\n" + "\n".join("    " + ln for ln in tail[-15:]), flush=True)
        return {"status": f"failed: exit code {proc.returncode}" + (f": {tail[-1][:200]}" if tail else "")}
    out["status"] = "ok"
    out["child_wall_seconds"] = time.perf_counter() - t0
    return out


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
    p.add_argument("--load", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        return harness.child(args.child, lambda: _run(args.child, args), "seconds")
    if args.generate:
        harness.generate(Path(args.generate), json.loads(args.meta))
        return 0
    if args.load:
        print(json.dumps(_load(args.load, args.train, args.function)), flush=True)
        return 0

    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    for opt, n in (("--rows-duckdb", args.rows_duckdb), ("--rows-postgres", args.rows_postgres)):
        if n < 0 or (0 < n < args.files):
            p.error(f"{opt} must be 0 or at least --files")
    rows: list = []
    info_parts: list = []
    load = None

    duck = [c for c in DUCKDB_PART if c in contenders]
    if args.rows_duckdb and duck:
        data = _dataset(args, args.rows_duckdb)
        info_parts.append({"part": "duckdb", "data": data})
        for name in duck:
            _run_one(args, name, "duckdb", data, rows)

    pg = [c for c in POSTGRES_PART if c in contenders]
    if args.rows_postgres and pg:
        data = _dataset(args, args.rows_postgres)
        info_parts.append({"part": "postgres", "data": data})
        if "parquet-read" in pg:
            _run_one(args, "parquet-read", "postgres", data, rows)
        if "postgres-read" in pg:
            sys.path.insert(0, str(harness.ROOT / "scripts"))
            from postgres_server import PostgresServer

            print("starting PostgreSQL ...", flush=True)
            t0 = time.perf_counter()
            with PostgresServer() as server:
                start = time.perf_counter() - t0
                print(f"  {server.url} in {start:.1f} s; loading {data['rows']:,} rows ...", flush=True)
                load = _run_loader(server.url, data, args)
                load["server_start_seconds"] = start
                if load["status"] == "ok":
                    print(f"  loaded in {load['load_seconds']:.1f} s (COPY {load['copy_seconds']:.1f} s, "
                          f"VACUUM ANALYZE {load['vacuum_seconds']:.1f} s); table "
                          f"{load['pg_total_relation_size'] / 1e6:.1f} MB", flush=True)
                    _run_one(args, "postgres-read", "postgres", data, rows, url=server.url)
                else:
                    rows.append({"part": "postgres", "rows": data["rows"], "name": "postgres-read",
                                 "status": f"not run: loading {load['status']}", "seconds": None, "passes": None,
                                 "test_accuracy": None, "peak_rss_mb": None})

    if not rows:
        p.error("nothing to run (check --contenders, --rows-duckdb and --rows-postgres)")
    for part in info_parts:
        part["data"] = {k: v for k, v in part["data"].items() if not k.endswith("_path")}
    info = {**harness.run_info(PACKAGES), "function": args.function, "depth": args.depth, "max_bins": MAX_BINS,
            "parts": info_parts, "postgres_load": load, "timeout": args.timeout}
    for r in rows:
        r["ratio_to_parquet_read"] = _ratio(rows, r)
        r["pass_ratio_to_parquet_read"] = _ratio(rows, r, "data_pass_seconds_mean")
        r["same_tree_as_parquet_read"] = _same_tree(rows, r)
    harness.write_results(args.out, info, rows, write_markdown, draw_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
