#!/usr/bin/env python
"""Foundation benchmark: one decision tree, out of core versus in memory.

Fits one depth-limited tree on Agrawal data stored as Parquet with

* ``rainforest``  -- ``DecisionTreeClassifier(max_bins=255)`` reading the Parquet folder itself;
* ``sklearn``     -- scikit-learn ``DecisionTreeClassifier`` on the rows read into numpy;
* ``lightgbm``    -- one LightGBM tree of depth <= ``--depth`` on the rows read into numpy;

each in its own subprocess, so that the peak resident memory is per contender.
Every fit time includes reading the data from the Parquet files.

    python benchmarks/bench_foundation.py --rows 10000000 --files 10 --function 7 --depth 10

Writes ``<out>.md`` (table), ``<out>.json`` (raw rows) and ``<out>.png``
(bar charts, when matplotlib is installed); ``--out`` defaults to
``benchmarks/results/foundation``. Data go to ``benchmarks/data/`` (git-ignored)
and are reused when their ``_meta.json`` matches.

The parent process imports only the standard library and generates the data in
a subprocess too: on Linux a child's ``ru_maxrss`` starts from its parent's peak
(the high-water mark survives ``exec``), so a lean parent keeps the children's
numbers honest. Children report ``VmHWM`` (the high-water mark of their own
process image) as the peak, with ``ru_maxrss`` alongside.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, ROOT, SEED, fmt as _fmt, vm_rss_mb as _vm_rss_mb  # noqa: E402

CONTENDERS = ("rainforest", "sklearn", "lightgbm")
COLORS = {"rainforest": "#2a7f62", "sklearn": "#4c72b0", "lightgbm": "#dd8452"}
PACKAGES = ("rainforest", "numba", "pyarrow", "scikit-learn", "lightgbm")  # versions recorded in the results


# ---------------------------------------------------------------------------
# contenders (each runs in its own child process)


def _read_xy(folder: str):
    """Read a Parquet folder into ``X`` (float32, C order, as the tree libraries use) and ``y``."""
    import numpy as np
    import pyarrow.dataset as ds

    dataset = ds.dataset(folder, format="parquet")
    features = [n for n in dataset.schema.names if n != LABEL]
    n = dataset.count_rows()
    X = np.empty((n, len(features)), dtype=np.float32)
    y = np.empty(n, dtype=np.int8)
    pos = 0
    for batch in dataset.to_batches(columns=features + [LABEL]):
        m = batch.num_rows
        for j, name in enumerate(features):
            X[pos:pos + m, j] = batch.column(j).to_numpy(zero_copy_only=False)
        y[pos:pos + m] = batch.column(len(features)).to_numpy(zero_copy_only=False)
        pos += m
    assert pos == n, (pos, n)
    return X, y


def _peer_warmup(fit) -> float:
    """A tiny fit on random rows, so first-call costs are not timed for the peers either.

    Made with numpy alone: importing rainforest here would add its imports to the peer's peak RSS.
    """
    import numpy as np

    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED + 1)
    X = rng.random((5000, 9), dtype=np.float32)
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + 0.1 * rng.random(5000)) > 0.8).astype(np.int8)
    fit(X, y)
    return time.perf_counter() - t0


def fit_in_memory(train, test, make, threads: int, *, warm=None, mark=None, repeats: int = 1,
                  repeat_seconds: float | None = None, read=None) -> dict:
    """A peer that trains in memory: warmed up on random rows (``warm()``, default ``make()``; not
    timed), then the Parquet rows of ``train`` read into numpy and ``make()`` fitted on them (timed
    together, the read also on its own; up to ``repeats`` times within ``repeat_seconds``, the median
    reported), then scored on ``test`` (the model's own ``score``: accuracy, or a regressor's R²).
    ``mark(True)`` / ``mark(False)`` bracket the timed part. ``read(folder)`` gives ``X, y`` (default:
    the features and the class). The row holds the fitted model under ``"model"``."""
    warm = warm or make
    read = read or _read_xy
    warmup = _peer_warmup(lambda X, y: warm().fit(X, y))
    rss0 = _vm_rss_mb()
    reads = []

    def read_and_fit():
        t0 = time.perf_counter()
        X, y = read(train)
        reads.append(time.perf_counter() - t0)
        return make().fit(X, y)

    if mark:
        mark(True)
    fit, times, clf = harness.timed_median(repeats, read_and_fit, repeat_seconds)
    if mark:
        mark(False)
    Xt, yt = read(test)
    return {"fit_seconds": fit, "fit_seconds_all": times, "read_seconds": statistics.median(reads), "passes": None,
            "test_accuracy": float(clf.score(Xt, yt)), "threads": threads, "warmup_seconds": warmup,
            "rss_before_fit_mb": rss0, "model": clf}


def _run_rainforest(train, test, depth, function) -> dict:
    import numba

    from rainforest import DecisionTreeClassifier
    from rainforest.datasets import agrawal_table

    # Warm-up: load (or compile and cache) the Numba kernels outside the timed fit.
    t0 = time.perf_counter()
    warm = agrawal_table(5000, function=function, seed=SEED + 1)
    DecisionTreeClassifier(max_depth=depth, max_bins=255).fit(warm, target=LABEL).predict(warm)
    warmup = time.perf_counter() - t0
    del warm

    clf = DecisionTreeClassifier(max_depth=depth, max_bins=255)
    rss0 = _vm_rss_mb()
    t0 = time.perf_counter()
    clf.fit(train, target=LABEL)
    fit = time.perf_counter() - t0
    acc = clf.score(test, target=LABEL)
    return {"fit_seconds": fit, "read_seconds": None, "passes": int(clf.n_passes_), "test_accuracy": acc,
            "warmup_seconds": warmup, "rss_before_fit_mb": rss0, "threads": numba.config.NUMBA_NUM_THREADS,
            "tree_depth": int(clf.get_depth()), "n_leaves": int(clf.get_n_leaves()),
            "passes_per_level": [int(p) for p in clf.n_passes_per_level_]}


def _run_sklearn(train, test, depth, function) -> dict:
    from sklearn.tree import DecisionTreeClassifier

    row = fit_in_memory(train, test, lambda: DecisionTreeClassifier(max_depth=depth, random_state=0), 1,
                        warm=lambda: DecisionTreeClassifier(max_depth=depth))
    clf = row.pop("model")
    return {**row, "tree_depth": int(clf.get_depth()), "n_leaves": int(clf.get_n_leaves())}


def _run_lightgbm(train, test, depth, function) -> dict:
    import lightgbm

    def make():
        return lightgbm.LGBMClassifier(n_estimators=1, max_depth=depth, num_leaves=2 ** depth, learning_rate=1.0,
                                       min_child_samples=1, min_child_weight=0, reg_lambda=0, subsample=1.0,
                                       colsample_bytree=1.0, max_bin=255, n_jobs=2, verbose=-1)

    row = fit_in_memory(train, test, make, 2)
    clf = row.pop("model")
    return {**row, "n_leaves": int(clf.booster_.dump_model()["tree_info"][0]["num_leaves"])}


RUNNERS = {"rainforest": _run_rainforest, "sklearn": _run_sklearn, "lightgbm": _run_lightgbm}


# ---------------------------------------------------------------------------
# report


def write_markdown(path: Path, rows, info) -> None:
    base = next((r["fit_seconds"] for r in rows if r["name"] == "lightgbm" and r["status"] == "ok"), None)
    lines = [
        "# Foundation benchmark: one decision tree",
        "",
        f"- command: `{info['command']}`",
        f"- date: {info['date']}",
        f"- machine: {info['machine']['cores']} cores ({info['machine']['usable_cores']} usable), "
        f"{_fmt(info['machine']['ram_gb'], '.1f')} GB RAM, {info['machine']['cpu']}; "
        f"Python {info['machine']['python']}, {info['machine']['platform']}",
        f"- data: Agrawal function {info['function']}, {info['rows']:,} training rows in {info['files']} Parquet "
        f"files (`{info['train']}`), {info['test_rows']:,} held-out test rows (`{info['test']}`, rows "
        f"{info['rows']:,} onwards); data {'reused' if info['data_reused'] else 'generated'}",
        f"- tree: max depth {info['depth']}; 255 bins for rainforest and LightGBM, exact thresholds for "
        f"scikit-learn",
        f"- versions: {', '.join(f'{k} {v}' for k, v in info['versions'].items())}",
        "",
        "| contender | fit s | × LightGBM | passes | peak RSS MB | test accuracy | status |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ok = r["status"] == "ok"
        ratio = r["fit_seconds"] / base if ok and base else None
        lines.append(f"| {r['name']} | {_fmt(r['fit_seconds'] if ok else None, '.2f')} | {_fmt(ratio, '.2f')} | "
                     f"{_fmt(r.get('passes') if ok else None, 'd')} | {_fmt(r.get('peak_rss_mb'), '.0f')} | "
                     f"{_fmt(r.get('test_accuracy') if ok else None, '.4f')} | {r['status']} |")
    lines += [
        "",
        "Notes:",
        "",
        "- Every fit time includes reading the training rows from the Parquet files: rainforest streams "
        "them itself (out of core); scikit-learn and LightGBM time reading them into a float32 numpy "
        "array (pyarrow) plus the fit.",
    ]
    for r in rows:
        if r.get("read_seconds") is not None and r["status"] == "ok":
            lines.append(f"  {r['name']}: {r['read_seconds']:.2f} s of the fit time is the read.")
    warm = ", ".join(f"{r['name']} {r['warmup_seconds']:.1f} s" for r in rows if r.get("warmup_seconds") is not None)
    lines.append("- Every contender first runs a tiny untimed warm-up fit in the same process (rainforest: 5,000 "
                 "other Agrawal rows from a pyarrow table; the peers: 5,000 random numpy rows), so loading or "
                 "compiling rainforest's Numba kernels (from the on-disk cache or afresh) and the peers' "
                 "first-call set-up are not counted" + (f" (warm-up: {warm})" if warm
                                                                                 else "") + ".")
    base_rss = ", ".join(f"{r['name']} {r['rss_before_fit_mb']:.0f} MB" for r in rows
                         if r.get("rss_before_fit_mb") is not None)
    if base_rss:
        lines.append(f"- Resident memory just before the timed fit (imports and warm-up): {base_rss}.")
    rf = next((r for r in rows if r["name"] == "rainforest"), None)
    if rf is not None:
        lines.append("- rainforest `passes` counts its passes over the Parquet data, the profiling pass included"
                     + (f"; growth passes per level: {rf['passes_per_level']}" if rf.get("passes_per_level")
                        else "") + ".")
    lines += [
        "- Threads: rainforest uses all cores (Numba), LightGBM `n_jobs=2`, scikit-learn one thread.",
        "- Each contender runs in its own process; peak RSS is that process's high-water mark (VmHWM, "
        "`ru_maxrss` alongside in the JSON), the read data and the test scoring included.",
        "- Test accuracy is measured on the held-out rows after the timed fit.",
        "",
    ]
    path.write_text("\n".join(lines))


def draw_plot(axes, rows, info) -> str:
    """Bar charts of fit time and peak RSS on the two ``axes``; returns the figure's title."""
    names = [r["name"] for r in rows]
    panels = [("fit_seconds", "fit time (s, Parquet read included)", "{:.2f}"),
              ("peak_rss_mb", "peak RSS (MB)", "{:.0f}")]
    for ax, (key, title, fmt) in zip(axes, panels):
        vals = [r.get(key) if (r["status"] == "ok" or key == "peak_rss_mb") and r.get(key) is not None else 0.0
                for r in rows]
        bars = ax.bar(names, vals, color=[COLORS.get(n, "#888888") for n in names])
        top = max(vals) if any(vals) else 1.0
        for bar, r, v in zip(bars, rows, vals):
            label = fmt.format(v) if r["status"] == "ok" or (key == "peak_rss_mb" and v) else r["status"][:20]
            ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() + top * 0.01, label,
                    ha="center", va="bottom", fontsize=9)
        ax.set_title(title)
        ax.set_ylim(0, top * 1.15)
    return (f"one tree, depth {info['depth']}: Agrawal F{info['function']}, {info['rows']:,} rows, "
            f"{info['files']} files, {info['machine']['usable_cores']} cores")


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000, help="training rows (default 10,000,000)")
    p.add_argument("--files", type=int, default=10, help="Parquet files of the training set (default 10)")
    p.add_argument("--function", type=int, default=7, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal classification function (default 7)")
    p.add_argument("--depth", type=int, default=10, help="maximum tree depth (default 10)")
    harness.add_common_options(p, CONTENDERS, 1800.0, "seconds per contender (default 1800)", "foundation")
    args = p.parse_args(argv)

    code = harness.internal_mode(args, lambda: RUNNERS[args.child](args.train, args.test, args.depth, args.function), "fit_seconds")
    if code is not None:
        return code

    if args.rows < 1 or args.files < 1 or args.files > args.rows:
        p.error("--rows must be >= 1 and --files between 1 and --rows")
    if args.depth < 1:
        p.error("--depth must be >= 1")
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)

    test_rows = max(100_000, args.rows // 10)
    data_dir = Path(args.data_root) / f"agrawal_f{args.function}_{args.rows}"
    meta = harness.data_meta(args.rows, args.files, args.function, test_rows, args.files)
    reused = harness.prepare_data(__file__, data_dir, meta)
    train, test = str(data_dir / "train"), str(data_dir / "test")

    rows = []
    for name in contenders:
        print(f"running {name} ...", flush=True)
        child_args = ["--train", train, "--test", test, "--depth", str(args.depth),
                      "--function", str(args.function)]
        row = harness.run_contender(__file__, name, child_args, args.timeout, "fit_seconds")
        rows.append(row)
        print(f"  {name}: status={row['status']} fit={_fmt(row.get('fit_seconds'), '.2f')} s "
              f"passes={row.get('passes')} peak_rss={_fmt(row.get('peak_rss_mb'), '.0f')} MB "
              f"acc={_fmt(row.get('test_accuracy'), '.4f')}", flush=True)

    info = {
        **harness.run_info(PACKAGES),
        "rows": args.rows, "files": args.files, "depth": args.depth, "function": args.function,
        "test_rows": test_rows, "train": os.path.relpath(train, ROOT), "test": os.path.relpath(test, ROOT),
        "timeout": args.timeout, "data_reused": reused,
    }
    harness.write_results(args.out, info, rows, write_markdown, draw_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
