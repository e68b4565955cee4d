#!/usr/bin/env python
"""Naive Bayes benchmark: one pass over Parquet against the scan floor.

For each training size, measures

* ``duckdb``      -- the floor: DuckDB (its default threads) summing every column the naive
  Bayes model needs in one scan of the Parquet folder,
  ``SELECT count(*), sum(salary), ..., sum(class) FROM read_parquet('<folder>/*.parquet')``;
* ``rainforest``  -- ``NaiveBayesClassifier().fit(folder, target="class")``, one pass over the
  same folder (``n_passes_``), then its accuracy on held-out rows;

each in its own subprocess, so that the peak resident memory is per contender.

    python benchmarks/bench_bayes.py --rows 10000000,100000000 --files 20

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
CONTENDERS = ("duckdb", "rainforest")
COLORS = {"duckdb": "#8c8c8c", "rainforest": "#2a7f62"}
LABEL = "class"
#: Every column the naive Bayes model reads: the nine attributes and the label.
COLUMNS = ("salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan", LABEL)
SEED = 0
PERTURBATION = 0.05  # the generator's default, recorded in _meta.json
TEST_ROWS = 100_000
TARGET_RATIO = 1.5  # rainforest's fit within 1.5x of the DuckDB scan
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


def _data_meta(rows, files, function) -> dict:
    return {"version": META_VERSION, "generator": "rainforest.datasets.write_agrawal_parquet",
            "function": function, "rows": rows, "files": files, "seed": SEED,
            "perturbation": PERTURBATION, "test_rows": TEST_ROWS, "test_start": rows, "test_files": 1,
            "label": LABEL}


def _generate(data_dir: Path, meta: dict) -> None:
    """Child: write train and test folders, then ``_meta.json`` (last, so partial data are never reused).

    ``write_agrawal_parquet`` writes file by file and row group by row group, so memory stays
    bounded whatever the size.
    """
    from rainforest.datasets import write_agrawal_parquet

    for sub in ("train", "test"):
        shutil.rmtree(data_dir / sub, ignore_errors=True)
    (data_dir / "_meta.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    write_agrawal_parquet(data_dir / "train", meta["rows"], function=meta["function"], n_files=meta["files"],
                          seed=meta["seed"], perturbation=meta["perturbation"], start=0)
    t1 = time.perf_counter()
    write_agrawal_parquet(data_dir / "test", meta["test_rows"], function=meta["function"],
                          n_files=meta["test_files"], seed=meta["seed"], perturbation=meta["perturbation"],
                          start=meta["test_start"])
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


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it, else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.parquet"))


def _warm_page_cache(folder: Path) -> float:
    """Read every Parquet file once (plain ``read``), so each contender starts from the same warm OS cache.

    Page-cache pages are not counted in this process's resident set.
    """
    t0 = time.perf_counter()
    buf = bytearray(8 << 20)
    view = memoryview(buf)
    for p in sorted(folder.glob("*.parquet")):
        with open(p, "rb", buffering=0) as f:
            while f.readinto(view):
                pass
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------
# contenders (each runs in its own child process)


def _floor_sql(folder: str) -> str:
    glob = (folder.rstrip("/") + "/*.parquet").replace("'", "''")
    sums = ", ".join(f"sum({c})" for c in COLUMNS)
    return f"SELECT count(*), {sums} FROM read_parquet('{glob}')"


def _run_duckdb(train, test, function) -> dict:
    import duckdb

    con = duckdb.connect()  # in memory, default settings (threads = cores)
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    t0 = time.perf_counter()
    con.execute("SELECT count(*) FROM range(1000)").fetchall()  # untimed first-call set-up
    warmup = time.perf_counter() - t0
    sql = _floor_sql(os.path.abspath(train))
    rss0 = _vm_rss_mb()
    t0 = time.perf_counter()
    res = con.execute(sql).fetchone()
    seconds = time.perf_counter() - t0
    con.close()
    n = int(res[0])
    return {"seconds": seconds, "passes": 1, "test_accuracy": None, "threads": int(threads),
            "warmup_seconds": warmup, "rss_before_fit_mb": rss0, "sql": sql, "count": n,
            "class_1_fraction": float(res[-1]) / n if n else None}


def _run_rainforest(train, test, function) -> dict:
    from rainforest import NaiveBayesClassifier
    from rainforest.datasets import agrawal_table

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

    clf = NaiveBayesClassifier()
    rss0 = _vm_rss_mb()
    t0 = time.perf_counter()
    clf.fit(train, target=LABEL)
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    acc = float(clf.score(test, target=LABEL))
    score_seconds = time.perf_counter() - t1
    row = {"seconds": seconds, "passes": int(clf.n_passes_), "test_accuracy": acc, "threads": threads,
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


RUNNERS = {"duckdb": _run_duckdb, "rainforest": _run_rainforest}


def _child(name, train, test, function) -> int:
    row = {"name": name}
    code = 0
    try:
        row.update(RUNNERS[name](train, test, function))
        row["status"] = "ok"
    except MemoryError:
        row["status"] = "failed: MemoryError"
        code = 1
    except BaseException as exc:  # report, never drop
        msg = str(exc).strip().splitlines()
        row["status"] = f"failed: {type(exc).__name__}" + (f": {msg[0][:200]}" if msg else "")
        code = 1
    row.setdefault("seconds", None)
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


def run_contender(name, train, test, function, timeout) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--train", train, "--test", test,
           "--function", str(function)]
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

    row = _last_json(stdout) or {"name": name, "seconds": None, "passes": None, "test_accuracy": None,
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
        row.update(seconds=None, passes=None, test_accuracy=None)  # a late report is not a result
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


def _cross_check(rows, n) -> None:
    """Both contenders saw every row: DuckDB's count(*) against the sum of rainforest's class counts."""
    db = next((r for r in rows if r["rows"] == n and r["name"] == "duckdb" and _ok(r)), None)
    rf = next((r for r in rows if r["rows"] == n and r["name"] == "rainforest" and _ok(r)), None)
    if db is None or rf is None or not isinstance(rf.get("class_count_"), list):
        return
    seen = sum(rf["class_count_"])
    rf["rows_seen_match"] = abs(seen - db["count"]) < 0.5
    if not rf["rows_seen_match"]:
        print(f"  warning: rainforest's class counts add up to {seen:,.0f} rows, DuckDB counted "
              f"{db['count']:,}", flush=True)


# ---------------------------------------------------------------------------
# report


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def _ok(r) -> bool:
    return r.get("status") == "ok" and r.get("seconds") is not None


def _floor(rows, n):
    return next((r["seconds"] for r in rows if r["rows"] == n and r["name"] == "duckdb" and _ok(r)), None)


def _ratio(rows, r):
    base = _floor(rows, r["rows"])
    return r["seconds"] / base if _ok(r) and base else None


def _rows_label(n: int) -> str:
    for div, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return f"{n:,}"


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
        "| rows | contender | seconds | × DuckDB floor | passes | peak RSS MB | test accuracy | status |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ok = _ok(r)
        lines.append(f"| {r['rows']:,} | {r['name']} | {_fmt(r['seconds'] if ok else None, '.2f')} | "
                     f"{_fmt(_ratio(rows, r), '.2f')} | {_fmt(r.get('passes') if ok else None, 'd')} | "
                     f"{_fmt(r.get('peak_rss_mb'), '.0f')} | "
                     f"{_fmt(r.get('test_accuracy') if ok else None, '.4f')} | {r['status']} |")

    verdicts = []
    for n in info["rows_list"]:
        rf = next((r for r in rows if r["rows"] == n and r["name"] == "rainforest"), None)
        ratio = _ratio(rows, rf) if rf is not None else None
        if ratio is None:
            verdicts.append(f"{n:,} rows: not measured")
        else:
            verdicts.append(f"{n:,} rows: {ratio:.2f}× ({'met' if ratio <= TARGET_RATIO else 'missed'})")
    lines += [
        "",
        "Notes:",
        "",
        f"- **Target: rainforest's naive Bayes fit within {TARGET_RATIO:g}× of the DuckDB floor.** "
        f"Measured: {'; '.join(verdicts)}.",
        "- The floor is DuckDB (default settings, "
        + ", ".join(sorted({f"{r['threads']} threads" for r in rows if r["name"] == "duckdb"
                            and r.get("threads") is not None})) +
        ") running one aggregate over every column the model needs, in one scan of the training "
        f"folder: `{_floor_sql('<folder>')}`. It decodes the same Parquet columns and does the least "
        "arithmetic on them, so no single-pass learner reading these files is expected to beat it by much.",
        "- rainforest times `NaiveBayesClassifier().fit(folder, target=\"class\")` (default "
        "`alpha=1.0, numeric=\"gaussian\"`), streaming the Parquet files itself; `passes` is its "
        "`n_passes_`. For DuckDB `passes` is the one scan of the query.",
        "- Before each contender the parent reads every training file once with plain `read` calls, so "
        "both start from the same warm OS page cache (page-cache pages do not count towards any "
        "process's RSS). Where the data exceed the free RAM the second reader gains little from it.",
    ]
    checks = [r["rows_seen_match"] for r in rows if "rows_seen_match" in r]
    if checks:
        lines.append("- Rows seen: rainforest's class counts add up to DuckDB's `count(*)` "
                     + ("at every size." if all(checks) else "**not** at every size (see the JSON)."))
    warm = ", ".join(f"{r['name']} {_rows_label(r['rows'])} {r['warmup_seconds']:.2f} s" for r in rows
                     if r.get("warmup_seconds") is not None)
    lines.append("- Each child first does untimed set-up in the same process: DuckDB a trivial query on "
                 "its connection; rainforest a fit and predict on 5,000 other Agrawal rows from an "
                 "in-memory pyarrow table (loading or compiling its kernels)" + (f" ({warm})" if warm else "")
                 + ".")
    base_rss = ", ".join(f"{r['name']} {_rows_label(r['rows'])} {r['rss_before_fit_mb']:.0f} MB" for r in rows
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


def write_plot(path: Path, rows, info) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: writing the table only (pip install matplotlib)", flush=True)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
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
        ax.set_xticklabels([_rows_label(n) for n in info["rows_list"]])
        ax.minorticks_off()
        ax.margins(x=0.1, y=0.15)
        if key == "peak_rss_mb":
            ax.set_ylim(bottom=0)
        ax.legend(fontsize=9)
    fig.suptitle(f"naive Bayes, one pass: Agrawal F{info['function']}, {info['files']} files, "
                 f"{info['machine']['usable_cores']} cores", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("rainforest", "duckdb", "numba", "pyarrow"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


# ---------------------------------------------------------------------------


def _parse_rows(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        try:
            n = int(float(part)) if "e" in part.lower() else int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a row count: {part!r}")
        if n < 1:
            raise argparse.ArgumentTypeError(f"row counts must be >= 1, got {n}")
        out.append(n)
    if not out:
        raise argparse.ArgumentTypeError("give at least one row count")
    return sorted(set(out))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=_parse_rows, default=_parse_rows("10000000,100000000"),
                   help="comma-separated training sizes (default 10000000,100000000)")
    p.add_argument("--files", type=int, default=20, help="Parquet files of each training set (default 20)")
    p.add_argument("--function", type=int, default=1, choices=range(1, 11), metavar="{1..10}",
                   help="Agrawal classification function (default 1)")
    p.add_argument("--contenders", default=",".join(CONTENDERS),
                   help="comma-separated subset of " + ",".join(CONTENDERS))
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per contender and size (default 3600)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bayes"),
                   help="prefix of the .md/.json/.png results (default benchmarks/results/bayes)")
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
        return _child(args.child, args.train, args.test, args.function)
    if args.generate:
        _generate(Path(args.generate), json.loads(args.meta))
        return 0

    if args.files < 1 or args.files > min(args.rows):
        p.error("--files must be between 1 and the smallest --rows")
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    bad = [c for c in contenders if c not in CONTENDERS]
    if bad or not contenders:
        p.error(f"--contenders: unknown {bad}; choose from {','.join(CONTENDERS)}")

    rows, data = [], []
    for n in args.rows:
        data_dir = Path(args.data_root) / f"agrawal_f{args.function}_{n}_{args.files}"
        meta = _data_meta(n, args.files, args.function)
        print(f"data: {data_dir}", flush=True)
        reused = ensure_data(data_dir, meta)
        print("  reused (matching _meta.json)" if reused else "  generated", flush=True)
        train, test = data_dir / "train", data_dir / "test"
        size = _folder_bytes(train)
        data.append({"rows": n, "train": _shown(train), "test": _shown(test),
                     "train_bytes": size, "reused": reused})
        for name in contenders:
            cache = _warm_page_cache(train)
            print(f"running {name} on {n:,} rows (page cache warmed in {cache:.1f} s) ...", flush=True)
            row = run_contender(name, str(train), str(test), args.function, args.timeout)
            row = {"rows": n, **row, "cache_warm_seconds": cache}
            rows.append(row)
            ratio = _ratio(rows, row)
            _cross_check(rows, n)
            print(f"  {name}: status={row['status']} seconds={_fmt(row.get('seconds'), '.2f')} "
                  f"(x floor {_fmt(ratio, '.2f')}) passes={row.get('passes')} "
                  f"peak_rss={_fmt(row.get('peak_rss_mb'), '.0f')} MB "
                  f"acc={_fmt(row.get('test_accuracy'), '.4f')}", flush=True)

    info = {
        "command": shlex.join(["python"] + sys.argv),
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": _machine(), "versions": _versions(),
        "rows_list": args.rows, "files": args.files, "function": args.function, "test_rows": TEST_ROWS,
        "timeout": args.timeout, "target_ratio": TARGET_RATIO, "floor_sql": _floor_sql("<folder>"),
        "data": data,
    }
    for r in rows:
        r["ratio_to_floor"] = _ratio(rows, r)
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
