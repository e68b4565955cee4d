"""Shared plumbing of the benchmark scripts ``bench_*.py``.

Memory probes, machine description, Agrawal data generation and reuse, the child
process runner (timeout, signal and failure reporting) and the result writing.

Standard library only at import time: the parent process of a benchmark imports
this module, and on Linux a child's ``ru_maxrss`` starts from its parent's peak
(the high-water mark survives ``exec``), so a lean parent keeps the children's
numbers honest. Heavy imports (rainforest, matplotlib) happen inside functions
that run in a child or after all children have finished.

The scripts run as ``python benchmarks/bench_xxx.py`` and launch themselves again
as children (``--child``, ``--generate``); functions that do so take the script's
path (``script``, usually ``__file__``).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABEL = "class"
SEED = 0
PERTURBATION = 0.05  # the generator's default, recorded in _meta.json
META_VERSION = 1


# ---------------------------------------------------------------------------
# helpers shared by parent and children


@contextlib.contextmanager
def keyed_columns(cap: int = 1000):
    """Exact fits inside key every column of more than ``cap`` distinct values, as fits of millions
    of rows key theirs (``rainforest.tree_setup.KEY_CAP``): a warm-up on small data then loads the
    keyed kernels (the spill's bins, routing by bins, counting them) outside the timed fit, where
    loading them from Numba's cache took 0.7-0.9 s of a 10M-row exact fit."""
    from rainforest import tree_setup
    default = tree_setup.KEY_CAP
    tree_setup.KEY_CAP = cap
    try:
        yield
    finally:
        tree_setup.KEY_CAP = default


def timed_median(repeats: int, run, seconds: float | None = None) -> tuple[float, list, object]:
    """The median seconds of ``repeats`` calls of ``run``, every call's seconds, and the last call's
    result.  Single runs of a fit of a few seconds vary by a tenth or more on a shared machine.
    With ``seconds``, a call is repeated only while the calls so far plus one more like the last
    stay within that many seconds (a long fit, steady anyway, runs once)."""
    times, out = [], None
    while len(times) < repeats and (seconds is None or not times or sum(times) + times[-1] <= seconds):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def finished(row: dict, key: str = "seconds") -> bool:
    """Whether a contender's row ran to the end and has its time ``key``."""
    return row.get("status") == "ok" and row.get(key) is not None


def pooled_rounds(runs: list, key: str = "seconds") -> dict:
    """One row from a contender's rounds (each a child's row with its time ``key`` and, where the child
    timed several runs, ``all_<key>``): the median of all their timed runs, each round's time, the
    highest peak RSS; a failed round makes the row that round's."""
    failed = [r for r in runs if not finished(r, key)]
    if failed:
        return {**failed[0], "rounds": len(runs)}
    times = [t for r in runs for t in r.get(f"all_{key}", [r[key]])]
    return {**runs[-1], key: statistics.median(times), f"all_{key}": times,
            "round_seconds": [r[key] for r in runs],
            "peak_rss_mb": max((r["peak_rss_mb"] for r in runs if r.get("peak_rss_mb") is not None), default=None),
            "rounds": len(runs)}


def status_kb(pid, key: str):
    """Field ``key`` (e.g. ``"VmHWM:"``) of ``/proc/<pid>/status`` (``pid`` may be ``"self"``), in kB;
    None off Linux or when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _proc_status_mb(key: str):
    """Field ``key`` of this process's status, in MB; None off Linux."""
    kb = status_kb("self", key)
    return kb / 1024.0 if kb is not None else None


def vm_hwm_mb():
    """Peak resident set of this process image (VmHWM), in MB; None off Linux."""
    return _proc_status_mb("VmHWM:")


def vm_rss_mb():
    """Current resident set of this process (VmRSS), in MB; None off Linux."""
    return _proc_status_mb("VmRSS:")


def ru_maxrss_mb(usage) -> float:
    """``usage.ru_maxrss`` in MB (Linux reports kilobytes, macOS bytes)."""
    return usage.ru_maxrss / (1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0)


def machine() -> dict:
    """Cores (all and usable), RAM in GB, CPU model, platform and Python version."""
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


def versions(packages) -> dict:
    """Installed version of each of ``packages`` (``"missing"`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in packages:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


def run_info(packages) -> dict:
    """The head of a result's ``info``: command line, date, machine and ``versions(packages)``."""
    return {
        "command": shlex.join(["python"] + sys.argv),
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": machine(), "versions": versions(packages),
    }


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it, else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------
# data


def data_meta(rows, files, function, test_rows, test_files) -> dict:
    """The ``_meta.json`` of an Agrawal data set: train rows ``[0, rows)``, test rows from ``rows`` on."""
    return {"version": META_VERSION, "generator": "rainforest.datasets.write_agrawal_parquet",
            "function": function, "rows": rows, "files": files, "seed": SEED,
            "perturbation": PERTURBATION, "test_rows": test_rows, "test_start": rows, "test_files": test_files,
            "label": LABEL}


def generate(data_dir: Path, meta: dict) -> None:
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
                          n_files=min(meta["test_files"], meta["test_rows"]), seed=meta["seed"],
                          perturbation=meta["perturbation"], start=meta["test_start"])
    t2 = time.perf_counter()
    (data_dir / "_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    print(f"  wrote {meta['rows']:,} train rows in {t1 - t0:.1f} s and {meta['test_rows']:,} test rows "
          f"in {t2 - t1:.1f} s", flush=True)


def ensure_data(script, data_dir: Path, meta: dict) -> bool:
    """Reuse ``data_dir`` when its ``_meta.json`` matches ``meta``; else generate (in a subprocess).

    The subprocess is ``script --generate <data_dir> --meta <json>``. Returns True when the
    data were reused.
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
    cmd = [sys.executable, os.path.abspath(script), "--generate", str(data_dir), "--meta", json.dumps(meta)]
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        sys.exit(f"error: generating data under {data_dir} failed (exit code {proc.returncode})")
    return False


def prepare_data(script, data_dir: Path, meta: dict) -> bool:
    """``ensure_data`` with its progress lines; returns True when the data were reused."""
    print(f"data: {data_dir}", flush=True)
    reused = ensure_data(script, data_dir, meta)
    print("  reused (matching _meta.json)" if reused else "  generated", flush=True)
    return reused


# ---------------------------------------------------------------------------
# command line


def add_common_options(p: argparse.ArgumentParser, contenders, timeout: float, timeout_help: str,
                       out_name: str) -> None:
    """Add ``--contenders``, ``--timeout``, ``--out``, ``--data-root`` and the hidden child options.

    ``timeout`` is the default of ``--timeout`` and ``timeout_help`` its help; ``--out``
    defaults to ``benchmarks/results/<out_name>``.
    """
    p.add_argument("--contenders", default=",".join(contenders),
                   help="comma-separated subset of " + ",".join(contenders))
    p.add_argument("--timeout", type=float, default=timeout, help=timeout_help)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / out_name),
                   help=f"prefix of the .md/.json/.png results (default benchmarks/results/{out_name})")
    p.add_argument("--data-root", default=str(ROOT / "benchmarks" / "data"),
                   help="folder of generated data sets (default benchmarks/data)")
    add_child_options(p, contenders)


def add_child_options(p: argparse.ArgumentParser, contenders) -> None:
    """The hidden options of a script's child modes (:func:`internal_mode`): ``--child`` (one of
    ``contenders``), ``--train``, ``--test``, ``--generate`` and ``--meta``."""
    p.add_argument("--child", choices=contenders, help=argparse.SUPPRESS)
    p.add_argument("--train", help=argparse.SUPPRESS)
    p.add_argument("--test", help=argparse.SUPPRESS)
    p.add_argument("--generate", help=argparse.SUPPRESS)
    p.add_argument("--meta", help=argparse.SUPPRESS)


def internal_mode(args, run, time_key: str) -> int | None:
    """The exit code of a script run in a child mode: ``--child`` (:func:`child` of ``run``) or
    ``--generate`` (:func:`generate`); None when it runs as itself."""
    if args.child:
        return child(args.child, run, time_key)
    if args.generate:
        generate(Path(args.generate), json.loads(args.meta))
        return 0
    return None


def parse_contenders(p: argparse.ArgumentParser, text: str, contenders) -> list:
    """The names in the comma-separated ``text``; ``p.error`` on an unknown one or none."""
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in chosen if c not in contenders]
    if bad or not chosen:
        p.error(f"--contenders: unknown {bad}; choose from {','.join(contenders)}")
    return chosen


# ---------------------------------------------------------------------------
# children


def child(name: str, run, time_key: str) -> int:
    """Child: call ``run()`` for contender ``name`` and print its row as the last JSON line.

    A failure (``MemoryError`` or any other exception) is reported in ``status``, never
    dropped; ``time_key``, ``passes`` and ``test_accuracy`` default to None. The peak RSS
    (VmHWM, else ``ru_maxrss``) is added. Returns the exit code (1 on failure).
    """
    row = {"name": name}
    code = 0
    try:
        row.update(run())
        row["status"] = "ok"
    except MemoryError:
        row["status"] = "failed: MemoryError"
        code = 1
    except BaseException as exc:  # report, never drop
        msg = str(exc).strip().splitlines()
        row["status"] = f"failed: {type(exc).__name__}" + (f": {msg[0][:200]}" if msg else "")
        code = 1
    row.setdefault(time_key, None)
    row.setdefault("passes", None)
    row.setdefault("test_accuracy", None)
    row["peak_rss_mb"] = vm_hwm_mb()
    row["ru_maxrss_mb"] = ru_maxrss_mb(resource.getrusage(resource.RUSAGE_SELF))
    if row["peak_rss_mb"] is None:
        row["peak_rss_mb"] = row["ru_maxrss_mb"]
    sys.stdout.flush()
    print(json.dumps(row), flush=True)
    return code


def last_json(text: str):
    """The last line of ``text`` that is a JSON object with a ``"name"``, or None."""
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


def run_contender(script, name: str, child_args, timeout: float, time_key: str) -> dict:
    """Parent: run ``script --child name *child_args`` in its own session and collect its row.

    The child is killed (its whole process group) after ``timeout`` seconds. Adds
    ``child_wall_seconds`` and ``child_ru_maxrss_mb`` (from ``wait4``) and sets ``status``:
    ``ok``, ``timeout`` (results cleared) or ``failed: <reason>`` (killed by a signal, non-zero
    exit), printing the tail of the child's stderr when not ``ok``. ``time_key`` names the
    timed field (cleared on timeout).
    """
    cmd = [sys.executable, os.path.abspath(script), "--child", name, *child_args]
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

    row = last_json(stdout) or {"name": name, time_key: None, "passes": None, "test_accuracy": None,
                                "peak_rss_mb": None}
    row["child_wall_seconds"] = wall
    row["child_ru_maxrss_mb"] = ru_maxrss_mb(usage) if usage is not None else None
    if row.get("peak_rss_mb") is None:
        # No report from the child (killed): its rusage from wait4 is the best we have.
        row["peak_rss_mb"] = row["child_ru_maxrss_mb"]
    if timed_out:
        row["status"] = "timeout"
        row.update({time_key: None, "passes": None, "test_accuracy": None})  # a late report is not a result
    else:
        set_exit_status(row, status, stderr)
    if row["status"] != "ok":
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        if tail:
            print(f"  [{name} stderr]\n" + "\n".join("    " + ln for ln in tail.splitlines()), flush=True)
    return row


def run_compared(script, contenders, child_args, timeout: float, time_key: str, models: Path, tag: str,
                 compared: tuple[str, str], key: str, label: str) -> list:
    """Parent: run every contender (:func:`run_contender`), each child given ``--model <file>`` to write
    its model to (under ``models``, named by the contender and ``tag``), and set ``key`` on the row of
    ``compared[0]``: whether its model file equals that of ``compared[1]`` (both must have run).
    Prints ``label`` and each contender's outcome."""
    rows, written = [], {}
    for name in contenders:
        print(f"{label} {name} ...", flush=True)
        model = Path(models) / f"{name}-{tag}.json"
        row = run_contender(script, name, [*child_args, "--model", str(model)], timeout, time_key)
        written[name] = model.read_text() if model.exists() else None
        print(f"  {row.get('status')}: {fmt(row.get(time_key), '.2f')} s, passes {row.get('passes')}", flush=True)
        rows.append(row)
    first, second = compared
    if written.get(first) is not None and written.get(second) is not None:
        for r in rows:
            if r["name"] == first:
                r[key] = written[first] == written[second]
    return rows


# ---------------------------------------------------------------------------
# report


def run_helper(script, what: str, child_args: list, timeout: float) -> dict:
    """Run ``script`` with ``child_args`` (a helper child: a loader, a builder); its last JSON line, with
    ``status`` and ``child_wall_seconds``."""
    cmd = [sys.executable, os.path.abspath(script), *child_args]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    out = next((json.loads(ln) for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
    if proc.returncode != 0 or out is None:
        tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        print(f"  [{what} stderr]\n" + "\n".join("    " + ln for ln in tail[-15:]), flush=True)
        return {"status": f"failed: exit code {proc.returncode}" + (f": {tail[-1][:200]}" if tail else "")}
    out["status"] = "ok"
    out["child_wall_seconds"] = time.perf_counter() - t0
    return out


def warm_page_cache(folder: Path) -> float:
    """Read every Parquet file of ``folder`` once (plain ``read``), so each contender starts from the
    same warm OS cache; returns the seconds it took. Page-cache pages are not counted in this
    process's resident set."""
    t0 = time.perf_counter()
    buf = bytearray(8 << 20)
    view = memoryview(buf)
    for p in sorted(folder.glob("*.parquet")):
        with open(p, "rb", buffering=0) as f:
            while f.readinto(view):
                pass
    return time.perf_counter() - t0


def set_exit_status(row: dict, status: int, stderr: str) -> None:
    """``row["status"]`` from a child's wait status: killed by a signal, a non-zero exit (with the last
    line of stderr), or ``ok`` (a status the child reported itself is kept)."""
    tail = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    reason = tail[-1][:200] if tail else ""
    if os.WIFSIGNALED(status):
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


def parse_ints(text: str, what: str, lo: int, hi=None) -> list:
    """Comma-separated integers (``1_000_000`` and ``1e6`` allowed) within ``[lo, hi]``, for argparse."""
    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        try:
            v = int(float(part)) if "e" in part.lower() else int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {what}: {part!r}")
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{what} out of range: {v}")
        out.append(v)
    return out


def rows_label(n: int) -> str:
    """A row count as people write it: 1M, 10M, 100k, 1B (or with separators when not round)."""
    for div, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return f"{n:,}"


def local_spark(app: str, driver_memory: str):
    """A Spark session on ``local[2]`` bound to loopback, quiet, and the pid of its JVM (for its peak RSS)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.driver.memory", driver_memory)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark, int(spark._jvm.ProcessHandle.current().pid())


def fmt(x, spec):
    """``format(x, spec)``, or ``"-"`` for None."""
    return "-" if x is None else format(x, spec)


def write_plot(path: Path, rows, info: dict, draw) -> bool:
    """Draw two panels side by side with ``draw(axes, rows, info)`` and save them to ``path`` (PNG).

    ``draw`` returns the figure's title. Returns False (with a note) when matplotlib is not
    installed, else True.
    """
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: writing the table only (pip install matplotlib)", flush=True)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    fig.suptitle(draw(axes, rows, info), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def draw_bars(axes, rows, names, colors, group, groups, tick, panels) -> None:
    """Bars of the ``groups`` (each row's ``group(row)``; ``tick(g)`` labels one), one bar per
    contender of ``names`` that has rows, in that order; ``panels`` gives each axis its ``(key, scale,
    label)``: the rows' ``key`` times ``scale``."""
    names = [n for n in names if any(r["name"] == n for r in rows)]
    width = 0.8 / max(len(names), 1)
    for ax, (key, scale, label) in zip(axes, panels):
        for k, name in enumerate(names):
            by = {group(r): r.get(key) for r in rows if r["name"] == name}
            ax.bar([i + k * width for i in range(len(groups))], [(by.get(g) or 0.0) * scale for g in groups], width,
                   color=colors[name], label=name)
        ax.set_xticks([i + width * (len(names) - 1) / 2 for i in range(len(groups))])
        ax.set_xticklabels([tick(g) for g in groups])
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)


def draw_grouped_bars(axes, rows, names, colors, seconds_label: str = "seconds") -> None:
    """Seconds (left) and peak RSS (right) as bars grouped by (Agrawal function, rows), one bar per
    contender of ``names`` that has rows, in that order.  Bars, not lines over the sizes: lines drew
    one size's functions as a vertical line."""
    groups = sorted({(r["function"], r["rows"]) for r in rows}, key=lambda g: (g[1], g[0]))
    draw_bars(axes, rows, names, colors, lambda r: (r["function"], r["rows"]), groups,
              lambda g: f"F{g[0]} {rows_label(g[1])}",
              (("fit_seconds", 1.0, seconds_label), ("peak_rss_mb", 1e-3, "peak RSS (GB)")))


def draw_bars_by_rows(axes, rows, names, colors, panels) -> None:
    """Bars grouped by row count (:func:`draw_bars`), ``panels`` as there."""
    draw_bars(axes, rows, names, colors, lambda r: r["rows"], sorted({r["rows"] for r in rows}), rows_label, panels)


def write_results(out, info: dict, rows, write_markdown, draw) -> None:
    """Write ``<out>.json``, ``<out>.md`` (``write_markdown(path, rows, info)``) and ``<out>.png``.

    The chart is ``write_plot(path, rows, info, draw)``, skipped without matplotlib. Prints the
    files written, then the table.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    md, js, png = (out.with_name(out.name + ext) for ext in (".md", ".json", ".png"))
    js.write_text(json.dumps({"info": info, "rows": rows}, indent=2) + "\n")
    write_markdown(md, rows, info)
    wrote = [md, js]
    if write_plot(png, rows, info, draw):
        wrote.append(png)
    print("wrote " + ", ".join(str(w) for w in wrote), flush=True)
    print(md.read_text(), flush=True)
