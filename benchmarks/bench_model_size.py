"""Model file sizes: a forest of full-depth trees saved as JSON and as the compact ``.rfz`` form.

    python benchmarks/bench_model_size.py --rows 300000 --trees 40

Writes ``benchmarks/results/model_size.md``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=300_000)
    p.add_argument("--trees", type=int, default=40)
    p.add_argument("--function", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "model_size.md"))
    a = p.parse_args()
    from rainforest import RandomForestClassifier, load
    from rainforest.datasets import write_agrawal_parquet

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        write_agrawal_parquet(data, a.rows, function=a.function, n_files=2)
        clf = RandomForestClassifier(n_estimators=a.trees, random_state=0).fit(str(data), target="class")
        nodes = sum(t.node_count for t in clf.estimators_)  # the forest's trees are Tree models
        rows = []
        for suffix in (".json", ".rfz"):
            path = Path(tmp) / f"forest{suffix}"
            t0 = time.perf_counter()
            clf.save(path)
            saved = time.perf_counter() - t0
            t0 = time.perf_counter()
            load(path)
            loaded = time.perf_counter() - t0
            rows.append((suffix, path.stat().st_size, saved, loaded))
    command = " ".join(["python", "benchmarks/bench_model_size.py"] + sys.argv[1:])
    lines = [f"# Model file sizes: {a.trees} full-depth trees ({nodes:,} nodes), Agrawal F{a.function}, "
             f"{a.rows:,} rows", "", f"Command: `{command}`", "",
             "| file | bytes | MB | save (s) | load (s) |", "|---|---|---|---|---|"]
    lines += [f"| `forest{s}` | {b:,} | {b / 1e6:.1f} | {sv:.2f} | {ld:.2f} |" for s, b, sv, ld in rows]
    lines += ["", f"`.rfz` is {rows[0][1] / rows[1][1]:.1f} times smaller than JSON.", ""]
    Path(a.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
