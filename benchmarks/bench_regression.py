"""Regression trees: one depth-10 regression tree on Agrawal Parquet, against its peers in the same run.

The target is Agrawal's ``hvalue`` (a house's value: its zipcode's scale times uniform noise), the
features every other attribute (the class column is dropped). Contenders, each in its own process:

* ``rainforest-binned`` -- ``DecisionTreeRegressor(max_depth=10)`` fitted from the Parquet folder;
* ``rainforest-exact``  -- the same with ``max_bins=None`` (scikit-learn's tree, node for node);
* ``lightgbm``          -- one LightGBM regression tree (255 bins, no regularisation), rows read into numpy;
* ``xgboost``           -- one XGBoost ``hist`` regression tree, the same choices;
* ``sklearn``           -- scikit-learn's exact ``DecisionTreeRegressor``, rows read into numpy.

The peers' time includes reading the Parquet rows into numpy (rainforest reads them itself). R² is
measured on the held-out folder. Run::

    python benchmarks/bench_regression.py --rows 10000000 --contenders rainforest-binned,lightgbm,xgboost
    python benchmarks/bench_regression.py --rows 1000000 --out benchmarks/results/regression_1m

The data folders are bench_scale.py's (``benchmarks/data/agrawal_f7_<rows>_20``), generated when missing.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parent.parent
TARGET = "hvalue"
CONTENDERS = ("rainforest-binned", "rainforest-exact", "lightgbm", "xgboost", "sklearn")
COLORS = {"rainforest-binned": "#4c72b0", "rainforest-exact": "#55a868", "lightgbm": "#dd8452",
          "xgboost": "#c44e52", "sklearn": "#8172b3"}
PACKAGES = ("rainforest", "numba", "pyarrow", "scikit-learn", "lightgbm", "xgboost")


def _read_xy(folder: str):
    """The Parquet folder's features (float32) and ``hvalue`` (float64) in numpy."""
    import numpy as np
    import pyarrow.dataset as ds

    dataset = ds.dataset(folder, format="parquet")
    features = [n for n in dataset.schema.names if n not in (TARGET, harness.LABEL)]
    table = dataset.to_table(columns=features + [TARGET])
    X = np.column_stack([table.column(n).to_numpy().astype(np.float32) for n in features])
    return X, table.column(TARGET).to_numpy().astype(np.float64)


def _run_rainforest(args, max_bins) -> dict:
    from rainforest import DecisionTreeRegressor
    from rainforest.datasets import agrawal_table

    warm = agrawal_table(20_000, function=7, seed=1).drop([harness.LABEL])
    DecisionTreeRegressor(max_depth=args.depth, max_bins=max_bins).fit(warm, target=TARGET).predict(warm)
    features = [n for n in warm.column_names if n != TARGET]
    fit, times, reg = harness.timed_median(args.repeats, lambda: DecisionTreeRegressor(
        max_depth=args.depth, max_bins=max_bins).fit(args.train, target=TARGET, features=features))
    Xt, yt = _read_xy(args.test)
    return {"fit_seconds": fit, "fit_seconds_all": times, "passes": int(reg.n_passes_),
            "r2": float(reg.score(Xt, yt)), "n_leaves": int(reg.get_n_leaves())}


def _run_peer(args, make) -> dict:
    """bench_foundation's in-memory peer: warmed up, the rows read into numpy and fitted (timed), scored
    on the held-out rows by the model's own R² (scikit-learn's, so rainforest is not imported here)."""
    from bench_foundation import fit_in_memory

    row = fit_in_memory(args.train, args.test, make, 2, repeats=args.repeats, read=_read_xy)
    row.pop("model")
    row["r2"] = row.pop("test_accuracy")
    return row


def _run(name: str, args) -> dict:
    if name == "rainforest-binned":
        return _run_rainforest(args, 255)
    if name == "rainforest-exact":
        return _run_rainforest(args, None)
    if name == "lightgbm":
        import lightgbm

        return _run_peer(args, lambda: lightgbm.LGBMRegressor(
            n_estimators=1, max_depth=args.depth, num_leaves=2 ** args.depth, learning_rate=1.0, min_child_samples=1,
            min_child_weight=0, reg_lambda=0, subsample=1.0, colsample_bytree=1.0, max_bin=255, n_jobs=2, verbose=-1))
    if name == "xgboost":
        import xgboost

        return _run_peer(args, lambda: xgboost.XGBRegressor(
            n_estimators=1, tree_method="hist", max_depth=args.depth, max_leaves=0, max_bin=255, learning_rate=1.0,
            min_child_weight=0, reg_lambda=0, reg_alpha=0, gamma=0, base_score=0.0, n_jobs=2, verbosity=0))
    from sklearn.tree import DecisionTreeRegressor

    return _run_peer(args, lambda: DecisionTreeRegressor(max_depth=args.depth, random_state=0))


def _markdown(path: Path, rows, info: dict) -> None:
    base = {r["rows"]: r for r in rows if r["name"] == "lightgbm" and r.get("fit_seconds")}
    lines = ["# Regression trees: one depth-10 tree, Agrawal `hvalue` from the other attributes", "",
             f"Command: `{info['command']}`", "",
             "Machine: {cores} cores, {cpu}, {ram_gb:.0f} GB, Python {python}.".format(**info["machine"]), "",
             "Peers' time includes reading the Parquet rows into numpy. R² on the held-out rows.", "",
             "| rows | contender | fit (s) | × LightGBM | passes | R² | peak RSS (MB) | status |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lg = base.get(r["rows"])
        ratio = harness.fmt(r["fit_seconds"] / lg["fit_seconds"], ".2f") if lg and r.get("fit_seconds") else "-"
        lines.append(f"| {r['rows']:,} | {r['name']} | {harness.fmt(r.get('fit_seconds'), '.2f')} | {ratio} | "
                     f"{r.get('passes') or '-'} | {harness.fmt(r.get('r2'), '.4f')} | "
                     f"{harness.fmt(r.get('peak_rss_mb'), '.0f')} | {r['status']} |")
    path.write_text("\n".join(lines) + "\n")


def _draw(axes, rows, info) -> None:
    for r in rows:
        r.setdefault("function", 7)
    harness.draw_grouped_bars(axes, rows, CONTENDERS, COLORS)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--depth", type=int, default=10)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "regression"))
    harness.add_child_options(p, CONTENDERS)
    args = p.parse_args(argv)
    code = harness.internal_mode(args, lambda: _run(args.child, args), "fit_seconds")
    if code is not None:
        return code
    chosen = harness.parse_contenders(p, args.contenders, CONTENDERS)
    data = ROOT / "benchmarks" / "data" / f"agrawal_f7_{args.rows}_20"
    harness.prepare_data(__file__, data, harness.data_meta(args.rows, 20, 7, 100_000, 1))
    info = {**harness.run_info(PACKAGES), "command": "python benchmarks/bench_regression.py " + " ".join(
        sys.argv[1:] if argv is None else argv)}
    rows = []
    for name in chosen:
        t0 = time.perf_counter()
        row = harness.run_contender(__file__, name, ["--train", str(data / "train"), "--test", str(data / "test"),
                                                     "--rows", str(args.rows), "--depth", str(args.depth),
                                                     "--repeats", str(args.repeats)], args.timeout, "fit_seconds")
        row.update(rows=args.rows, function=7)
        print(f"  {name}: {row.get('fit_seconds')} s, R² {row.get('r2')}, {row['status']} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        rows.append(row)
    harness.write_results(args.out, info, rows, _markdown, _draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
