#!/usr/bin/env python
"""BOAT benchmark: the exact tree in two passes, against exact RainForest and scikit-learn.

For every Agrawal function (``--functions``, default F1, F6, F7) and training size (``--rows``,
default 10M and 100M rows) fits, each in its own child process (killed after ``--time-limit``):

* ``boat``             -- ``BoatClassifier(max_depth=--depth)`` on the Parquet folder (passes, failures reported);
* ``rainforest-exact`` -- ``DecisionTreeClassifier(max_bins=None, max_depth=--depth)`` (RF-Hybrid, exact);
* ``sklearn``          -- scikit-learn's exact ``DecisionTreeClassifier(max_depth=--depth)``, rows read into numpy;
* ``boat-update``      -- a BOAT fit, then ``update(inserted=1 % more rows)``: the update's time against the fit's
  (a rebuild), and whether the updated tree equals a fresh BOAT fit on the changed data (at sizes up to
  ``--check-update-rows``).

Fit times include reading the data. Writes ``<out>.md``, ``<out>.json`` and ``<out>.png``
(default ``benchmarks/results/boat``).

    python benchmarks/bench_boat.py                          # the full grid (the lead's run)
    python benchmarks/bench_boat.py --rows 200000 --functions 1 --out /tmp/boat_small   # a check
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, ROOT, SEED, fmt, rows_label  # noqa: E402

CONTENDERS = ("boat", "rainforest-exact", "sklearn", "boat-update")
PACKAGES = ("rainforest", "numba", "pyarrow", "scikit-learn")
COLORS = {"boat": "#2a7f62", "rainforest-exact": "#7fbf7b", "sklearn": "#4c72b0", "boat-update": "#dd8452"}


# BOAT's options the command line passes on: (argument's name, its option, BoatClassifier's keyword)
BOAT_OPTIONS = (("memory_budget", "--memory-budget", "memory_budget"), ("work_dir", "--work-dir", "spill_dir"),
                ("max_family_rows", "--max-family-rows", "max_family_rows"))


def _boat(args):
    from rainforest.boat import BoatClassifier
    return BoatClassifier(max_depth=args.depth, **{keyword: getattr(args, arg) for arg, _, keyword in BOAT_OPTIONS
                                                   if getattr(args, arg)})


def _warm(args) -> float:
    """Compile (or load) the Numba kernels outside the timed fit."""
    from rainforest.boat import BoatClassifier
    from rainforest.datasets import agrawal_table
    t0 = time.perf_counter()
    warm = agrawal_table(5000, function=args.function, seed=SEED + 1)
    with BoatClassifier(max_depth=args.depth, max_family_rows=500, sample_size=2000, n_bootstrap=3) as clf:
        clf.fit(warm, target=LABEL)
        clf.update(inserted=warm.slice(0, 50))
    return time.perf_counter() - t0


def run_boat(args) -> dict:
    warmup = _warm(args)
    clf = _boat(args)
    t0 = time.perf_counter()
    clf.fit(args.train, target=LABEL)
    fit = time.perf_counter() - t0
    row = {"fit_seconds": fit, "passes": int(clf.n_passes_), "warmup_seconds": warmup,
           "verification_failures": clf.n_verification_failures_, "rebuilt_subtrees": clf.n_rebuilt_subtrees_,
           "coarse_nodes": clf.n_coarse_nodes_, "frontier_subtrees": clf.n_frontier_subtrees_,
           "work_reads": clf.n_work_reads_, "work_rows_read": clf.n_work_rows_read_,
           "test_accuracy": float(clf.score(args.test, target=LABEL)), "n_nodes": int(clf.tree_.node_count)}
    clf.close()
    return row


def run_exact(args) -> dict:
    from rainforest import DecisionTreeClassifier
    from rainforest.datasets import agrawal_table
    kw = {"max_depth": args.depth, "max_bins": None}
    if args.memory_budget:
        kw["memory_budget"] = args.memory_budget
    t0 = time.perf_counter()
    DecisionTreeClassifier(**kw).fit(agrawal_table(5000, function=args.function, seed=SEED + 1), target=LABEL)
    warmup = time.perf_counter() - t0
    clf = DecisionTreeClassifier(**kw)
    t0 = time.perf_counter()
    clf.fit(args.train, target=LABEL)
    fit = time.perf_counter() - t0
    return {"fit_seconds": fit, "passes": int(clf.n_passes_), "warmup_seconds": warmup,
            "test_accuracy": float(clf.score(args.test, target=LABEL)), "n_nodes": int(clf.tree_.node_count)}


def run_sklearn(args) -> dict:
    from bench_foundation import _read_xy
    from sklearn.tree import DecisionTreeClassifier
    t0 = time.perf_counter()
    X, y = _read_xy(args.train)
    clf = DecisionTreeClassifier(max_depth=args.depth, random_state=0).fit(X, y)
    fit = time.perf_counter() - t0
    del X, y
    Xt, yt = _read_xy(args.test)
    return {"fit_seconds": fit, "passes": None, "test_accuracy": float(clf.score(Xt, yt)),
            "n_nodes": int(clf.tree_.node_count)}


def run_update(args) -> dict:
    import pyarrow.parquet as pq

    from rainforest.datasets import agrawal_table
    warmup = _warm(args)
    folder = tempfile.mkdtemp(prefix="bench-boat-")
    try:
        n_new = max(1, args.rows // 100)
        extra = os.path.join(folder, "inserted.parquet")
        pq.write_table(agrawal_table(n_new, function=args.function, seed=SEED, start=10 ** 12), extra)
        clf = _boat(args)
        t0 = time.perf_counter()
        clf.fit(args.train, target=LABEL)
        fit = time.perf_counter() - t0
        refiled = clf.n_refiled_rows_
        t0 = time.perf_counter()
        clf.update(inserted=extra)
        update = time.perf_counter() - t0
        row = {"fit_seconds": update, "rebuild_seconds": fit, "update_ratio": update / fit, "passes": int(clf.n_passes_),
               "inserted_rows": n_new, "verification_failures": clf.n_verification_failures_,
               "rebuilt_subtrees": clf.n_rebuilt_subtrees_, "frontier_subtrees": clf.n_frontier_subtrees_,
               "work_reads": clf.n_work_reads_, "work_rows_read": clf.n_work_rows_read_,
               "fit_refiled_rows": refiled, "update_regrown_rows": clf.n_regrown_rows_,
               "warmup_seconds": warmup, "equals_rebuild": None,
               "fit_and_update_peak_rss_mb": harness.vm_hwm_mb()}  # before the fresh fit the check adds
        if args.rows <= args.check_update_rows:
            from rainforest.storage import ParquetSource
            fresh = _boat(args).fit(ParquetSource([str(p) for p in sorted(Path(args.train).glob("*.parquet"))]
                                                  + [extra]), target=LABEL)
            row["equals_rebuild"] = fresh.tree_.to_dict() == clf.tree_.to_dict()
            fresh.close()
        clf.close()
        return row
    finally:
        shutil.rmtree(folder, ignore_errors=True)


RUNNERS = {"boat": run_boat, "rainforest-exact": run_exact, "sklearn": run_sklearn, "boat-update": run_update}


def peak(row: dict) -> str:
    """The child's peak RSS; for an update, that of its fit and update, the check's fresh fit apart."""
    if row.get("fit_and_update_peak_rss_mb") is None or row.get("equals_rebuild") is None:
        return fmt(row.get("peak_rss_mb"), ".0f")
    return f"{row['fit_and_update_peak_rss_mb']:.0f} ({fmt(row.get('peak_rss_mb'), '.0f')} with the check's fit)"


def write_markdown(path: Path, rows, info) -> None:
    lines = ["# BOAT: the exact tree in two passes", "",
             f"Depth {info['depth']}, Agrawal functions {info['functions']}, exact split points everywhere. "
             f"`{info['command']}` on {info['machine'].get('cpu', '?')} ({info['date']}).", "",
             "| function | rows | contender | status | seconds | passes | failures / rebuilt | test accuracy | "
             "update / rebuild | peak RSS (MB) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fails = "-" if r.get("verification_failures") is None else \
            f"{r['verification_failures']} / {r.get('rebuilt_subtrees')}"
        equal = "not compared" if r.get("equals_rebuild") is None else f"equal: {r['equals_rebuild']}"
        ratio = "-" if r.get("update_ratio") is None else f"{r['update_ratio']:.3f} ({equal})"
        lines.append(f"| F{r['function']} | {rows_label(r['rows'])} | {r['name']} | {r.get('status')} | "
                     f"{fmt(r.get('fit_seconds'), '.2f')} | {fmt(r.get('passes'), 'd')} | {fails} | "
                     f"{fmt(r.get('test_accuracy'), '.4f')} | {ratio} | {peak(r)} |")
    lines += ["", "`boat-update` times `update(inserted=1 % of the rows)`; `update / rebuild` divides it by the "
              "BOAT fit of the same run; `equal` says whether the updated tree equals a fresh fit on the changed data, "
              "`not compared` above `--check-update-rows`. Passes are over the data (BOAT's repairs read its work "
              "folder)."]
    reads = [f"{r['name']} F{r['function']} {rows_label(r['rows'])}: {r['work_reads']} reads, {r['work_rows_read']:,} rows"
             for r in rows if r.get("work_reads") is not None]
    if reads:
        lines += ["", "Work folder reads (`n_work_reads_`, `n_work_rows_read_`: the finish's reads of node files, the "
                  "fit's or the update's): " + "; ".join(reads) + "."]
    fits = [f"F{r['function']} {rows_label(r['rows'])}: fit {r['rebuild_seconds']:.2f} s, "
            f"{r['fit_refiled_rows']:,} rows refiled by the fit, {r['update_regrown_rows']:,} regrown by the update"
            for r in rows if r.get("fit_refiled_rows") is not None]
    if fits:
        lines += ["", "`boat-update`'s fit and the rows it filed again under the exact splits of oversized families "
                  "(`n_refiled_rows_`), and the rows of the families the update regrew (`n_regrown_rows_`): "
                  + "; ".join(fits) + "."]
    path.write_text("\n".join(lines) + "\n")


def draw(axes, rows, info) -> str:
    harness.draw_grouped_bars(axes, rows, CONTENDERS, COLORS, "seconds (boat-update: the update)")
    return f"BOAT vs exact RainForest and scikit-learn (depth {info['depth']}, exact mode)"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--rows", type=lambda s: harness.parse_ints(s, "row count", 1000), default=[10_000_000, 100_000_000])
    p.add_argument("--functions", type=lambda s: harness.parse_ints(s, "Agrawal function", 1, 10), default=[1, 6, 7])
    p.add_argument("--depth", type=int, default=10, help="maximum tree depth (default 10)")
    p.add_argument("--files", type=int, default=20, help="training Parquet files per size (default 20)")
    p.add_argument("--test-rows", type=int, default=100_000)
    p.add_argument("--time-limit", type=float, default=3600.0, help="seconds per child process (default 3600)")
    p.add_argument("--memory-budget", default=None)
    p.add_argument("--work-dir", default=None, help="BOAT's spill_dir (default: the system's temporary folder)")
    p.add_argument("--max-family-rows", type=int, default=None,
                   help="BOAT's max_family_rows (default: its own, a quarter of the budget over 8 bytes a column)")
    p.add_argument("--check-update-rows", type=int, default=10_000_000,
                   help="up to this size, check that the updated tree equals a fresh fit (default 10M)")
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "boat"))
    p.add_argument("--data-root", default=str(ROOT / "benchmarks" / "data"))
    harness.add_child_options(p, CONTENDERS)
    p.add_argument("--function", type=int, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        args.rows = args.n  # a child fits one size
    code = harness.internal_mode(args, lambda: RUNNERS[args.child](args), "fit_seconds")
    if code is not None:
        return code
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    info = {**harness.run_info(PACKAGES), "rows_list": args.rows, "functions": args.functions, "depth": args.depth,
            "time_limit": args.time_limit, "memory_budget": args.memory_budget,
            "max_family_rows": args.max_family_rows, "contenders": contenders}
    rows = []
    for f in args.functions:
        for n in args.rows:
            files = min(args.files, n)
            data_dir = Path(args.data_root) / f"agrawal_f{f}_{n}_{files}"
            harness.prepare_data(__file__, data_dir, harness.data_meta(n, files, f, args.test_rows, 1))
            for name in contenders:
                print(f"F{f} {rows_label(n)} {name} ...", flush=True)
                child_args = ["--train", str(data_dir / "train"), "--test", str(data_dir / "test"), "--depth",
                              str(args.depth), "--function", str(f), "--n", str(n),
                              "--check-update-rows", str(args.check_update_rows)]
                for arg, option, _ in BOAT_OPTIONS:
                    if getattr(args, arg):
                        child_args += [option, str(getattr(args, arg))]
                row = harness.run_contender(__file__, name, child_args, args.time_limit, "fit_seconds")
                row.update({"function": f, "rows": n})
                print(f"  {row.get('status')}: {fmt(row.get('fit_seconds'), '.2f')} s, passes {row.get('passes')}",
                      flush=True)
                rows.append(row)
    harness.write_results(args.out, info, rows, write_markdown, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
