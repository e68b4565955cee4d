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
import datetime as _dt
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTENDERS = ("rainforest", "sklearn", "lightgbm")
COLORS = {"rainforest": "#2a7f62", "sklearn": "#4c72b0", "lightgbm": "#dd8452"}
LABEL = "class"
SEED = 0
PERTURBATION = 0.05  # the generator's default, recorded in _meta.json
META_VERSION = 1


# ---------------------------------------------------------------------------
# helpers shared by parent and children (standard library only)


def _vm_hwm_mb():
    """Peak resident set of this process image (VmHWM), in MB; None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _vm_rss_mb():
    """Current resident set of this process (VmRSS), in MB; None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _ru_maxrss_mb(usage) -> float:
    # Linux reports kilobytes, macOS bytes.
    return usage.ru_maxrss / (1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0)


def _machine() -> dict:
    mem_gb = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_gb = int(line.split()[1]) / 1024.0 / 1024.0
                    break
    except OSError:
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {"cores": os.cpu_count(), "usable_cores": usable, "ram_gb": mem_gb, "cpu": cpu,
            "platform": platform.platform(), "python": platform.python_version()}


# ---------------------------------------------------------------------------
# data


def _data_meta(rows, files, function, test_rows) -> dict:
    return {"version": META_VERSION, "generator": "rainforest.datasets.write_agrawal_parquet",
            "function": function, "rows": rows, "files": files, "seed": SEED,
            "perturbation": PERTURBATION, "test_rows": test_rows, "test_start": rows, "test_files": files,
            "label": LABEL}


def _generate(data_dir: Path, meta: dict) -> None:
    """Child: write train and test folders, then ``_meta.json`` (last, so partial data are never reused)."""
    from rainforest.datasets import write_agrawal_parquet

    for sub in ("train", "test"):
        shutil.rmtree(data_dir / sub, ignore_errors=True)
    (data_dir / "_meta.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    write_agrawal_parquet(data_dir / "train", meta["rows"], function=meta["function"], n_files=meta["files"],
                          seed=meta["seed"], perturbation=meta["perturbation"], start=0)
    t1 = time.perf_counter()
    write_agrawal_parquet(data_dir / "test", meta["test_rows"], function=meta["function"],
                          n_files=min(meta["test_files"], meta["test_rows"]), seed=meta["seed"],
                          perturbation=meta["perturbation"], start=meta["test_start"])
    t2 = time.perf_counter()
    (data_dir / "_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    print(f"  wrote {meta['rows']:,} train rows in {t1 - t0:.1f} s and {meta['test_rows']:,} test rows "
          f"in {t2 - t1:.1f} s", flush=True)


def ensure_data(data_dir: Path, meta: dict) -> bool:
    """Reuse ``data_dir`` when its ``_meta.json`` matches ``meta``; else generate (in a subprocess).

    Returns True when the data were reused.
    """
    meta_path = data_dir / "_meta.json"
    if meta_path.is_file():
        try:
            old = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            old = None
        if old == meta and any((data_dir / "train").glob("part-*.parquet")) \
                and any((data_dir / "test").glob("part-*.parquet")):
            return True
    data_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--generate", str(data_dir), "--meta", json.dumps(meta)]
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        sys.exit(f"error: generating data under {data_dir} failed (exit code {proc.returncode})")
    return False


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

    warmup = _peer_warmup(lambda X, y: DecisionTreeClassifier(max_depth=depth).fit(X, y))
    rss0 = _vm_rss_mb()
    t0 = time.perf_counter()
    X, y = _read_xy(train)
    t1 = time.perf_counter()
    clf = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y)
    fit = time.perf_counter() - t0
    del X, y
    Xt, yt = _read_xy(test)
    acc = float(clf.score(Xt, yt))
    return {"fit_seconds": fit, "read_seconds": t1 - t0, "passes": None, "test_accuracy": acc, "threads": 1,
            "warmup_seconds": warmup, "rss_before_fit_mb": rss0,
            "tree_depth": int(clf.get_depth()), "n_leaves": int(clf.get_n_leaves())}


def _run_lightgbm(train, test, depth, function) -> dict:
    import lightgbm

    def make():
        return lightgbm.LGBMClassifier(n_estimators=1, max_depth=depth, num_leaves=2 ** depth, learning_rate=1.0,
                                       min_child_samples=1, min_child_weight=0, reg_lambda=0, subsample=1.0,
                                       colsample_bytree=1.0, max_bin=255, n_jobs=2, verbose=-1)

    warmup = _peer_warmup(lambda X, y: make().fit(X, y))
    rss0 = _vm_rss_mb()
    t0 = time.perf_counter()
    X, y = _read_xy(train)
    t1 = time.perf_counter()
    clf = make().fit(X, y)
    fit = time.perf_counter() - t0
    del X, y
    Xt, yt = _read_xy(test)
    acc = float(clf.score(Xt, yt))
    info = clf.booster_.dump_model()["tree_info"][0]
    return {"fit_seconds": fit, "read_seconds": t1 - t0, "passes": None, "test_accuracy": acc, "threads": 2,
            "warmup_seconds": warmup, "rss_before_fit_mb": rss0,
            "n_leaves": int(info["num_leaves"])}


RUNNERS = {"rainforest": _run_rainforest, "sklearn": _run_sklearn, "lightgbm": _run_lightgbm}


def _child(name, train, test, depth, function) -> int:
    row = {"name": name}
    code = 0
    try:
        row.update(RUNNERS[name](train, test, depth, function))
        row["status"] = "ok"
    except MemoryError:
        row["status"] = "failed: MemoryError"
        code = 1
    except BaseException as exc:  # report, never drop
        msg = str(exc).strip().splitlines()
        row["status"] = f"failed: {type(exc).__name__}" + (f": {msg[0][:200]}" if msg else "")
        code = 1
    row.setdefault("fit_seconds", None)
    row.setdefault("passes", None)
    row.setdefault("test_accuracy", None)
    row["peak_rss_mb"] = _vm_hwm_mb()
    row["ru_maxrss_mb"] = _ru_maxrss_mb(resource.getrusage(resource.RUSAGE_SELF))
    if row["peak_rss_mb"] is None:
        row["peak_rss_mb"] = row["ru_maxrss_mb"]
    sys.stdout.flush()
    print(json.dumps(row), flush=True)
    return code


# ---------------------------------------------------------------------------
# parent: run children, collect rows


def _last_json(text: str):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "name" in obj:
                return obj
    return None


def run_contender(name, train, test, depth, function, timeout) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--train", train, "--test", test,
           "--depth", str(depth), "--function", str(function)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        status, usage, timed_out = None, None, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.perf_counter() - t0 > timeout:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the child's own session, started above
                except ProcessLookupError:
                    pass
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = 0  # reaped by wait4 above; keep Popen from waiting again
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()

    row = _last_json(stdout) or {"name": name, "fit_seconds": None, "passes": None, "test_accuracy": None,
                                 "peak_rss_mb": None}
    row["child_wall_seconds"] = wall
    row["child_ru_maxrss_mb"] = _ru_maxrss_mb(usage) if usage is not None else None
    if row.get("peak_rss_mb") is None:
        # No report from the child (killed): its rusage from wait4 is the best we have.
        row["peak_rss_mb"] = row["child_ru_maxrss_mb"]
    tail = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    reason = tail[-1][:200] if tail else ""
    if timed_out:
        row["status"] = "timeout"
        row.update(fit_seconds=None, passes=None, test_accuracy=None)  # a late report is not a result
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signame = signal.Signals(sig).name
        except ValueError:
            signame = str(sig)
        hint = " (out of memory?)" if sig == signal.SIGKILL else ""
        row["status"] = f"failed: killed by {signame}{hint}" + (f": {reason}" if reason else "")
    elif os.WEXITSTATUS(status) != 0 and not str(row.get("status", "")).startswith("failed"):
        row["status"] = f"failed: exit code {os.WEXITSTATUS(status)}" + (f": {reason}" if reason else "")
    row.setdefault("status", "ok")
    if row["status"] != "ok":
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        if tail:
            print(f"  [{name} stderr]\n" + "\n".join("    " + ln for ln in tail.splitlines()), flush=True)
    return row


# ---------------------------------------------------------------------------
# report


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


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


def write_plot(path: Path, rows, info) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: writing the table only (pip install matplotlib)", flush=True)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["name"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
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
    fig.suptitle(f"one tree, depth {info['depth']}: Agrawal F{info['function']}, {info['rows']:,} rows, "
                 f"{info['files']} files, {info['machine']['usable_cores']} cores", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("rainforest", "numba", "pyarrow", "scikit-learn", "lightgbm"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000, help="training rows (default 10,000,000)")
    p.add_argument("--files", type=int, default=10, help="Parquet files of the training set (default 10)")
    p.add_argument("--function", type=int, default=7, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal classification function (default 7)")
    p.add_argument("--depth", type=int, default=10, help="maximum tree depth (default 10)")
    p.add_argument("--contenders", default=",".join(CONTENDERS),
                   help="comma-separated subset of " + ",".join(CONTENDERS))
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per contender (default 1800)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "foundation"),
                   help="prefix of the .md/.json/.png results (default benchmarks/results/foundation)")
    p.add_argument("--data-root", default=str(ROOT / "benchmarks" / "data"),
                   help="folder of generated data sets (default benchmarks/data)")
    # internal: child modes
    p.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    p.add_argument("--train", help=argparse.SUPPRESS)
    p.add_argument("--test", help=argparse.SUPPRESS)
    p.add_argument("--generate", help=argparse.SUPPRESS)
    p.add_argument("--meta", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        return _child(args.child, args.train, args.test, args.depth, args.function)
    if args.generate:
        _generate(Path(args.generate), json.loads(args.meta))
        return 0

    if args.rows < 1 or args.files < 1 or args.files > args.rows:
        p.error("--rows must be >= 1 and --files between 1 and --rows")
    if args.depth < 1:
        p.error("--depth must be >= 1")
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    bad = [c for c in contenders if c not in CONTENDERS]
    if bad or not contenders:
        p.error(f"--contenders: unknown {bad}; choose from {','.join(CONTENDERS)}")

    test_rows = max(100_000, args.rows // 10)
    data_dir = Path(args.data_root) / f"agrawal_f{args.function}_{args.rows}"
    meta = _data_meta(args.rows, args.files, args.function, test_rows)
    print(f"data: {data_dir}", flush=True)
    reused = ensure_data(data_dir, meta)
    print("  reused (matching _meta.json)" if reused else "  generated", flush=True)
    train, test = str(data_dir / "train"), str(data_dir / "test")

    rows = []
    for name in contenders:
        print(f"running {name} ...", flush=True)
        row = run_contender(name, train, test, args.depth, args.function, args.timeout)
        rows.append(row)
        print(f"  {name}: status={row['status']} fit={_fmt(row.get('fit_seconds'), '.2f')} s "
              f"passes={row.get('passes')} peak_rss={_fmt(row.get('peak_rss_mb'), '.0f')} MB "
              f"acc={_fmt(row.get('test_accuracy'), '.4f')}", flush=True)

    info = {
        "command": shlex.join(["python"] + sys.argv),
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": _machine(), "versions": _versions(),
        "rows": args.rows, "files": args.files, "depth": args.depth, "function": args.function,
        "test_rows": test_rows, "train": os.path.relpath(train, ROOT), "test": os.path.relpath(test, ROOT),
        "timeout": args.timeout, "data_reused": reused,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    md, js, png = (out.with_name(out.name + ext) for ext in (".md", ".json", ".png"))
    js.write_text(json.dumps({"info": info, "rows": rows}, indent=2) + "\n")
    write_markdown(md, rows, info)
    wrote = [md, js]
    if write_plot(png, rows, info):
        wrote.append(png)
    print("wrote " + ", ".join(str(w) for w in wrote), flush=True)
    print(md.read_text(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
