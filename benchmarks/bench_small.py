"""Small data: the latency of one fit on numeric arrays, next to scikit-learn's, and a cold start.

* **Warm fits**: ``DecisionTreeClassifier(max_depth=D).fit(X, y)`` on in-memory numpy arrays
  (1,000 rows at depth 3; 20,000 rows at depth 10), the median of many fits in one process after
  two warm-up fits (the first compiles or loads the Numba kernels), against scikit-learn's
  ``DecisionTreeClassifier`` on the same arrays in the same run.
* **Cold start**: a fresh Python process's ``import rainforest`` and its first 1,000-row fit
  (Numba kernels loaded from the on-disk cache), timed inside that process; the median of 15,
  taking turns with the two below. Beside it, in the same run: scikit-learn's fresh process
  (``import sklearn.tree`` and its first fit), and the *dependency floor*: a fresh process that
  only imports what every fit loads (numpy, Numba, pyarrow) and calls one trivial kernel from
  Numba's cache (Numba's first call sets up its compiler and type registries, whatever the
  kernel).  No fit of ours can start sooner.

Run::

    python benchmarks/bench_small.py            # writes benchmarks/results/small.md

The figures depend on the machine's load: run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [(1_000, 3, 200), (20_000, 10, 20)]  # rows, depth, timed fits
N_FEATURES = 8
COLD_RUNS = 15

# a fresh process's import and first fit: rainforest's, or scikit-learn's with its import and estimator
COLD_CHILD = """
import time
t0 = time.perf_counter()
import numpy as np
{imports}
t1 = time.perf_counter()
rng = np.random.default_rng(0)
X = rng.normal(size=(1000, {f}))
y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(np.int64)
{estimator}(max_depth=3).fit(X, y)
t2 = time.perf_counter()
print(t1 - t0, t2 - t0)
"""
OURS = {"imports": "import rainforest", "estimator": "rainforest.DecisionTreeClassifier"}
SKLEARN = {"imports": "from sklearn.tree import DecisionTreeClassifier", "estimator": "DecisionTreeClassifier"}

# numpy, Numba and pyarrow, then one cached kernel, with Numba's BLAS probe answered as
# rainforest.threads answers it (no SciPy import); the kernel's module is written to a temporary folder
FLOOR_KERNEL = """
import numba


@numba.njit(cache=True)
def total(x):
    s = 0
    for v in x:
        s += v
    return s
"""
FLOOR_CHILD = """
import sys, time
t0 = time.perf_counter()
import numpy as np
import numba
import pyarrow
t1 = time.perf_counter()
import numba.np.linalg as linalg
probe, linalg.ensure_blas = linalg.ensure_blas, lambda: None
import numba.np.arraymath
linalg.ensure_blas = probe
sys.path.insert(0, {folder!r})
import floor_kernel
floor_kernel.total(np.arange(10))
t2 = time.perf_counter()
print(t1 - t0, t2 - t0)
"""


def data(n_rows: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, N_FEATURES))
    y = (X[:, 0] + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] > 0).astype(np.int64)
    return X, y


def median_fit(make, X, y, repeats: int) -> float:
    """Median seconds of ``make().fit(X, y)`` after two untimed fits."""
    for _ in range(2):
        make().fit(X, y)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        make().fit(X, y)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def warm_rows() -> list[dict]:
    import rainforest
    from sklearn.tree import DecisionTreeClassifier as SkTree

    rows = []
    for n, depth, repeats in CASES:
        X, y = data(n)
        ours = median_fit(lambda: rainforest.DecisionTreeClassifier(max_depth=depth), X, y, repeats)
        one_thread = median_fit(lambda: rainforest.DecisionTreeClassifier(max_depth=depth, n_jobs=1), X, y, repeats)
        theirs = median_fit(lambda: SkTree(max_depth=depth), X, y, repeats)
        rows.append({"rows": n, "depth": depth, "fits": repeats, "rainforest_ms": 1e3 * ours,
                     "rainforest_1_thread_ms": 1e3 * one_thread, "sklearn_ms": 1e3 * theirs, "ratio": ours / theirs})
    return rows


def fresh_processes(codes: dict, runs: int) -> dict:
    """Per name of ``codes``: the median import and import-plus-first-call seconds of fresh processes
    running its code (which prints both), outside the repository, after one untimed run each (it fills
    Numba's cache). The codes take turns, run after run, so that each sees the machine as the others
    do (a fresh process's time moves by a third here from one minute to the next)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for code in codes.values():
        subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd="/", capture_output=True)
    seen = {name: [] for name in codes}
    for _ in range(runs):
        for name, code in codes.items():
            out = subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd="/", capture_output=True,
                                 text=True)
            seen[name].append([float(v) for v in out.stdout.split()])
    return {name: {"import_s": statistics.median(r[0] for r in rs),
                   "import_and_first_fit_s": statistics.median(r[1] for r in rs), "runs": runs}
            for name, rs in seen.items()}


def cold_start(runs: int) -> dict:
    """Fresh processes: ours, scikit-learn's and the dependency floor's (see the module's docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "floor_kernel.py").write_text(FLOOR_KERNEL)
        found = fresh_processes({"ours": COLD_CHILD.format(f=N_FEATURES, **OURS),
                                 "sklearn": COLD_CHILD.format(f=N_FEATURES, **SKLEARN),
                                 "floor": FLOOR_CHILD.format(folder=folder)}, runs)
    return {**found["ours"], "sklearn": found["sklearn"], "floor": found["floor"]}


def write(rows: list[dict], cold: dict, load: float, path: Path) -> None:
    import numba
    import sklearn

    lines = ["# Small data: fit latency and cold start", "",
             "Command: `python benchmarks/bench_small.py`", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, numba {numba.__version__}, scikit-learn {sklearn.__version__}; "
             f"load average (1 min) at the start {load:.2f}, at the end {os.getloadavg()[0]:.2f}.", "",
             f"Numeric arrays ({N_FEATURES} float64 features, binary target), in memory; median of the timed fits "
             "after two warm-up fits. Ratio: rainforest (default threads) over scikit-learn.", "",
             "| rows | depth | fits | rainforest (ms) | rainforest, n_jobs=1 (ms) | scikit-learn (ms) | ratio |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['rows']:,} | {r['depth']} | {r['fits']} | {r['rainforest_ms']:.2f} "
                     f"| {r['rainforest_1_thread_ms']:.2f} | {r['sklearn_ms']:.2f} "
                     f"| {r['ratio']:.2f} |")
    lines += ["", f"Fresh process (median of {cold['runs']}, taking turns with the other two below; Numba cache "
              "warm, run outside the repository): "
              f"`import rainforest` {cold['import_s']:.3f} s; import and first 1,000-row depth-3 fit "
              f"{cold['import_and_first_fit_s']:.3f} s. Same run: scikit-learn's `import sklearn.tree` "
              f"{cold['sklearn']['import_s']:.3f} s, with its first fit {cold['sklearn']['import_and_first_fit_s']:.3f} s; "
              f"the dependency floor (numpy, Numba, pyarrow imported {cold['floor']['import_s']:.3f} s, then one "
              f"trivial kernel from Numba's cache) {cold['floor']['import_and_first_fit_s']:.3f} s: ours is "
              f"{cold['import_and_first_fit_s'] - cold['floor']['import_and_first_fit_s']:.3f} s above the floor.", ""]
    path.write_text("\n".join(lines))
    path.with_suffix(".json").write_text(json.dumps({"warm": rows, "cold": cold}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "small.md")
    parser.add_argument("--cold-runs", type=int, default=COLD_RUNS, help="fresh processes of each kind")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    cold = cold_start(args.cold_runs)
    rows = warm_rows()
    write(rows, cold, load, args.out)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
