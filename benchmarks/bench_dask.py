#!/usr/bin/env python
"""Dask benchmark: one tree on a Dask cluster of 1 and 2 workers against the single-process Parquet source.

Contenders, each in its own child process, on the same Parquet folder (one file per partition):

* ``parquet-1t``  -- ``ParquetSource``, one Numba thread (``n_jobs=1``);
* ``parquet``     -- ``ParquetSource``, all cores (``n_jobs=-1``), the usual single-process fit;
* ``dask-1``      -- ``DaskSource(folder, scheduler=...)`` on 1 ``dask worker`` process (1 thread);
* ``dask-2``      -- the same on 2 worker processes (1 thread each);
* ``dask-4``, ``dask-8``, ``dask-16`` -- the same on 4, 8 and 16 workers, for a machine with that
  many cores (not in the default run). With three or more cluster sizes the chart's right panel
  is the speed-up curve: the 1-worker fit's time over each cluster's.

The Dask contenders start their cluster (``scripts/dask_cluster.py``: a ``dask scheduler`` and
the workers, on 127.0.0.1, ``NUMBA_NUM_THREADS=1``) and warm it up with an untimed tiny fit
before the timed one; the fit itself runs with ``n_jobs=1`` in the client. Every pass of a Dask
fit is metered: the pickled task sent out, the pickled state brought back, and the bytes that
crossed the loopback interface during the pass (client, scheduler and workers all talk over
it: graph submission, worker-to-worker transfers of partial states, results, heartbeats),
against the bytes of the rows the pass reads (decoded).

    python benchmarks/bench_dask.py --rows 10000000 --partitions 20
    python benchmarks/bench_dask.py --rows 100000000 --partitions 32 --function 7 --algorithms hybrid \
        --contenders parquet,dask-1,dask-2,dask-4,dask-8,dask-16 --repeats 1   # a 16-core machine

Writes ``<out>.md``, ``<out>.json`` and ``<out>.png`` (``--out`` defaults to
``benchmarks/results/dask``). Data go to ``benchmarks/data/`` and are reused when their
``_meta.json`` matches.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, SEED, fmt as _fmt, vm_rss_mb as _vm_rss_mb  # noqa: E402

#: clusters of 1 to 16 workers; the default run is the two a 2-core machine can hold
WORKERS = {f"dask-{n}": n for n in (1, 2, 4, 8, 16)}
CONTENDERS = ("parquet-1t", "parquet", *WORKERS)
DEFAULT_CONTENDERS = ("parquet-1t", "parquet", "dask-1", "dask-2")
COLORS = {"parquet-1t": "#b0b0b0", "parquet": "#6f6f6f", "dask-1": "#aed6f1", "dask-2": "#7fb3d5",
          "dask-4": "#5499c7", "dask-8": "#2e86c1", "dask-16": "#1b4f72"}
PACKAGES = ("rainforest", "dask", "distributed", "numba", "pyarrow")
ALGORITHMS = ("read", "hybrid")


# ---------------------------------------------------------------------------
# children


def _warm_up(function: int, cluster_address=None) -> float:
    """An untimed tiny fit (Numba kernels loaded in this process, and in the workers when on a cluster)."""
    from rainforest import DecisionTreeClassifier
    from rainforest.datasets import write_agrawal_parquet

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write_agrawal_parquet(os.path.join(tmp, "w"), 5000, function=function, n_files=2, seed=SEED + 1)
        data = os.path.join(tmp, "w")
        if cluster_address is not None:
            from rainforest.storage import DaskSource

            with DaskSource(data, scheduler=cluster_address) as source:
                DecisionTreeClassifier(max_depth=3).fit(source, target=LABEL)
        DecisionTreeClassifier(max_depth=3).fit(data, target=LABEL)
    return time.perf_counter() - t0


def _decoded_row_bytes(train: str) -> int:
    """Bytes of one decoded row of the columns a fit reads (the Arrow widths of the file's schema)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(next(Path(train).glob("*.parquet")))
    return sum(max(1, f.type.bit_width // 8) for f in schema)


def _metered_source(train: str, address: str, passes: list):
    """A DaskSource recording, per pass, the task and state sizes and the loopback traffic."""
    import pickle

    import psutil
    from distributed.protocol.pickle import dumps

    from rainforest.storage import DaskSource

    def loopback() -> int:
        counters = psutil.net_io_counters(pernic=True)
        return counters["lo"].bytes_sent if "lo" in counters else 0

    class Metered(DaskSource):
        # run_pass, not fold: a pass over partitions kept on the workers does not go through fold
        def run_pass(self, task, columns, batch_size=65536, progress=None):
            t_meter = time.perf_counter()
            task_bytes = len(dumps(task))  # what the graph literal carries out, once per pass
            lo0 = loopback()
            metering = time.perf_counter() - t_meter
            t0 = time.perf_counter()
            state = super().run_pass(task, columns, batch_size, progress)
            seconds = time.perf_counter() - t0
            lo1 = loopback()
            t_meter = time.perf_counter()
            state_bytes = len(pickle.dumps(state, protocol=5))  # what comes back to the client
            metering += time.perf_counter() - t_meter
            passes.append({"seconds": seconds, "task_bytes": task_bytes, "state_bytes": state_bytes,
                           "loopback_bytes": lo1 - lo0, "metering_seconds": metering})
            return state

    return Metered(train, scheduler=address)


def _run(name, train, test, args) -> dict:
    from rainforest import DecisionTreeClassifier

    n_jobs = 1 if name != "parquet" else -1
    params = dict(max_depth=args.depth, algorithm=args.algorithm, n_jobs=n_jobs)
    row = {"algorithm": args.algorithm, "workers": WORKERS.get(name, 0), "n_jobs": n_jobs}
    if name.startswith("parquet"):
        row["warmup_seconds"] = _warm_up(args.function)
        row["rss_before_fit_mb"] = _vm_rss_mb()
        times = []
        for _ in range(args.repeats):
            clf = DecisionTreeClassifier(**params)
            t0 = time.perf_counter()
            clf.fit(train, target=LABEL)
            times.append(time.perf_counter() - t0)
        row.update(seconds=statistics.median(times), fit_seconds=times)
    else:
        sys.path.insert(0, str(harness.ROOT / "scripts"))
        from dask_cluster import LoopbackCluster

        t0 = time.perf_counter()
        cluster = LoopbackCluster(n_workers=WORKERS[name], nthreads=1, env={"NUMBA_NUM_THREADS": "1"},
                                  timeout=120)
        cluster.start()
        try:
            row["cluster_start_seconds"] = time.perf_counter() - t0
            row["warmup_seconds"] = _warm_up(args.function, cluster.address)
            row["rss_before_fit_mb"] = _vm_rss_mb()
            times = []
            for _ in range(args.repeats):  # the per-pass figures are the last fit's
                passes: list = []
                source = _metered_source(train, cluster.address, passes)
                clf = DecisionTreeClassifier(**params)
                t0 = time.perf_counter()
                clf.fit(source, target=LABEL)
                raw = time.perf_counter() - t0
                metering = sum(p["metering_seconds"] for p in passes)
                times.append(raw - metering)
                if len(times) < args.repeats:
                    source.close()
            row.update(seconds=statistics.median(times), fit_seconds=times, metering_seconds=metering,
                       per_pass=passes)
            import resource

            peaks = source.client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            row["worker_peak_rss_mb"] = max(peaks.values()) / 1024.0  # ru_maxrss is KiB on Linux
            source.close()
        finally:
            cluster.stop()
    row["passes"] = int(clf.n_passes_)
    row["tree_sha256"] = hashlib.sha256(clf.tree_.to_json().encode()).hexdigest()
    row["node_count"] = int(clf.tree_.node_count)
    row["decoded_row_bytes"] = _decoded_row_bytes(train)
    row["n_rows"] = int(clf.n_rows_)
    row["test_accuracy"] = float(clf.score(test, target=LABEL))
    return row


# ---------------------------------------------------------------------------
# report


_ok = harness.finished  # a row that ran to the end, with its seconds


def _finished(rows, name, r):
    """The finished row of contender ``name`` with ``r``'s algorithm, or None."""
    return next((x for x in rows if x["name"] == name and x.get("algorithm") == r.get("algorithm") and _ok(x)), None)


def _base(rows, r):
    return _finished(rows, "parquet", r)


def _ratio(rows, r):
    b = _base(rows, r)
    return r["seconds"] / b["seconds"] if _ok(r) and b else None


def _speedup(rows, r):
    """The 1-worker cluster's fit time over this cluster's (same algorithm); None off a cluster."""
    one = _finished(rows, "dask-1", r)
    return one["seconds"] / r["seconds"] if one and _ok(r) and r.get("workers") else None


def _scaling_rows(rows):
    """The finished cluster rows when three or more cluster sizes ran (a speed-up curve), else []."""
    runs = [r for r in rows if _ok(r) and r.get("workers")]
    return runs if len({r["workers"] for r in runs}) >= 3 else []


def _same_tree(rows, r):
    b = _base(rows, r)
    if not _ok(r) or b is None:
        return None
    return r.get("tree_sha256") == b.get("tree_sha256")


def _per_pass(r, key, how=max):
    vals = [p[key] for p in r.get("per_pass") or []]
    return how(vals) if vals else None


def _mean(vals):
    return sum(vals) / len(vals)


def _data_bytes_per_pass(r):
    return r["n_rows"] * r["decoded_row_bytes"] if r.get("n_rows") and r.get("decoded_row_bytes") else None


def write_markdown(path: Path, rows, info) -> None:
    m = info["machine"]
    lines = [
        "# Dask benchmark: one tree on a Dask cluster against the single-process Parquet source",
        "",
        f"- command: `{info['command']}`",
        f"- date: {info['date']}",
        f"- machine: {m['cores']} cores ({m['usable_cores']} usable), {_fmt(m['ram_gb'], '.1f')} GB RAM, "
        f"{m['cpu']}; Python {m['python']}, {m['platform']}",
        f"- data: Agrawal function {info['function']}, {info['rows']:,} training rows in {info['partitions']} "
        f"Parquet files (`{info['train']}`, one Dask partition per file), {info['test_rows']:,} held-out rows",
        f"- tree: max depth {info['depth']}, 255 bins, default memory budget (1 GB)",
        f"- versions: {', '.join(f'{k} {v}' for k, v in info['versions'].items())}",
        "",
        "| algorithm | contender | workers | fit s | × parquet | speed-up over dask-1 | passes | task KB/pass | state KB/pass (max) "
        "| loopback MB/pass (mean / max) | rows MB/pass | client peak RSS MB | worker peak RSS MB | same tree "
        "| test accuracy | status |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for r in rows:
        ok = _ok(r)
        lo = [p["loopback_bytes"] for p in r.get("per_pass") or []]
        lo_txt = f"{_mean(lo) / 1e6:.2f} / {max(lo) / 1e6:.2f}" if lo else "-"
        task = _per_pass(r, "task_bytes")
        state = _per_pass(r, "state_bytes")
        data = _data_bytes_per_pass(r)
        same = _same_tree(rows, r)
        lines.append(
            f"| {r.get('algorithm', '-')} | {r['name']} | {r.get('workers', '-')} | "
            f"{_fmt(r['seconds'] if ok else None, '.2f')} | {_fmt(_ratio(rows, r), '.2f')} | "
            f"{_fmt(_speedup(rows, r), '.2f')} | {_fmt(r.get('passes') if ok else None, 'd')} | {_fmt(task / 1e3 if task else None, '.1f')} | "
            f"{_fmt(state / 1e3 if state else None, '.0f')} | {lo_txt} | {_fmt(data / 1e6 if data else None, '.0f')} | "
            f"{_fmt(r.get('peak_rss_mb'), '.0f')} | {_fmt(r.get('worker_peak_rss_mb'), '.0f')} | "
            f"{'-' if same is None else ('yes' if same else '**no**')} | "
            f"{_fmt(r.get('test_accuracy') if ok else None, '.4f')} | {r['status']} |")
    lines += [
        "",
        "Notes:",
        "",
        "- *fit s*: the median of the timed fits (`--repeats`, each time in `fit_seconds` in the JSON), "
        "wall-clock `fit` from the Parquet files to a fitted tree; for the Dask contenders the "
        "cluster is already up and warm (started, then an untimed 5,000-row fit), and the time spent "
        "metering (pickling each pass's task and state a second time, to weigh them) is subtracted "
        "(`metering_seconds` in the JSON). *× parquet* divides by the single-process all-cores fit of the "
        "same algorithm. *speed-up over dask-1*: the 1-worker cluster's fit time over this cluster's.",
        "- *task KB/pass*: the pickled `PassTask` (the tree so far, routing arrays, the schema) that each pass "
        "sends out, once, as a literal of its task graph. *state KB/pass*: the pickled state that comes back "
        "(AVC-groups). *loopback MB/pass*: bytes sent on the "
        "loopback interface during the pass by every process of the machine (client, scheduler, workers; "
        "partial states moving between workers for the merge tree; heartbeats), an upper bound on the traffic a "
        "networked cluster would carry. *rows MB/pass*: the decoded size of the rows a pass reads "
        "(rows x Arrow widths of the columns), what shipping the data would cost.",
        "- `read` is RF-Read: one pass over the data per level, every pass on the cluster. `hybrid` (the "
        "default) keeps the encoded rows of nodes whose subtrees fit a quarter of the budget, in a single "
        "process; on a cluster each worker keeps the encoded rows of the partitions it read (up to a quarter "
        "of the budget per worker) and later levels are sent to it and count them there "
        "(`rainforest/storage/dask_store.py`); only AVC-groups come back. *passes* are passes over the "
        "Parquet files.",
        "- Workers run one thread each (`--nthreads 1`, `NUMBA_NUM_THREADS=1`); the client fits with "
        "`n_jobs=1`. `parquet-1t` is the single-process fit on one thread, `parquet` on all cores.",
        "- *same tree*: the tree's JSON (node for node, counts included) equals the `parquet` contender's.",
        "- *client peak RSS*: the child process running `fit` (VmHWM); *worker peak RSS*: the largest "
        "`ru_maxrss` among the worker processes.",
        "",
    ]
    path.write_text("\n".join(lines))


def draw_plot(axes, rows, info) -> str:
    ax = axes[0]
    labels, vals, colors = [], [], []
    for r in rows:
        if _ok(r):
            labels.append(f"{r['name']}\n{r['algorithm']}")
            vals.append(r["seconds"])
            colors.append(COLORS.get(r["name"], "#888888"))
    ax.bar(range(len(vals)), vals, color=colors)
    for i, v in enumerate(vals):
        ax.annotate(f"{v:.1f}", (i, v), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_title("fit time (s)")
    ax = axes[1]
    scaling = _scaling_rows(rows)
    if scaling:
        _draw_speedup(ax, rows, scaling)
    else:
        _draw_bytes(ax, rows)
    return (f"one tree on Dask: Agrawal F{info['function']}, {info['rows']:,} rows in {info['partitions']} "
            f"partitions, depth {info['depth']}, {info['machine']['usable_cores']} cores")


def _draw_speedup(ax, rows, scaling) -> None:
    """Speed-up over the 1-worker cluster against the workers, one line per algorithm, and the ideal."""
    most = max(r["workers"] for r in scaling)
    for algorithm in sorted({r["algorithm"] for r in scaling}):
        runs = sorted((r for r in scaling if r["algorithm"] == algorithm and _speedup(rows, r)),
                      key=lambda r: r["workers"])
        xs, ys = [r["workers"] for r in runs], [_speedup(rows, r) for r in runs]
        ax.plot(xs, ys, marker="o", label=f"{algorithm}")
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:.1f}×", (x, y), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=8)
    ax.plot([1, most], [1, most], linestyle=":", color="#999999", label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ticks = sorted({r["workers"] for r in scaling})
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    low = min([1.0] + [_speedup(rows, r) for r in scaling])
    yticks = [2.0 ** k for k in range(math.floor(math.log2(low)), int(math.log2(most)) + 1)]
    ax.set_yticks(yticks)
    ax.set_yticklabels([f"{t:g}" for t in yticks])
    ax.set_xlabel("workers (1 thread each)")
    ax.set_ylabel("speed-up over 1 worker")
    ax.set_title("speed-up curve")
    ax.legend(fontsize=7)


def _draw_bytes(ax, rows) -> None:
    """Task, state and loopback bytes of each cluster's largest pass, against the rows it read."""
    dask_rows = [r for r in rows if _ok(r) and r.get("per_pass")]
    keys = [("task_bytes", "task out"), ("state_bytes", "state back"), ("loopback_bytes", "loopback total")]
    width = 0.8 / (len(keys) + 1)
    for k, (key, label) in enumerate(keys):
        ys = [max(p[key] for p in r["per_pass"]) for r in dask_rows]
        ax.bar([i + k * width for i in range(len(dask_rows))], ys, width, label=label)
    ys = [_data_bytes_per_pass(r) or 0 for r in dask_rows]
    ax.bar([i + len(keys) * width for i in range(len(dask_rows))], ys, width, label="rows read (decoded)",
           color="#cccccc")
    ax.set_yscale("log")
    ax.set_xticks([i + 1.5 * width for i in range(len(dask_rows))])
    ax.set_xticklabels([f"{r['name']}\n{r['algorithm']}" for r in dask_rows], fontsize=7)
    ax.set_title("bytes per pass (largest pass)")
    ax.legend(fontsize=7)


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000, help="training rows (default 10000000)")
    p.add_argument("--partitions", type=int, default=20, help="Parquet files = Dask partitions (default 20)")
    p.add_argument("--function", type=int, default=1, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal classification function (default 1)")
    p.add_argument("--depth", type=int, default=10, help="max depth of the tree (default 10)")
    p.add_argument("--repeats", type=int, default=3,
                   help="timed fits per contender, in one process (one cluster); the median is reported (default 3)")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS),
                   help="comma-separated growth algorithms to run (default read,hybrid)")
    p.add_argument("--algorithm", help=argparse.SUPPRESS)  # a child's one algorithm
    harness.add_common_options(p, CONTENDERS, 3600.0, "seconds per contender (default 3600)", "dask")
    p.set_defaults(contenders=",".join(DEFAULT_CONTENDERS))
    args = p.parse_args(argv)

    code = harness.internal_mode(args, lambda: _run(args.child, args.train, args.test, args), "seconds")
    if code is not None:
        return code

    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    if not algorithms or any(a not in ALGORITHMS for a in algorithms):
        p.error(f"--algorithms: choose from {','.join(ALGORITHMS)}")
    if not 1 <= args.partitions <= args.rows:
        p.error("--partitions must be between 1 and --rows")
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    test_rows = max(1, min(100_000, args.rows // 10))
    data_dir = Path(args.data_root) / f"agrawal_f{args.function}_{args.rows}_{args.partitions}"
    meta = harness.data_meta(args.rows, args.partitions, args.function, test_rows, 1)
    reused = harness.prepare_data(__file__, data_dir, meta)
    train, test = data_dir / "train", data_dir / "test"

    rows = []
    for algorithm in algorithms:
        for name in contenders:
            print(f"running {name} ({algorithm}) ...", flush=True)
            child_args = ["--train", str(train), "--test", str(test), "--function", str(args.function),
                          "--depth", str(args.depth), "--algorithm", algorithm, "--repeats", str(args.repeats)]
            row = harness.run_contender(__file__, name, child_args, args.timeout, "seconds")
            row.setdefault("algorithm", algorithm)
            rows.append(row)
            print(f"  {name}: status={row['status']} seconds={_fmt(row.get('seconds'), '.2f')} "
                  f"passes={row.get('passes')} same_tree={_same_tree(rows, row)}", flush=True)
    info = {**harness.run_info(PACKAGES), "rows": args.rows, "partitions": args.partitions,
            "function": args.function, "depth": args.depth, "test_rows": test_rows,
            "train": harness.shown(train), "test": harness.shown(test), "data_reused": reused,
            "algorithms": algorithms}
    for r in rows:
        r["ratio_to_parquet"] = _ratio(rows, r)
        r["same_tree_as_parquet"] = _same_tree(rows, r)
        r["speedup_over_dask_1"] = _speedup(rows, r)
    harness.write_results(args.out, info, rows, write_markdown, draw_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
