#!/usr/bin/env python
"""Naive Bayes benchmark: one pass over Parquet against the scan floor.

For each training size, measures

* ``duckdb``      -- the floor: DuckDB (its default threads) summing every column the naive
  Bayes model needs in one scan of the Parquet folder,
  ``SELECT count(*), sum(salary), ..., sum(class) FROM read_parquet('<folder>/*.parquet')``;
* ``duckdb-moments`` -- DuckDB's own per-class moments, the least a Gaussian naive Bayes asks of
  a database: ``SELECT class, count(*), count(salary), sum(salary), sum(salary * salary), ...
  GROUP BY class`` over the same folder (for reference: its ratio to the floor is what squares and
  a grouping cost DuckDB);
* ``rainforest``  -- ``NaiveBayesClassifier().fit(folder, target="class")``, one pass over the
  same folder (``n_passes_``), then its accuracy on held-out rows;
* ``rainforest-duckdb`` -- the same fit on ``DuckDBSource(parquet=folder, transfer="aggregates")``:
  the pass is one ``GROUPING SETS`` query that DuckDB runs over the files (only the counts and
  sums leave it: :mod:`rainforest.bayes_sql`);
* ``rainforest-duckdb-rows`` -- the same fit on ``DuckDBSource(parquet=folder, transfer="rows")``
  (the default): DuckDB streams the rows out as Arrow batches and rainforest folds them;

each in its own subprocess, so that the peak resident memory is per contender.

    python benchmarks/bench_bayes.py --rows 10000000,100000000 --files 20 --repeats 5 --rounds 3

A sub-second fit varies by a tenth from run to run on a shared machine, and the machine has
slow spells that last longer than a child: so each child times its contender ``--repeats``
times in a row (default 3), the contenders take turns for ``--rounds`` rounds (default 1), and
the median of all a contender's runs is reported, with each round's ratio to the floor (every
time is in the JSON).

Writes ``<out>.md`` (table), ``<out>.json`` (raw rows) and ``<out>.png``
(seconds and peak RSS against rows, when matplotlib is installed); ``--out``
defaults to ``benchmarks/results/bayes``. Data go to ``benchmarks/data/``
(git-ignored), are written file by file (streaming, bounded memory) and are
reused when their ``_meta.json`` matches.

As in ``bench_foundation.py``, the parent imports only the standard library and
generates the data in a subprocess too: on Linux a child's ``ru_maxrss`` starts
from its parent's peak, so a lean parent keeps the children's numbers honest.
Children report ``VmHWM`` as the peak, with ``ru_maxrss`` alongside.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, SEED, fmt as _fmt, vm_rss_mb as _vm_rss_mb  # noqa: E402
from harness import rows_label  # noqa: E402

CONTENDERS = ("duckdb", "duckdb-moments", "rainforest", "rainforest-duckdb", "rainforest-duckdb-rows")
LEARNERS = CONTENDERS[2:]  # the ways rainforest reads the files
COLORS = {"duckdb": "#8c8c8c", "duckdb-moments": "#c0c0c0", "rainforest": "#2a7f62", "rainforest-duckdb": "#7a4fa3",
          "rainforest-duckdb-rows": "#c9a0e8"}
PACKAGES = ("rainforest", "duckdb", "numba", "pyarrow")  # versions recorded in the results
#: Every column the naive Bayes model reads: the nine attributes and the label.
COLUMNS = ("salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan", LABEL)
TEST_ROWS = 100_000
TARGET_RATIO = 1.5  # rainforest's fit within 1.5x of the DuckDB scan


# ---------------------------------------------------------------------------
# data


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.parquet"))


# ---------------------------------------------------------------------------
# contenders (each runs in its own child process)


def _floor_sql(folder: str) -> str:
    glob = (folder.rstrip("/") + "/*.parquet").replace("'", "''")
    sums = ", ".join(f"sum({c})" for c in COLUMNS)
    return f"SELECT count(*), {sums} FROM read_parquet('{glob}')"


def _moments_sql(folder: str) -> str:
    glob = (folder.rstrip("/") + "/*.parquet").replace("'", "''")
    x = [c for c in COLUMNS if c != LABEL]
    moments = ", ".join(f"count({c}), sum({c}), sum({c} * {c})" for c in x)
    return f"SELECT {LABEL}, count(*), {moments} FROM read_parquet('{glob}') GROUP BY {LABEL}"


def _run_duckdb(train, test, function, repeats, sql_of=_floor_sql) -> dict:
    import duckdb

    con = duckdb.connect()  # in memory, default settings (threads = cores)
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    t0 = time.perf_counter()
    con.execute("SELECT count(*) FROM range(1000)").fetchall()  # untimed first-call set-up
    warmup = time.perf_counter() - t0
    sql = sql_of(os.path.abspath(train))
    rss0 = _vm_rss_mb()
    seconds, times, res = harness.timed_median(repeats, lambda: con.execute(sql).fetchall())
    con.close()
    row = {"seconds": seconds, "all_seconds": times, "passes": 1, "test_accuracy": None, "threads": int(threads),
           "warmup_seconds": warmup, "rss_before_fit_mb": rss0, "sql": sql}
    if sql_of is _floor_sql:
        n = int(res[0][0])
        row.update(count=n, class_1_fraction=float(res[0][-1]) / n if n else None)
    return row


def _run_rainforest(train, test, function, repeats, transfer=None) -> dict:
    from rainforest import NaiveBayesClassifier
    from rainforest.datasets import agrawal_table
    from rainforest.storage import DuckDBSource

    try:
        import numba
        threads = int(numba.config.NUMBA_NUM_THREADS)
    except ImportError:  # pragma: no cover - numba is a dependency
        threads = None

    # Warm-up: load (or compile and cache) any kernels outside the timed fit.
    t0 = time.perf_counter()
    warm = agrawal_table(5000, function=function, seed=SEED + 1)
    NaiveBayesClassifier().fit(warm, target=LABEL).predict(warm)
    warmup = time.perf_counter() - t0
    del warm

    rss0 = _vm_rss_mb()
    seconds, times, clf = harness.timed_median(repeats, lambda: NaiveBayesClassifier().fit(
        DuckDBSource(parquet=train, transfer=transfer) if transfer else train, target=LABEL))  # source timed too
    t1 = time.perf_counter()
    acc = float(clf.score(test, target=LABEL))
    score_seconds = time.perf_counter() - t1
    row = {"seconds": seconds, "all_seconds": times, "passes": int(clf.n_passes_), "test_accuracy": acc, "threads": threads,
           "warmup_seconds": warmup, "rss_before_fit_mb": rss0, "score_seconds": score_seconds}
    for attr in ("class_count_", "n_samples_seen_", "n_rows_"):  # whatever the model exposes, for the record
        val = getattr(clf, attr, None)
        if val is not None:
            try:
                row[attr] = val.tolist() if hasattr(val, "tolist") else val
                json.dumps(row[attr])
            except (TypeError, ValueError):
                row[attr] = repr(val)[:200]
    return row


RUNNERS = {"duckdb": _run_duckdb, "duckdb-moments": lambda *a: _run_duckdb(*a, sql_of=_moments_sql),
           "rainforest": _run_rainforest,
           "rainforest-duckdb": lambda *a: _run_rainforest(*a, transfer="aggregates"),
           "rainforest-duckdb-rows": lambda *a: _run_rainforest(*a, transfer="rows")}


# ---------------------------------------------------------------------------
# parent: run children, collect rows


def _cross_check(rows, n) -> None:
    """Every contender saw every row: DuckDB's count(*) against the sum of rainforest's class counts."""
    db = next((r for r in rows if r["rows"] == n and r["name"] == "duckdb" and _ok(r)), None)
    for rf in (r for r in rows if r["rows"] == n and r["name"] in LEARNERS and _ok(r)):
        if db is None or not isinstance(rf.get("class_count_"), list):
            continue
        seen = sum(rf["class_count_"])
        rf["rows_seen_match"] = abs(seen - db["count"]) < 0.5
        if not rf["rows_seen_match"]:
            print(f"  warning: {rf['name']}'s class counts add up to {seen:,.0f} rows, DuckDB counted "
                  f"{db['count']:,}", flush=True)


# ---------------------------------------------------------------------------
# report


def _round_ratios(runs: dict, name: str) -> list | None:
    """Each round's median against the floor's median of the same round."""
    if name == "duckdb" or "duckdb" not in runs or not all(_ok(r) for r in runs["duckdb"] + runs[name]):
        return None
    return [r["seconds"] / d["seconds"] for r, d in zip(runs[name], runs["duckdb"])]


_ok = harness.finished  # a row that ran to the end, with its seconds


def _floor(rows, n):
    return next((r["seconds"] for r in rows if r["rows"] == n and r["name"] == "duckdb" and _ok(r)), None)


def _ratio(rows, r):
    base = _floor(rows, r["rows"])
    return r["seconds"] / base if _ok(r) and base else None


def write_markdown(path: Path, rows, info) -> None:
    m = info["machine"]
    sizes = "; ".join(f"{d['rows']:,} rows, {d['train_bytes'] / 1e9:.2f} GB in `{d['train']}`" for d in info["data"])
    lines = [
        "# Naive Bayes benchmark: one pass over Parquet against the scan floor",
        "",
        f"- command: `{info['command']}`",
        f"- date: {info['date']}",
        f"- machine: {m['cores']} cores ({m['usable_cores']} usable), {_fmt(m['ram_gb'], '.1f')} GB RAM, "
        f"{m['cpu']}; Python {m['python']}, {m['platform']}",
        f"- data: Agrawal function {info['function']}, {info['files']} Parquet files per size "
        f"({sizes}); "
        f"{TEST_ROWS:,} held-out test rows per size (the stream's next rows, `start=rows`, in the sibling `test` folder)",
        f"- versions: {', '.join(f'{k} {v}' for k, v in info['versions'].items())}",
        "",
        f"Seconds are the median of all timed runs of a contender: {info.get('repeats', 1)} in each of its "
        f"processes, one process per round, {info.get('rounds', 1)} round(s), the contenders taking turns "
        "(a slow spell of the shared machine then falls on all of them).",
        "",
        "| rows | contender | seconds | × DuckDB floor | passes | peak RSS MB | test accuracy | status |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ok = _ok(r)
        lines.append(f"| {r['rows']:,} | {r['name']} | {_fmt(r['seconds'] if ok else None, '.2f')} | "
                     f"{_fmt(_ratio(rows, r), '.2f')} | {_fmt(r.get('passes') if ok else None, 'd')} | "
                     f"{_fmt(r.get('peak_rss_mb'), '.0f')} | "
                     f"{_fmt(r.get('test_accuracy') if ok else None, '.4f')} | {r['status']} |")

    verdicts, reference = [], []
    for n in info["rows_list"]:
        for name in LEARNERS:
            rf = next((r for r in rows if r["rows"] == n and r["name"] == name), None)
            if rf is None:
                continue
            ratio = _ratio(rows, rf)
            per_round = ", ".join(f"{x:.2f}" for x in rf.get("round_ratios") or [])
            notes = ([("met" if ratio <= TARGET_RATIO else "missed")] if name == "rainforest" and ratio else []) + (
                [f"round by round {per_round}"] if per_round else [])
            shown = "not measured" if ratio is None else f"{ratio:.2f}×" + (f" ({'; '.join(notes)})" if notes else "")
            (verdicts if name == "rainforest" else reference).append(
                f"{n:,} rows: {shown}" if name == "rainforest" else f"{name} at {n:,} rows: {shown}")
    against_moments = []
    for n in info["rows_list"]:
        dm = next((r for r in rows if r["rows"] == n and r["name"] == "duckdb-moments" and _ok(r)), None)
        rd = next((r for r in rows if r["rows"] == n and r["name"] == "rainforest-duckdb" and _ok(r)), None)
        if dm is not None:
            against_moments.append(f"{n:,} rows: {_ratio(rows, dm):.2f}× the floor" + (
                f", and rainforest-duckdb takes {rd['seconds'] / dm['seconds']:.2f}× it" if rd else ""))
    lines += [
        "",
        "Notes:",
        "",
        "- duckdb-moments is DuckDB's own per-class `count`, `sum` and sum of squares of every attribute "
        f"(`{_moments_sql('<folder>')}`), the least a Gaussian naive Bayes asks of it: "
        f"{'; '.join(against_moments) or 'not run'}.",
        f"- **Target: rainforest's naive Bayes fit on the Parquet folder within {TARGET_RATIO:g}× of the "
        f"DuckDB floor.** Measured: {'; '.join(verdicts) or 'not run'}.",
        "- For reference, the fit through `DuckDBSource` (rainforest-duckdb: DuckDB computes the "
        "per-class moments itself; rainforest-duckdb-rows: DuckDB streams the rows out): "
        f"{'; '.join(reference) or 'not run'}.",
        "- The floor is DuckDB (default settings, "
        + ", ".join(sorted({f"{r['threads']} threads" for r in rows if r["name"] == "duckdb"
                            and r.get("threads") is not None})) +
        ") running one aggregate over every column the model needs, in one scan of the training "
        f"folder: `{_floor_sql('<folder>')}`. It decodes the same Parquet columns and does the least "
        "arithmetic on them, so no single-pass learner reading these files is expected to beat it by much.",
        "- rainforest times `NaiveBayesClassifier().fit(folder, target=\"class\")` (default "
        "`alpha=1.0, numeric=\"gaussian\"`), streaming the Parquet files itself; `passes` is its "
        "`n_passes_`. For DuckDB `passes` is the one scan of the query.",
        "- rainforest-duckdb times the same fit on `DuckDBSource(parquet=folder, transfer=\"aggregates\")` "
        "(the source's set-up included): its one pass is a `GROUPING SETS` query (class counts, per-class "
        "`count`, `sum` and sum of squares of every numeric attribute; a second query, of differences from "
        "the class means, only where those sums would cancel) that DuckDB runs over the same files. "
        "rainforest-duckdb-rows (`transfer=\"rows\"`, the default) streams the rows out of DuckDB as Arrow "
        "batches and folds them as the Parquet source's.",
        "- Before each contender the parent reads every training file once with plain `read` calls, so "
        "both start from the same warm OS page cache (page-cache pages do not count towards any "
        "process's RSS). Where the data exceed the free RAM the second reader gains little from it.",
    ]
    checks = [r["rows_seen_match"] for r in rows if "rows_seen_match" in r]
    if checks:
        lines.append("- Rows seen: rainforest's class counts add up to DuckDB's `count(*)` "
                     + ("at every size." if all(checks) else "**not** at every size (see the JSON)."))
    warm = ", ".join(f"{r['name']} {rows_label(r['rows'])} {r['warmup_seconds']:.2f} s" for r in rows
                     if r.get("warmup_seconds") is not None)
    lines.append("- Each child first does untimed set-up in the same process: DuckDB a trivial query on "
                 "its connection; rainforest a fit and predict on 5,000 other Agrawal rows from an "
                 "in-memory pyarrow table (loading or compiling its kernels)" + (f" ({warm})" if warm else "")
                 + ".")
    base_rss = ", ".join(f"{r['name']} {rows_label(r['rows'])} {r['rss_before_fit_mb']:.0f} MB" for r in rows
                         if r.get("rss_before_fit_mb") is not None)
    if base_rss:
        lines.append(f"- Resident memory just before the timed part (imports and warm-up): {base_rss}.")
    lines += [
        "- Each contender runs in its own process; peak RSS is that process's high-water mark (VmHWM, "
        "`ru_maxrss` alongside in the JSON), imports, warm-up and (rainforest) the test scoring included.",
        f"- Test accuracy: rainforest's `score` on the {TEST_ROWS:,} held-out rows, after the timed fit.",
        "",
    ]
    path.write_text("\n".join(lines))


def draw_plot(axes, rows, info) -> str:
    """Time and peak RSS against rows, one line per contender, on the two ``axes``; returns the title."""
    panels = [("seconds", "time (s, Parquet read included)", "{:.2f}"), ("peak_rss_mb", "peak RSS (MB)", "{:.0f}")]
    names = [c for c in CONTENDERS if any(r["name"] == c for r in rows)]
    for ax, (key, title, fmt) in zip(axes, panels):
        for name in names:
            pts = [(r["rows"], r[key]) for r in rows if r["name"] == name and r.get(key) is not None
                   and (key == "peak_rss_mb" or _ok(r))]
            if not pts:
                continue
            xs, ys = zip(*pts)
            label = "DuckDB floor" if name == "duckdb" else name
            ax.plot(xs, ys, marker="o", color=COLORS.get(name, "#888888"), label=label)
            for x, y in pts:
                ax.annotate(fmt.format(y), (x, y), textcoords="offset points", xytext=(0, 6), ha="center",
                            fontsize=8)
        ax.set_title(title)
        ax.set_xlabel("training rows")
        if len(info["rows_list"]) > 1:
            ax.set_xscale("log")
            if key == "seconds":
                ax.set_yscale("log")
        ax.set_xticks(info["rows_list"])
        ax.set_xticklabels([rows_label(n) for n in info["rows_list"]])
        ax.minorticks_off()
        ax.margins(x=0.1, y=0.15)
        if key == "peak_rss_mb":
            ax.set_ylim(bottom=0)
        ax.legend(fontsize=9)
    return (f"naive Bayes, one pass: Agrawal F{info['function']}, {info['files']} files, "
            f"{info['machine']['usable_cores']} cores")


# ---------------------------------------------------------------------------


def _parse_rows(text: str) -> list[int]:
    rows = sorted(set(harness.parse_ints(text, "row count", 1)))
    if not rows:
        raise argparse.ArgumentTypeError("give at least one row count")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=_parse_rows, default=_parse_rows("10000000,100000000"),
                   help="comma-separated training sizes (default 10000000,100000000)")
    p.add_argument("--files", type=int, default=20, help="Parquet files of each training set (default 20)")
    p.add_argument("--function", type=int, default=1, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal classification function (default 1)")
    p.add_argument("--repeats", type=int, default=3,
                   help="timed runs of each contender in its process (default 3)")
    p.add_argument("--rounds", type=int, default=1,
                   help="fresh processes per contender, contenders alternating; the median of all "
                        "their timed runs is reported (default 1)")
    harness.add_common_options(p, CONTENDERS, 3600.0, "seconds per contender and size (default 3600)", "bayes")
    args = p.parse_args(argv)

    code = harness.internal_mode(args, lambda: RUNNERS[args.child](args.train, args.test, args.function, args.repeats), "seconds")
    if code is not None:
        return code

    if args.repeats < 1 or args.rounds < 1:
        p.error("--repeats and --rounds must be at least 1")
    if args.files < 1 or args.files > min(args.rows):
        p.error("--files must be between 1 and the smallest --rows")
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)

    rows, data = [], []
    for n in args.rows:
        data_dir = Path(args.data_root) / f"agrawal_f{args.function}_{n}_{args.files}"
        meta = harness.data_meta(n, args.files, args.function, TEST_ROWS, 1)
        reused = harness.prepare_data(__file__, data_dir, meta)
        train, test = data_dir / "train", data_dir / "test"
        size = _folder_bytes(train)
        data.append({"rows": n, "train": harness.shown(train), "test": harness.shown(test),
                     "train_bytes": size, "reused": reused})
        runs = {name: [] for name in contenders}
        for turn in range(args.rounds):  # contenders alternate, so a slow spell of the machine hits all
            for name in contenders:
                cache = harness.warm_page_cache(train)
                print(f"round {turn + 1}/{args.rounds}: running {name} on {n:,} rows "
                      f"(page cache warmed in {cache:.1f} s) ...", flush=True)
                child_args = ["--train", str(train), "--test", str(test), "--function", str(args.function),
                              "--repeats", str(args.repeats)]
                row = harness.run_contender(__file__, name, child_args, args.timeout, "seconds")
                runs[name].append({**row, "cache_warm_seconds": cache})
                print(f"  {name}: status={row['status']} seconds={_fmt(row.get('seconds'), '.2f')} "
                      f"passes={row.get('passes')} peak_rss={_fmt(row.get('peak_rss_mb'), '.0f')} MB "
                      f"acc={_fmt(row.get('test_accuracy'), '.4f')}", flush=True)
        for name in contenders:
            rows.append({"rows": n, **harness.pooled_rounds(runs[name])})
        _cross_check(rows, n)
        for row in rows[-len(contenders):]:
            row["round_ratios"] = _round_ratios(runs, row["name"])
            print(f"  {row['name']}, {n:,} rows: median {_fmt(row.get('seconds'), '.2f')} s over "
                  f"{len(row.get('all_seconds') or [])} runs (x floor {_fmt(_ratio(rows, row), '.2f')})", flush=True)

    info = {
        **harness.run_info(PACKAGES),
        "rows_list": args.rows, "files": args.files, "function": args.function, "test_rows": TEST_ROWS,
        "timeout": args.timeout, "repeats": args.repeats, "rounds": args.rounds, "target_ratio": TARGET_RATIO, "floor_sql": _floor_sql("<folder>"),
        "data": data,
    }
    for r in rows:
        r["ratio_to_floor"] = _ratio(rows, r)
    harness.write_results(args.out, info, rows, write_markdown, draw_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
