#!/usr/bin/env python
"""Naive Bayes through PostgreSQL: one fit against the server's own one-scan floors.

For each training size the rows are loaded into a throw-away PostgreSQL server on loopback
(``scripts/postgres_server.py``; loading is not timed), and each contender runs in its own
process against the same table:

* ``postgres``          -- the floor: one scan summing every column the model reads,
  ``SELECT count(*), sum(salary), ..., sum(class) FROM agrawal`` (PostgreSQL's parallel workers);
* ``postgres-moments``  -- PostgreSQL's own per-class moments, what a Gaussian naive Bayes asks of
  a database: ``SELECT class, count(*), count(x), sum(x), sum(x * x), ... GROUP BY class``;
* ``rainforest-postgres`` -- ``NaiveBayesClassifier().fit(PostgresSource(url, table="agrawal",
  transfer="aggregates"))``: the pass is one aggregate query (:mod:`rainforest.bayes_sql`), only
  the counts and sums leave the server;
* ``rainforest-postgres-rows`` -- the same with ``transfer="rows"``: the rows stream out (ADBC,
  binary ``COPY``) and are folded here.

Each child times its contender ``--repeats`` times (the source's set-up included), the contenders
take turns for ``--rounds`` rounds, and the median of all of a contender's runs is reported, with
its ratio to both floors (``benchmarks/bench_bayes.py`` measures the same through DuckDB).

    python benchmarks/bench_bayes_postgres.py --rows 1000000,10000000 --repeats 3 --rounds 3

Writes ``<out>.md``, ``<out>.json`` and ``<out>.png`` (default ``benchmarks/results/bayes_postgres``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, SEED, fmt  # noqa: E402

CONTENDERS = ("postgres", "postgres-moments", "rainforest-postgres", "rainforest-postgres-rows")
FLOORS = CONTENDERS[:2]
COLORS = {"postgres": "#8c8c8c", "postgres-moments": "#c0c0c0", "rainforest-postgres": "#2a7f62",
          "rainforest-postgres-rows": "#8fd1b9"}
PACKAGES = ("rainforest", "numba", "pyarrow", "psycopg", "adbc-driver-postgresql")
ATTRIBUTES = ("salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan")
TABLE = "agrawal"
TEST_ROWS = 100_000
TARGET_RATIO = 1.5  # issue 25: naive Bayes within 1.5x of the database's own one-scan floor


def floor_sql() -> str:
    return f"SELECT count(*), {', '.join(f'sum({c})' for c in ATTRIBUTES + (LABEL,))} FROM {TABLE}"


def moments_sql() -> str:
    moments = ", ".join(f"count({c}), sum({c}), sum({c}::float8 * {c})" for c in ATTRIBUTES)
    return f"SELECT {LABEL}, count(*), {moments} FROM {TABLE} GROUP BY {LABEL}"


# ---------------------------------------------------------------------------
# children


def _load(url: str, train: str) -> dict:
    """Loader child: COPY the training files into ``agrawal``, then VACUUM ANALYZE."""
    import psycopg
    import pyarrow.parquet as pq
    sys.path.insert(0, str(harness.ROOT / "scripts"))
    from postgres_server import load_table

    t0 = time.perf_counter()
    load_table(url, TABLE, pq.read_table(train), replace=True)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {TABLE}")
        size = conn.execute(f"SELECT pg_total_relation_size('{TABLE}')").fetchone()[0]
    return {"load_seconds": time.perf_counter() - t0, "table_bytes": int(size)}


def _run_query(url: str, sql: str, repeats: int) -> dict:
    import psycopg
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT 1").fetchall()  # untimed set-up
        seconds, times, res = harness.timed_median(repeats, lambda: conn.execute(sql).fetchall())
        workers = conn.execute("SELECT current_setting('max_parallel_workers_per_gather')").fetchone()[0]
    count = int(res[0][0]) if sql == floor_sql() else int(sum(r[1] for r in res))
    return {"seconds": seconds, "all_seconds": times, "passes": 1, "count": count, "sql": sql,
            "parallel_workers_per_gather": int(workers)}


def _run_rainforest(url: str, test: str, function: int, repeats: int, transfer: str) -> dict:
    from rainforest import NaiveBayesClassifier
    from rainforest.datasets import agrawal_table
    from rainforest.storage import PostgresSource

    t0 = time.perf_counter()  # untimed: kernels loaded, the drivers imported and connected once
    warm = agrawal_table(5000, function=function, seed=SEED + 1)
    NaiveBayesClassifier().fit(warm, target=LABEL).predict(warm)
    NaiveBayesClassifier().fit(PostgresSource(url, table=TABLE, transfer=transfer), target=LABEL)
    warmup = time.perf_counter() - t0
    seconds, times, clf = harness.timed_median(repeats, lambda: NaiveBayesClassifier().fit(
        PostgresSource(url, table=TABLE, transfer=transfer), target=LABEL))  # the source's set-up timed too
    return {"seconds": seconds, "all_seconds": times, "passes": int(clf.n_passes_), "warmup_seconds": warmup,
            "count": int(sum(clf.class_count_)), "test_accuracy": float(clf.score(test, target=LABEL))}


def _child(args) -> dict:
    if args.child == "postgres":
        return _run_query(args.url, floor_sql(), args.repeats)
    if args.child == "postgres-moments":
        return _run_query(args.url, moments_sql(), args.repeats)
    transfer = "rows" if args.child.endswith("-rows") else "aggregates"
    return _run_rainforest(args.url, args.test, args.function, args.repeats, transfer)


# ---------------------------------------------------------------------------
# report


_ok = harness.finished  # a row that ran to the end, with its seconds


def _ratio(rows, r, floor: str):
    base = next((b["seconds"] for b in rows if b["rows"] == r["rows"] and b["name"] == floor and _ok(b)), None)
    return r["seconds"] / base if _ok(r) and base else None


def write_markdown(path: Path, rows, info) -> None:
    m = info["machine"]
    lines = [
        "# Naive Bayes through PostgreSQL: one fit against the server's one-scan floors", "",
        f"- command: `{info['command']}`", f"- date: {info['date']}",
        f"- machine: {m['usable_cores']} cores, {m['cpu']}; versions: "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items()),
        f"- server: `scripts/postgres_server.py` (127.0.0.1, PostgreSQL's defaults but `fsync=off`), "
        f"table `{TABLE}`; Agrawal F{info['function']}, " + "; ".join(
            f"{d['rows']:,} rows ({d['table_bytes'] / 1e6:.0f} MB in PostgreSQL, loaded in {d['load_seconds']:.1f} s)"
            for d in info["data"]),
        f"- median of every timed run: {info['repeats']} a process, {info['rounds']} round(s), contenders taking turns",
        "", "| rows | contender | seconds | × floor | × moments | passes | peak RSS MB | test accuracy | status |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r['rows']:,} | {r['name']} | {fmt(r.get('seconds'), '.3f')} | "
                     f"{fmt(_ratio(rows, r, 'postgres'), '.2f')} | {fmt(_ratio(rows, r, 'postgres-moments'), '.2f')} | "
                     f"{r.get('passes') or '-'} | {fmt(r.get('peak_rss_mb'), '.0f')} | "
                     f"{fmt(r.get('test_accuracy'), '.4f')} | {r.get('status')} |")
    verdicts = [f"{r['rows']:,} rows: {_ratio(rows, r, 'postgres'):.2f}× the floor, "
                f"{_ratio(rows, r, 'postgres-moments'):.2f}× the moments"
                for r in rows if r["name"] == "rainforest-postgres" and _ratio(rows, r, "postgres")
                and _ratio(rows, r, "postgres-moments")]
    lines += [
        "", "Notes:", "",
        f"- *floor*: `{floor_sql()}`, PostgreSQL's cheapest scan of every column the model reads "
        "(parallel workers as its settings allow). *moments*: "
        f"`{moments_sql()}`, the per-class counts, sums and sums of squares the model is made of.",
        f"- **Target (issue 25): naive Bayes through the database within {TARGET_RATIO}× its one-scan floor.** "
        f"rainforest-postgres (pushed down): {'; '.join(verdicts) or 'not run'}.",
        "- rainforest-postgres's query also maps NaN to missing and casts every attribute to float64, as the "
        "Parquet source's encoders read it (`rainforest/bayes_sql.py`); seconds include making the source "
        "(a connection, the table's schema).",
        "- *count*: the rows each contender saw (the floor's `count(*)`, the moments' and the model's class "
        "counts summed) agree: " + ("yes" if len({r.get("count") for r in rows if _ok(r)}) <= len(info["data"])
                                     else "NO") + ".",
    ]
    path.write_text("\n".join(lines) + "\n")


def draw_plot(axes, rows, info) -> str:
    harness.draw_bars_by_rows(axes, rows, CONTENDERS, COLORS, (("seconds", 1.0, "seconds (median)"),
                                                               ("peak_rss_mb", 1.0, "peak RSS (MB)")))
    return f"naive Bayes through PostgreSQL: Agrawal F{info['function']}, {info['machine']['usable_cores']} cores"


# ---------------------------------------------------------------------------
# parent


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="1000000,10000000", help="comma-separated training sizes")
    p.add_argument("--files", type=int, default=20, help="Parquet files of each training set (default 20)")
    p.add_argument("--function", type=int, default=1, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal classification function (default 1, as bench_bayes.py)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs in each child (default 3)")
    p.add_argument("--rounds", type=int, default=3, help="processes per contender, taking turns (default 3)")
    harness.add_common_options(p, CONTENDERS, 1800.0, "seconds per child (default 1800)", "bayes_postgres")
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--load", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    code = harness.internal_mode(args, lambda: _child(args), "seconds")
    if code is not None:
        return code
    if args.load:  # the loader child (a lean parent keeps the contenders' peak RSS their own): one JSON line
        print(json.dumps(_load(args.load, args.train)), flush=True)
        return 0
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    sizes = sorted(set(harness.parse_ints(args.rows, "row count", args.files)))
    sys.path.insert(0, str(harness.ROOT / "scripts"))
    from postgres_server import PostgresServer

    rows, data = [], []
    with PostgresServer() as server:
        for n in sizes:
            data_dir = Path(args.data_root) / f"agrawal_f{args.function}_{n}_{args.files}"
            harness.prepare_data(__file__, data_dir, harness.data_meta(n, args.files, args.function, TEST_ROWS, 1))
            train, test = data_dir / "train", data_dir / "test"
            print(f"loading {n:,} rows into {server.url} ...", flush=True)
            load = harness.run_helper(__file__, "loader", ["--load", server.url, "--train", str(train)],
                                      args.timeout)
            if load.get("status") != "ok":
                raise SystemExit(f"loading failed: {load.get('status')}")
            data.append({"rows": n, "train": harness.shown(train), "load_seconds": load["load_seconds"],
                         "table_bytes": load["table_bytes"]})
            runs = {name: [] for name in contenders}
            for turn in range(args.rounds):
                for name in contenders:
                    child_args = ["--train", str(train), "--test", str(test), "--function", str(args.function),
                                  "--repeats", str(args.repeats), "--url", server.url]
                    row = harness.run_contender(__file__, name, child_args, args.timeout, "seconds")
                    runs[name].append(row)
                    print(f"  round {turn + 1}, {name}: {row['status']} {fmt(row.get('seconds'), '.3f')} s", flush=True)
            rows += [{"rows": n, **harness.pooled_rounds(runs[name])} for name in contenders]

    info = {**harness.run_info(PACKAGES), "function": args.function, "repeats": args.repeats, "rounds": args.rounds,
            "data": data, "target_ratio": TARGET_RATIO}
    for r in rows:
        r["ratio_to_floor"] = _ratio(rows, r, "postgres")
        r["ratio_to_moments"] = _ratio(rows, r, "postgres-moments")
    harness.write_results(args.out, info, rows, write_markdown, draw_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
