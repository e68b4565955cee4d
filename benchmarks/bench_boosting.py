#!/usr/bin/env python
"""AdaBoost of shallow trees: rounds grown from the rows encoded once, against rounds that read the data.

For every training size (``--rows``, default 1M and 10M Agrawal F7 rows) fits, each in its own
child process (killed after ``--time-limit``), ``--rounds`` SAMME rounds of depth ``--depth`` trees:

* ``rainforest``        -- ``AdaBoostClassifier(DecisionTreeClassifier(max_depth))`` on the Parquet
  folder: the rows are encoded once after the profile and every round grows from them (the boosting
  store, ``rainforest/boost_store.py``): 2 passes over the data;
* ``rainforest-rounds`` -- the same, with the store turned off: each round reads the data once (its
  first pass weighs, encodes and keeps the rows), as before the store: the baseline;
* ``sklearn``           -- scikit-learn's ``AdaBoostClassifier`` (SAMME) of the same trees, after
  reading the Parquet rows into a float32 array (timed);
* ``dask-2``            -- ``rainforest`` on ``DaskSource(folder, scheduler=...)``, a loopback cluster of
  2 ``dask worker`` processes of 1 thread (``scripts/dask_cluster.py``, started and warmed up untimed):
  the first round's read keeps each partition's batches on its worker
  (``rainforest/storage/partition_cache.py``), every later round weighs and encodes them there:
  2 passes over the data (trees only);
* ``dask-2-rounds``     -- the same with the kept batches turned off: each round reads the data once
  (as before the cache: the cluster's baseline).

With ``--learner bayes`` the rounds boost Gaussian naive Bayes instead (``--depth`` unused):
``rainforest`` keeps each learner's wrong rows as bits, so a round scores only its newest learner,
and its rounds read a local copy of the rows the first pass read (one pass over the data in all);
``rainforest-reread`` is the same with the copy turned off (a pass over the data per round);
``rainforest-rounds`` scores every learner so far in every round and reads the data every round
(the bits and the copy turned off, ``boosting.BITS_ROOM = 0``: the baseline); ``sklearn`` boosts
``GaussianNB``.  ``dask-2`` keeps the partitions' raw batches on the workers for the rounds,
``dask-2-rounds`` reads the data every round.

The table says whether ``rainforest`` boosted the learners of ``rainforest-rounds`` (JSON for JSON).
Fit times include reading the data; the kernels are compiled first, outside the timed fit.  Writes
``<out>.md``, ``<out>.json`` and ``<out>.png`` (default ``benchmarks/results/boosting``).

    python benchmarks/bench_boosting.py                                  # 1M and 10M rows, 50 rounds
    python benchmarks/bench_boosting.py --rows 200000 --out /tmp/boost   # a check
    python benchmarks/bench_boosting.py --learner bayes --rounds 20 --rows 1000000,10000000 \
        --out benchmarks/results/boosting_bayes
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import LABEL, ROOT, SEED, fmt, rows_label  # noqa: E402

CONTENDERS = ("rainforest", "rainforest-reread", "rainforest-rounds", "sklearn", "dask-2", "dask-2-rounds")
PACKAGES = ("rainforest", "numba", "pyarrow", "scikit-learn")
COLORS = {"rainforest": "#2a7f62", "rainforest-reread": "#937860", "rainforest-rounds": "#dd8452", "sklearn": "#4c72b0",
          "dask-2": "#8172b3",
          "dask-2-rounds": "#c44e52"}


def _rainforest(args) -> dict:
    import json

    from rainforest import AdaBoostClassifier, DecisionTreeClassifier, NaiveBayesClassifier, boost_store, boosting
    from rainforest.datasets import agrawal_table
    from rainforest.storage import DaskSource
    if args.child == "rainforest-rounds":  # no store (trees: every round reads the data), no bits (naive Bayes)
        boost_store.BoostStore.fill = classmethod(lambda cls, *a, **k: None)
        boosting.BITS_ROOM = 0
    if args.child in ("rainforest-rounds", "rainforest-reread"):  # naive Bayes: no local copy of the rows
        boosting.copy_pays = lambda source: False
    if args.child == "dask-2-rounds":  # no batches kept on the workers: every round reads the data
        DaskSource.keep_batches = lambda self, fit_id, budget: None

    def model():
        base = NaiveBayesClassifier() if args.learner == "bayes" else DecisionTreeClassifier(max_depth=args.depth)
        return AdaBoostClassifier(base, n_estimators=args.rounds)
    t0 = time.perf_counter()
    model().fit(agrawal_table(20_000, function=7, seed=SEED + 1), target=LABEL)
    warmup = time.perf_counter() - t0
    cluster, train = None, args.train
    if args.child.startswith("dask"):
        sys.path.insert(0, str(harness.ROOT / "scripts"))
        from dask_cluster import LoopbackCluster

        cluster = LoopbackCluster(n_workers=2, nthreads=1, env={"NUMBA_NUM_THREADS": "1"}, timeout=120)
        cluster.start()
    try:
        if cluster is not None:
            _warm_workers(cluster.address, model)
            train = DaskSource(args.train, scheduler=cluster.address)
        clf = model()
        t0 = time.perf_counter()
        clf.fit(train, target=LABEL)
        fit = time.perf_counter() - t0
    finally:
        if isinstance(train, DaskSource):
            train.close()
        if cluster is not None:
            cluster.stop()
    Path(args.model).write_text("\n".join(json.dumps(e.model_dict()) if args.learner == "bayes" else e.to_json()
                                          for e in clf.estimators_))
    return {"fit_seconds": fit, "passes": int(clf.n_passes_), "warmup_seconds": warmup,
            "rounds_done": len(clf.estimators_), "test_accuracy": float(clf.score(args.test, target=LABEL))}


def _warm_workers(address: str, model) -> None:
    """An untimed fit on a small Parquet folder of Agrawal rows (removed after), so the cluster's
    workers have compiled or loaded their kernels before the timed fit."""
    from rainforest.datasets import write_agrawal_parquet
    from rainforest.storage import DaskSource
    with tempfile.TemporaryDirectory(prefix="bench-boost-warm-") as folder:
        write_agrawal_parquet(folder, 20_000, function=7, n_files=2, seed=SEED + 1)
        with DaskSource(folder, scheduler=address) as warm:
            model().fit(warm, target=LABEL)


def _sklearn(args) -> dict:
    import numpy as np
    import pyarrow.parquet as pq
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.naive_bayes import GaussianNB
    from sklearn.tree import DecisionTreeClassifier

    def xy(folder):
        t = pq.read_table(folder)
        cols = [c for c in t.column_names if c != LABEL]
        return np.column_stack([t.column(c).to_numpy().astype(np.float32) for c in cols]), t.column(LABEL).to_numpy()
    t0 = time.perf_counter()
    X, y = xy(args.train)
    base = GaussianNB() if args.learner == "bayes" else DecisionTreeClassifier(max_depth=args.depth)
    clf = AdaBoostClassifier(base, n_estimators=args.rounds)
    clf.fit(X, y)
    fit = time.perf_counter() - t0
    Xt, yt = xy(args.test)
    return {"fit_seconds": fit, "passes": None, "rounds_done": len(clf.estimators_),
            "test_accuracy": float(clf.score(Xt, yt))}


def run(args) -> dict:
    return _sklearn(args) if args.child == "sklearn" else _rainforest(args)


def write_markdown(path: Path, rows, info) -> None:
    learners = "Gaussian naive Bayes" if info.get("learner") == "bayes" else f"depth-{info['depth']} trees"
    lines = ["# AdaBoost: rounds grown from the rows encoded once" if info.get("learner") != "bayes" else
             "# AdaBoost of naive Bayes: each round scores its newest learner only", "",
             f"{info['rounds']} SAMME rounds of {learners}, Agrawal F7. `{info['command']}` on "
             f"{info['machine'].get('cpu', '?')}, {info['machine'].get('usable_cores', '?')} cores ({info['date']}).", "",
             "| rows | contender | status | seconds | × its -rounds baseline | passes | rounds | peak RSS (MB) | "
             "test accuracy | same learners as its -rounds baseline |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    base = {(r["rows"], r["name"]): r.get("fit_seconds") for r in rows if r["name"].endswith("-rounds")}
    for r in rows:
        baseline = base.get((r["rows"], ("dask-2" if r["name"].startswith("dask") else "rainforest") + "-rounds"))
        ratio = r.get("fit_seconds") / baseline if r.get("fit_seconds") and baseline else None
        lines.append(f"| {rows_label(r['rows'])} | {r['name']} | {r.get('status')} | {fmt(r.get('fit_seconds'), '.2f')} | "
                     f"{fmt(ratio, '.2f')} | {fmt(r.get('passes'), 'd')} | {fmt(r.get('rounds_done'), 'd')} | "
                     f"{fmt(r.get('peak_rss_mb'), '.0f')} | {fmt(r.get('test_accuracy'), '.4f')} | "
                     f"{r.get('same_trees', '-')} |")
    baseline = ("`rainforest-rounds` is rainforest scoring every learner so far in every round (its wrong-bits "
                "turned off) and reading the data every round; `rainforest-reread` keeps the bits but reads the "
                "data every round (no local copy of the rows); `rainforest` reads it once. `dask-2` fits on a "
                "loopback cluster of 2 worker processes of 1 thread, keeping the partitions' raw batches on the "
                "workers, `dask-2-rounds` with them turned off (the peak RSS is the client's). "
                if info.get("learner") == "bayes" else
                "`rainforest-rounds` is rainforest with the boosting store turned off: a round reads the data once; "
                "`dask-2` fits on a loopback cluster of 2 worker processes of 1 thread, keeping the partitions' "
                "batches on the workers, `dask-2-rounds` with them turned off (the peak RSS is the client's). ")
    lines += ["", "Passes are over the data (the profile included). " + baseline + "scikit-learn's time includes reading the "
              "Parquet rows into a float32 array; the default `memory_budget` (1GB) for rainforest; peak RSS is the "
              "child's VmHWM."]
    path.write_text("\n".join(lines) + "\n")


def draw(axes, rows, info) -> str:
    harness.draw_grouped_bars(axes, rows, CONTENDERS, COLORS)
    learners = "naive Bayes" if info.get("learner") == "bayes" else f"depth-{info['depth']} trees"
    return f"AdaBoost, {info['rounds']} rounds of {learners} (Agrawal F7)"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--rows", type=lambda s: harness.parse_ints(s, "row count", 1000), default=[1_000_000, 10_000_000])
    p.add_argument("--learner", choices=("tree", "bayes"), default="tree", help="what each round fits (default tree)")
    p.add_argument("--depth", type=int, default=3, help="depth of each round's tree (default 3)")
    p.add_argument("--rounds", type=int, default=50, help="boosting rounds (default 50)")
    p.add_argument("--files", type=int, default=20, help="training Parquet files per size (default 20)")
    p.add_argument("--test-rows", type=int, default=100_000)
    p.add_argument("--time-limit", type=float, default=3600.0, help="seconds per child process (default 3600)")
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "boosting"))
    p.add_argument("--data-root", default=str(ROOT / "benchmarks" / "data"))
    harness.add_child_options(p, CONTENDERS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    code = harness.internal_mode(args, lambda: run(args), "fit_seconds")
    if code is not None:
        return code
    contenders = harness.parse_contenders(p, args.contenders, CONTENDERS)
    if args.learner == "tree":  # its copy of the rows is naive Bayes's: for trees it would be rainforest again
        contenders = [c for c in contenders if c != "rainforest-reread"]
    info = {**harness.run_info(PACKAGES), "rows_list": args.rows, "learner": args.learner, "depth": args.depth,
            "rounds": args.rounds, "time_limit": args.time_limit, "contenders": contenders}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-boost-") as models:
        for n in args.rows:
            files = min(args.files, n)
            data_dir = Path(args.data_root) / f"agrawal_f7_{n}_{files}"
            harness.prepare_data(__file__, data_dir, harness.data_meta(n, files, 7, args.test_rows, 1))
            harness.warm_page_cache(data_dir / "train")
            child_args = ["--train", str(data_dir / "train"), "--test", str(data_dir / "test"), "--depth",
                          str(args.depth), "--rounds", str(args.rounds), "--learner", args.learner]
            found = harness.run_compared(__file__, contenders, child_args, args.time_limit, "fit_seconds", models,
                                         str(n), ("rainforest", "rainforest-rounds"), "same_trees", rows_label(n))
            kept, rounds = (Path(models) / f"{name}-{n}.json" for name in ("dask-2", "dask-2-rounds"))
            if kept.exists() and rounds.exists():
                for r in found:
                    if r["name"] == "dask-2":
                        r["same_trees"] = kept.read_text() == rounds.read_text()
            rows += [{**r, "rows": n, "function": 7} for r in found]
    harness.write_results(args.out, info, rows, write_markdown, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
