"""Threads that don't fight: ``n_jobs=-1`` against ``n_jobs=1``, on a quiet machine and with one
core busy with competing work, in the same run.

Every fit runs in a fresh child process (after an untimed warm-up fit, so compilation is not
counted) with the OpenMP wait policy given by ``--omp-wait-policy`` (``auto``: rainforest's own
choice, ``active``: the spinning policy GNU OpenMP takes by default, the state before issue 16).
The competing load is a second process spinning on one core for the whole fit. Rounds alternate
the configurations (A B C D, A B C D, ...) and the table reports medians.

    python benchmarks/bench_threads.py --rows 1000000 --rounds 3

Results: ``benchmarks/results/threads.md`` (and ``threads.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

LEARNERS = ("tree", "forest")


def child(learner: str, n_jobs: int, data: str) -> None:
    """Fit once untimed (warm-up), then once timed; print the seconds as JSON."""
    from rainforest import DecisionTreeClassifier, RandomForestClassifier

    def make():
        if learner == "tree":
            return DecisionTreeClassifier(max_depth=10, n_jobs=n_jobs)
        return RandomForestClassifier(n_estimators=20, max_depth=8, n_jobs=n_jobs, random_state=0)

    train = str(Path(data) / "train")
    make().fit(str(next(Path(train).glob("part-*.parquet"))), target=harness.LABEL)  # warm-up: kernels loaded
    t0 = time.perf_counter()
    est = make().fit(train, target=harness.LABEL)
    print(json.dumps({"seconds": time.perf_counter() - t0, "passes": est.n_passes_}))


def busy_core() -> subprocess.Popen:
    """A process spinning on one core (competing work) until it is killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def run_one(learner, n_jobs, load, policy, data) -> float:
    env = dict(os.environ)
    if policy == "active":
        env["OMP_WAIT_POLICY"] = "ACTIVE"
    else:
        env.pop("OMP_WAIT_POLICY", None)  # rainforest chooses
    spinner = busy_core() if load == "busy" else None
    try:
        out = subprocess.run([sys.executable, __file__, "--child", learner, str(n_jobs), data], env=env,
                             capture_output=True, text=True, check=True).stdout
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
    return json.loads(out.strip().splitlines()[-1])["seconds"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--learners", default="tree,forest")
    p.add_argument("--omp-wait-policy", choices=("auto", "active"), default="auto")
    p.add_argument("--out", default=str(harness.ROOT / "benchmarks" / "results" / "threads"))
    p.add_argument("--child", nargs=3, metavar=("LEARNER", "N_JOBS", "DATA"))
    p.add_argument("--generate")
    p.add_argument("--meta")
    a = p.parse_args()
    if a.child:
        return child(a.child[0], int(a.child[1]), a.child[2])
    if a.generate:
        return harness.generate(Path(a.generate), json.loads(a.meta))
    data = harness.ROOT / "benchmarks" / "data" / f"threads_{a.rows}"
    harness.prepare_data(__file__, data, harness.data_meta(a.rows, 4, 7, 10_000, 1))
    configs = [(learner, n_jobs, load) for learner in a.learners.split(",") for load in ("quiet", "busy")
               for n_jobs in (-1, 1)]
    times = {c: [] for c in configs}
    for r in range(a.rounds):
        for c in configs:
            times[c].append(run_one(*c, a.omp_wait_policy, str(data)))
            print(f"round {r + 1}: {c} {times[c][-1]:.2f} s", flush=True)
    rows = []
    for learner in a.learners.split(","):
        for load in ("quiet", "busy"):
            all_cores = statistics.median(times[(learner, -1, load)])
            one = statistics.median(times[(learner, 1, load)])
            rows.append({"learner": learner, "load": load, "n_jobs=-1": all_cores, "n_jobs=1": one,
                         "ratio": all_cores / one})
    info = harness.run_info(["numba", "numpy", "pyarrow"])
    info.update(rows_trained=a.rows, rounds=a.rounds, omp_wait_policy=a.omp_wait_policy,
                command=" ".join(["python", "benchmarks/bench_threads.py"] + sys.argv[1:]))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"info": info, "rows": rows, "times": {
        "/".join(map(str, c)): t for c, t in times.items()}}, indent=2) + "\n")
    lines = [f"# n_jobs=-1 against n_jobs=1 ({a.rows:,} Agrawal F7 rows, OpenMP wait policy: "
             f"{a.omp_wait_policy})", "", f"Command: `{info['command']}`", "",
             "| learner | load | n_jobs=-1 (s) | n_jobs=1 (s) | -1 / 1 |", "|---|---|---|---|---|"]
    lines += [f"| {r['learner']} | {r['load']} | {r['n_jobs=-1']:.2f} | {r['n_jobs=1']:.2f} | {r['ratio']:.2f} |"
              for r in rows]
    lines += ["", "tree: depth 10, binned; forest: 20 trees of depth 8. Medians of "
              f"{a.rounds} alternating rounds, each fit in a fresh process after a warm-up fit. "
              "busy: one other process spins on one core for the whole fit.", ""]
    out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
