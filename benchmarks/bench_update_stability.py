#!/usr/bin/env python
"""How much of an exact tree an update must regrow, whatever the method: its splits before and after 1 %.

BOAT's update (issue 26) returns the exact tree of the changed data.  However an update is made,
the work below every node whose exact split the change alters is work a fresh fit would do too:
those subtrees must be regrown from rows.  This script fits the exact tree (``max_bins=None``,
depth ``--depth``) on ``--rows`` Agrawal rows, and again with ``--inserted`` (default 1 %) more rows
of the same function drawn with another seed, walks the two trees from the root while their splits
agree (attribute, threshold, categories, missing branch), and reports the first nodes where they
differ and the share of the growth work below them: the sum over those nodes of their rows times
the levels left under them, over the root's rows times the depth (a level's work follows its rows).
An update regrowing only what changed costs at least that share of a fit's growth.

    python benchmarks/bench_update_stability.py --rows 2000000,10000000 --functions 1,6,7
    python benchmarks/bench_update_stability.py --rows 100000000 --parquet --out benchmarks/results/update_stability_100m
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when run as a script
import harness  # noqa: E402  (standard library only)
from harness import ROOT, rows_label  # noqa: E402

PACKAGES = ("rainforest", "numba", "pyarrow")
SEED, INSERT_SEED = 0, 77


def same_split(a, i: int, b, j: int) -> bool:
    """Whether node ``i`` of tree ``a`` and node ``j`` of tree ``b`` split alike."""
    import numpy as np
    f = int(a.feature[i])
    if f != int(b.feature[j]) or a.missing_branch[i] != b.missing_branch[j]:
        return False
    ta, tb = a.threshold[i], b.threshold[j]
    if not (np.isnan(ta) and np.isnan(tb)):
        return bool(ta == tb)
    n = len(a.categories[f]) + 1  # a categorical split: the same branch for every category and missing
    return a.categories[f] == b.categories[f] and \
        list(a.cat_branch[a.cat_offset[i]:a.cat_offset[i] + n]) == list(b.cat_branch[b.cat_offset[j]:b.cat_offset[j] + n])


def changed_nodes(a, b) -> tuple[int, list]:
    """The splits both trees share from the root, and ``(depth, rows in b)`` of each first node
    where they differ (a split in one and a leaf in the other counts)."""
    same, changed, stack = 0, [], [(0, 0, 0)]
    while stack:
        i, j, d = stack.pop()
        if a.feature[i] < 0 and b.feature[j] < 0:
            continue
        if a.feature[i] < 0 or b.feature[j] < 0 or not same_split(a, i, b, j):
            changed.append((d, int(b.n_node_samples[j])))
            continue
        same += 1
        stack += [(int(a.first_child[i]) + k, int(b.first_child[j]) + k, d + 1) for k in range(int(a.n_children[i]))]
    return same, changed


def measure(function: int, rows: int, inserted: int, depth: int, data_root: str | None) -> dict:
    """The two trees fitted in memory, or (``data_root``) on the benchmarks' Parquet folder of these
    rows and on it plus a file of the inserted rows (sizes whose table would not fit memory)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq
    from rainforest import DecisionTreeClassifier
    from rainforest.datasets import agrawal_table
    more = agrawal_table(inserted, function=function, seed=INSERT_SEED)
    fit = lambda data: DecisionTreeClassifier(max_depth=depth, max_bins=None).fit(data, target="class").tree_  # noqa: E731
    if data_root is None:
        table = agrawal_table(rows, function=function, seed=SEED)
        before, after = fit(table), fit(pa.concat_tables([table, more]))
    else:
        files = min(20, rows)
        data_dir = Path(data_root) / f"agrawal_f{function}_{rows}_{files}"
        harness.prepare_data(__file__, data_dir, harness.data_meta(rows, files, function, 100_000, 1))
        train = sorted(str(f) for f in (data_dir / "train").glob("*.parquet"))
        with tempfile.TemporaryDirectory(prefix="bench-stability-") as folder:
            extra = str(Path(folder) / "inserted.parquet")
            pq.write_table(more, extra)
            before, after = fit(train), fit(train + [extra])
    same, changed = changed_nodes(before, after)
    work = sum(n * (depth - d) for d, n in changed) / (int(after.n_node_samples[0]) * depth)
    return {"function": function, "rows": rows, "inserted": inserted, "same_splits": same,
            "changed_nodes": len(changed), "changed_depths": sorted(d for d, _ in changed),
            "regrown_share": work}


def write_markdown(path: Path, rows, info) -> None:
    lines = ["# How much of an exact tree an update must regrow", "",
             f"`{info['command']}` on {info['machine'].get('cpu', '?')} ({info['date']}). Depth {info['depth']}, "
             f"exact trees (`max_bins=None`) before and after inserting {info['inserted_share']:.0%} more rows "
             f"(Agrawal, seed {SEED}; inserted rows seed {INSERT_SEED}).", "",
             "| function | rows | inserted | splits the same from the root | first changed nodes | their depths "
             "(shallowest 8) | growth work below them |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| F{r['function']} | {rows_label(r['rows'])} | {r['inserted']:,} | {r['same_splits']} | "
                     f"{r['changed_nodes']} | {', '.join(map(str, r['changed_depths'][:8]))} | "
                     f"{r['regrown_share']:.1%} |")
    lines += ["", "*growth work below them*: the changed nodes' rows times the levels under them, over the root's "
              "rows times the depth. An exact update (BOAT's, or any) regrows at least those subtrees from rows, "
              "so it costs at least that share of a fit's growth."]
    path.write_text("\n".join(lines) + "\n")


def draw(axes, rows, info) -> str:
    labels = [f"F{r['function']} {rows_label(r['rows'])}" for r in rows]
    axes[0].bar(labels, [100 * r["regrown_share"] for r in rows], color="#2a7f62")
    axes[0].set_ylabel("growth work under changed splits (%)")
    axes[1].bar(labels, [r["changed_nodes"] for r in rows], color="#4c72b0")
    axes[1].set_ylabel("first changed nodes")
    return f"Exact depth-{info['depth']} trees before and after {info['inserted_share']:.0%} more rows"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--rows", type=lambda s: harness.parse_ints(s, "row count", 1000), default=[10_000_000])
    p.add_argument("--functions", type=lambda s: harness.parse_ints(s, "Agrawal function", 1, 10), default=[1, 6, 7])
    p.add_argument("--depth", type=int, default=10, help="maximum tree depth (default 10)")
    p.add_argument("--inserted", type=float, default=0.01, help="inserted rows, a share of --rows (default 0.01)")
    p.add_argument("--parquet", action="store_true",
                   help="fit on the benchmarks' Parquet folders (generated if missing) rather than in memory")
    p.add_argument("--data-root", default=str(ROOT / "benchmarks" / "data"))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "update_stability"))
    args = p.parse_args(argv)
    info = {**harness.run_info(PACKAGES), "depth": args.depth, "inserted_share": args.inserted}
    rows = []
    for n in args.rows:
        for f in args.functions:
            r = measure(f, n, max(1, int(n * args.inserted)), args.depth, args.data_root if args.parquet else None)
            print(f"F{f} {rows_label(n)}: {r['changed_nodes']} changed nodes, {r['regrown_share']:.1%} of the growth",
                  flush=True)
            rows.append(r)
    harness.write_results(args.out, info, rows, write_markdown, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
