"""Exact trees on columns whose values cross zero: key bins with the gap around zero closed, or not.

A keyed column (more than a million distinct values) is counted in bins over ranges of its values'
keys (``rainforest.value_keys``).  Between -1 and 1 lie a thousand binades of floats, so a column
whose values cross zero had nearly all its ranges on values near zero, few bins where its values
are, and many rows gathered.  ``KeyBins`` now closes the widest step between two bin edges; this
benchmark fits the same depth-``--depth`` exact tree both ways, each in its own child process:

* ``closed`` -- ``DecisionTreeClassifier(max_bins=None)`` as it is;
* ``spread`` -- the same with ``value_keys.widest_gap`` answering "no gap" (the ranges as before).

The data: ``--rows`` rows of ``--columns`` standard-normal columns in 8 Parquet files (seed 5), the
class a noisy sign of ``x0 + 0.5 x1 x2 - 0.3 x3``, written once under ``--data-root``.  The table
says whether both built the same tree (JSON), and the rows each gathered (``candidate rows``)::

    python benchmarks/bench_key_gap.py                       # 8M rows, 4 columns
    python benchmarks/bench_key_gap.py --rows 1000000 --out /tmp/key_gap   # a check

Writes ``<out>.md``, ``<out>.json`` and ``<out>.png`` (default ``benchmarks/results/key_gap``).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import fmt, rows_label  # noqa: E402

CONTENDERS = ("closed", "spread")
PACKAGES = ("rainforest", "numba", "pyarrow")
COLORS = {"closed": "#2a7f62", "spread": "#dd8452"}
FILES, SEED, LABEL = 8, 5, "class"


def make_data(folder: Path, n_rows: int, n_columns: int) -> None:
    """The benchmark's Parquet files (once: a folder whose ``_meta.json`` matches is kept)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    meta = {"rows": n_rows, "columns": n_columns, "files": FILES, "seed": SEED}
    stamp = folder / "_meta.json"
    if stamp.exists() and json.loads(stamp.read_text()) == meta:
        return
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    for p in range(FILES):
        n = n_rows // FILES + (1 if p < n_rows % FILES else 0)
        X = rng.standard_normal((n, n_columns))
        score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] - 0.3 * X[:, 3] + 0.5 * rng.standard_normal(n)
        table = {f"x{j}": X[:, j] for j in range(n_columns)}
        table[LABEL] = (score > 0).astype(np.int64)
        pq.write_table(pa.table(table), folder / f"part-{p}.parquet")
    stamp.write_text(json.dumps(meta))


def run(args) -> dict:
    import pyarrow.parquet as pq
    from rainforest import DecisionTreeClassifier, value_keys
    if args.child == "spread":
        value_keys.widest_gap = lambda u: (0, 0)
    warm = pq.read_table(Path(args.train) / "part-0.parquet").slice(0, 100_000)
    t0 = time.perf_counter()
    with harness.keyed_columns():  # the keyed kernels, spilled, loaded outside the timed fit
        DecisionTreeClassifier(max_bins=None, max_depth=4, memory_budget="8MB").fit(warm, target=LABEL)
    warmup = time.perf_counter() - t0
    clf = DecisionTreeClassifier(max_bins=None, max_depth=args.depth)
    t0 = time.perf_counter()
    clf.fit(args.train, target=LABEL)
    fit = time.perf_counter() - t0
    Path(args.model).write_text(clf.tree_.to_json())
    stats = clf.grow_stats_
    return {"fit_seconds": fit, "passes": int(clf.n_passes_), "warmup_seconds": warmup,
            "n_nodes": int(clf.tree_.node_count), "candidate_rows": stats.candidate_rows,
            "spill_bytes": stats.spill_bytes}


def write_markdown(path: Path, rows, info) -> None:
    lines = ["# Exact trees on columns crossing zero: key bins with the gap closed or spread", "",
             f"Depth {info['depth']}, {info['columns']} standard-normal columns. `{info['command']}` on "
             f"{info['machine'].get('cpu', '?')}, {info['machine'].get('usable_cores', '?')} cores ({info['date']}).",
             "", "| rows | contender | status | seconds | passes | peak RSS (MB) | nodes | candidate rows | "
             "same tree as spread |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {rows_label(r['rows'])} | {r['name']} | {r.get('status')} | "
                     f"{fmt(r.get('fit_seconds'), '.2f')} | {fmt(r.get('passes'), 'd')} | "
                     f"{fmt(r.get('peak_rss_mb'), '.0f')} | {fmt(r.get('n_nodes'), 'd')} | "
                     f"{fmt(r.get('candidate_rows'), ',d')} | {r.get('same_tree', '-')} |")
    lines += ["", "`candidate rows`: the rows the exact search gathered from candidate bins, over all levels."]
    path.write_text("\n".join(lines) + "\n")


def draw(axes, rows, info) -> str:
    """Fit seconds (left) and candidate rows gathered (right), bars grouped by row count."""
    harness.draw_bars_by_rows(axes, rows, CONTENDERS, COLORS, (("fit_seconds", 1.0, "fit seconds"),
                                                               ("candidate_rows", 1e-6, "candidate rows (millions)")))
    return f"Exact trees on columns crossing zero: key bins' gap closed or spread (depth {info['depth']})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--rows", type=lambda s: harness.parse_ints(s, "row count", 1000), default=[8_000_000])
    p.add_argument("--columns", type=int, default=4, help="standard-normal columns (at least 4; default 4)")
    p.add_argument("--depth", type=int, default=10, help="maximum tree depth (default 10)")
    harness.add_common_options(p, CONTENDERS, 1800.0, "seconds per child process (default 1800)", "key_gap")
    p.add_argument("--model", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.columns < 4:
        p.error("--columns: at least 4 (the class uses four)")
    code = harness.internal_mode(args, lambda: run(args), "fit_seconds")
    if code is not None:
        return code
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    info = {**harness.run_info(PACKAGES), "rows_list": args.rows, "columns": args.columns, "depth": args.depth,
            "timeout": args.timeout, "contenders": contenders}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-key-gap-") as models:
        for n in args.rows:
            data = Path(args.data_root) / f"signed_normal_{n}_{args.columns}"
            make_data(data, n, args.columns)
            child_args = ["--depth", str(args.depth), "--train", str(data)]
            found = harness.run_compared(__file__, contenders, child_args, args.timeout, "fit_seconds", models,
                                         str(n), ("closed", "spread"), "same_tree", rows_label(n))
            rows += [{**r, "rows": n} for r in found]
    harness.write_results(args.out, info, rows, write_markdown, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
