#!/usr/bin/env python
"""Exact mode at scale: bins of ranks plus candidate values, against one slot per value and binned mode.

For every Agrawal function (``--functions``, default F7) and training size (``--rows``, default
10M rows) fits, each in its own child process (killed after ``--time-limit``), a depth ``--depth``
tree on the Parquet folder:

* ``exact-bins``  -- ``DecisionTreeClassifier(max_bins=None)``, the default: wide numeric attributes
  counted in bins of ranks, the candidate bins' values gathered (issue 13), except for data of at
  most ``plan.SMALL_EXACT_ROWS`` rows kept in memory, counted as ``exact-slots`` (faster there);
* ``exact-slots`` -- the same, counting one slot per distinct value (as before issue 13: the baseline,
  ``GrowParams(exact_bins=0)``);
* ``binned``      -- ``DecisionTreeClassifier(max_bins=255)``: the histogram tree, the cost to reach.

Each child writes its model's JSON; the table says whether ``exact-bins`` built the tree of
``exact-slots`` (JSON for JSON).  Fit times include reading the data; the Numba kernels are compiled
first, outside the timed fit (exact mode's on 100,000 rows counted in bins, spilled, and spilled with
its wide columns keyed).  Writes ``<out>.md``, ``<out>.json`` and ``<out>.png`` (default
``benchmarks/results/exact``).

    python benchmarks/bench_exact.py                                     # 10M rows, F7
    python benchmarks/bench_exact.py --rows 200000 --out /tmp/exact_small  # a check
    python benchmarks/bench_exact.py --contenders exact-bins,binned --rounds 5 --out benchmarks/results/exact_rounds
    python benchmarks/bench_exact.py --rows 1000000000 --generated --contenders exact-bins \
        --out benchmarks/results/exact_1b_generated   # 1B rows generated at each pass, no Parquet

With ``--rounds N`` every contender runs N times, the contenders taking turns (a slow spell of the
shared machine then falls on all of them): a row's seconds are the median of its rounds, every
round's are kept, and the notes give exact-bins over binned round by round.  A single 10M fit of
binned mode varied from 1.6 to 2.5 s between runs, so one run's ratio says little.

With ``--generated`` the training rows are :class:`rainforest.datasets.AgrawalSource`: the rows the
Parquet folder would hold, generated at each pass (a fit's time then includes generating them twice
where it would decode the files), and the held-out rows the stream's next ``--test-rows``, in
memory: a size whose Parquet files and spill folder would not both fit the disk.
"""
from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, PERTURBATION, ROOT, SEED, fmt, rows_label  # noqa: E402

CONTENDERS = ("exact-bins", "exact-slots", "binned")
PACKAGES = ("rainforest", "numba", "pyarrow")
COLORS = {"exact-bins": "#2a7f62", "exact-slots": "#dd8452", "binned": "#4c72b0"}


def run(args) -> dict:
    from rainforest import DecisionTreeClassifier, plan, tree_setup
    from rainforest.datasets import AgrawalSource, agrawal_table
    from rainforest.grow import GrowParams
    if args.child == "exact-slots":
        tree_setup.GrowParams = functools.partial(GrowParams, exact_bins=0)
    kw = {"max_depth": args.depth, "max_bins": 255 if args.child == "binned" else None}
    if args.memory_budget:
        kw["memory_budget"] = args.memory_budget
    # Warm-up: the timed fit's kernels compiled or loaded first.  Exact mode's on rows as the big fit
    # counts them: in bins (small data would take one slot per value), uint32 ranks (> 65,535 values).
    t0 = time.perf_counter()
    warm = agrawal_table(100_000, function=args.function, seed=SEED + 1)
    default = plan.SMALL_EXACT_ROWS
    for plan.SMALL_EXACT_ROWS in (0, default):  # bins, then small data's one slot per value (it ends as it was)
        DecisionTreeClassifier(**kw).fit(warm, target=LABEL)
        if plan.SMALL_EXACT_ROWS == 0:  # and spilled, as the big fit's rows are: the spill's reads, the
            # gathering's scratch files (without it a run right after a kernel module changed compiled
            # those kernels inside the timed fit: 8.9 and 16.4 s where 6.1-6.7 s is the fit)
            DecisionTreeClassifier(**{**kw, "memory_budget": "8MB"}).fit(warm, target=LABEL)
            if kw["max_bins"] is None:  # and keyed, as the big fit's wide columns are
                with harness.keyed_columns():
                    DecisionTreeClassifier(**{**kw, "memory_budget": "8MB"}).fit(warm, target=LABEL)
    warmup = time.perf_counter() - t0
    train, test = args.train, args.test
    if args.generated_rows:  # the stream's rows [0, n) at every pass, the next ones held out in memory
        stream = dict(function=args.function, seed=SEED, perturbation=PERTURBATION)
        train = AgrawalSource(args.generated_rows, **stream)
        test = agrawal_table(args.test_rows, start=args.generated_rows, **stream)
    clf = DecisionTreeClassifier(**kw)
    t0 = time.perf_counter()
    clf.fit(train, target=LABEL)
    fit = time.perf_counter() - t0
    Path(args.model).write_text(clf.tree_.to_json())
    stats = clf.grow_stats_
    return {"fit_seconds": fit, "passes": int(clf.n_passes_), "warmup_seconds": warmup,
            "test_accuracy": float(clf.score(test, target=LABEL)), "n_nodes": int(clf.tree_.node_count),
            "binned_attributes": stats.binned_attributes, "candidate_reads": stats.candidate_reads,
            "candidate_values": stats.candidate_values, "candidate_runs": stats.candidate_runs,
            "gathering_bytes": stats.gathering_bytes,
            "spill_reads": stats.spill_reads, "spill_bytes": stats.spill_bytes}


def pooled(runs: list) -> dict:
    """One row from a contender's rounds (:func:`harness.pooled_rounds` of their fit seconds), the same
    tree only where every round built it."""
    row = harness.pooled_rounds(runs, "fit_seconds")
    if "same_tree" in runs[-1]:
        row["same_tree"] = all(r.get("same_tree", True) for r in runs)
    return row


def ratio_notes(rows) -> list:
    """exact-bins over binned per function and size: of the medians, and round by round."""
    notes = []
    for r in rows:
        if r["name"] != "exact-bins" or not r.get("round_seconds"):
            continue
        b = next((x for x in rows if x["name"] == "binned" and x["function"] == r["function"]
                  and x["rows"] == r["rows"] and x.get("round_seconds")), None)
        if b is None:
            continue
        each = ", ".join(f"{e / s:.2f}" for e, s in zip(r["round_seconds"], b["round_seconds"]))
        notes.append(f"- F{r['function']} {rows_label(r['rows'])}: exact-bins {r['fit_seconds'] / b['fit_seconds']:.2f}x "
                     f"binned (medians of {r['rounds']} rounds; round by round {each}); exact-bins "
                     + ", ".join(f"{t:.2f}" for t in r["round_seconds"]) + " s, binned "
                     + ", ".join(f"{t:.2f}" for t in b["round_seconds"]) + " s.")
    return notes


def write_markdown(path: Path, rows, info) -> None:
    lines = ["# Exact mode at scale: bins of ranks plus candidate values", "",
             f"Depth {info['depth']}, Agrawal functions {info['functions']}. `{info['command']}` on "
             f"{info['machine'].get('cpu', '?')}, {info['machine'].get('usable_cores', '?')} cores ({info['date']}).", "",
             f"Training rows: {info.get('source', 'Parquet')}.", "",
             "| function | rows | contender | status | seconds | passes | peak RSS (MB) | spilled GB | nodes | "
             "test accuracy | candidate values | same tree as exact-slots |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| F{r['function']} | {rows_label(r['rows'])} | {r['name']} | {r.get('status')} | "
                     f"{fmt(r.get('fit_seconds'), '.2f')} | {fmt(r.get('passes'), 'd')} | "
                     f"{fmt(r.get('peak_rss_mb'), '.0f')} | "
                     f"{fmt(r['spill_bytes'] / 1e9 if r.get('spill_bytes') is not None else None, '.2f')} | "
                     f"{fmt(r.get('n_nodes'), 'd')} | "
                     f"{fmt(r.get('test_accuracy'), '.4f')} | {fmt(r.get('candidate_values'), ',d')} | "
                     f"{r.get('same_tree', '-')} |")
    lines += ["", "`candidate values`: the (node, attribute, value) cells the gathering reads summed, over all "
              "levels. Passes are over the data; the gathering reads memory or the spill folder."]
    notes = ratio_notes(rows)
    if notes:
        lines += ["", f"Seconds are medians of {info['rounds']} rounds, the contenders taking turns in each.", ""] + notes
    path.write_text("\n".join(lines) + "\n")


def draw(axes, rows, info) -> str:
    harness.draw_grouped_bars(axes, rows, CONTENDERS, COLORS)
    return f"Exact trees: bins of ranks vs one slot per value vs binned mode (depth {info['depth']})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--rows", type=lambda s: harness.parse_ints(s, "row count", 1000), default=[10_000_000])
    p.add_argument("--functions", type=lambda s: harness.parse_ints(s, "Agrawal function", 1, 10), default=[7])
    p.add_argument("--depth", type=int, default=10, help="maximum tree depth (default 10)")
    p.add_argument("--files", type=int, default=20, help="training Parquet files per size (default 20)")
    p.add_argument("--test-rows", type=int, default=100_000)
    p.add_argument("--time-limit", type=float, default=3600.0, help="seconds per child process (default 3600)")
    p.add_argument("--memory-budget", default=None)
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "exact"))
    p.add_argument("--data-root", default=str(ROOT / "benchmarks" / "data"))
    p.add_argument("--rounds", type=int, default=1,
                   help="runs of every contender, taking turns; seconds are their median (default 1)")
    p.add_argument("--generated", action="store_true",
                   help="train on rows generated at each pass (AgrawalSource), with no Parquet folder")
    harness.add_child_options(p, CONTENDERS)
    p.add_argument("--generated-rows", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--function", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    code = harness.internal_mode(args, lambda: run(args), "fit_seconds")
    if code is not None:
        return code
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    info = {**harness.run_info(PACKAGES), "rows_list": args.rows,
            "source": "AgrawalSource, generated at each pass" if args.generated else "Parquet", "functions": args.functions, "depth": args.depth,
            "time_limit": args.time_limit, "memory_budget": args.memory_budget, "contenders": contenders,
            "rounds": args.rounds}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-exact-") as models:
        for f in args.functions:
            for n in args.rows:
                child_args = ["--depth", str(args.depth), "--function", str(f), "--test-rows", str(args.test_rows)]
                if args.generated:
                    child_args += ["--generated-rows", str(n)]
                else:
                    files = min(args.files, n)
                    data_dir = Path(args.data_root) / f"agrawal_f{f}_{n}_{files}"
                    harness.prepare_data(__file__, data_dir, harness.data_meta(n, files, f, args.test_rows, 1))
                    child_args += ["--train", str(data_dir / "train"), "--test", str(data_dir / "test")]
                if args.memory_budget:
                    child_args += ["--memory-budget", args.memory_budget]
                rounds = [harness.run_compared(__file__, contenders, child_args, args.time_limit, "fit_seconds",
                                               models, f"{f}-{n}", ("exact-bins", "exact-slots"), "same_tree",
                                               f"F{f} {rows_label(n)} round {k + 1}/{args.rounds}")
                          for k in range(args.rounds)]
                found = [pooled([rnd[i] for rnd in rounds]) for i in range(len(contenders))]
                rows += [{**r, "function": f, "rows": n} for r in found]
    harness.write_results(args.out, info, rows, write_markdown, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
