"""What a database itself takes to count one tree level, against its one ``GROUP BY`` scan.

Issue 25 asks a pushed-down level's query to take at most twice ``SELECT class, count(*) FROM t
GROUP BY 1``.  A level counts, per frontier node, class and slot, every attribute: this script
times the database doing only that, with no rainforest in the loop, over a table of the binned
rows already at their nodes (what ``rainforest.node_tables`` keeps: nine ``SMALLINT`` bins, the
class, the node), in three forms of the same counts:

* ``grouping sets``: ``GROUP BY GROUPING SETS ((node, y, e0), ..., (node, y, e8))``, the form
  ``rainforest.pushdown.avc_query`` sends;
* ``union all``: one ``GROUP BY node, y, e_j`` per attribute in a ``UNION ALL``;
* ``unnest``: each row's nine (attribute, bin) keys unnested into one ``GROUP BY``;

at 1, 16 and 256 nodes (rows spread evenly: a level near the root, a middle one, a deep one),
with the node read from the table (``at their nodes``) or routed on by a small ``CASE`` (``routed``,
as a level below the table's nodes does).  Each time is the median of 3 runs; ``× scan`` divides
it by the scan's median on the same rows.

Run::

    python benchmarks/bench_level_query.py --rows 2000000   # writes benchmarks/results/level_query.*

PostgreSQL comes from ``scripts/postgres_server.py`` (loopback, ``work_mem`` 1 GB for every query
here, so each form hashes in memory); DuckDB runs in process on an in-memory table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import harness  # noqa: E402

COLUMNS = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
NODES = (1, 16, 256)
FORMS = ("grouping sets", "union all", "unnest")
REPEATS = 3  # runs of each query; the median is kept


def level_queries(n_nodes: int, routed: bool) -> dict:
    """The three forms of one level's counts over the table ``nt``."""
    e = range(len(COLUMNS))
    node = (f"(CASE WHEN node < {n_nodes} THEN node * 2 + (CASE WHEN e2 <= 120 THEN 1 ELSE 2 END) ELSE node END)"
            if routed else "node")
    rows = f"(SELECT {node} AS node, y, {', '.join(f'e{j}' for j in e)} FROM nt) AS r"
    keys = ", ".join(f"e{j}" for j in e)
    return {
        "grouping sets": f"SELECT node, y, {keys}, count(*) FROM {rows} GROUP BY GROUPING SETS "
                         f"({', '.join(f'(node, y, e{j})' for j in e)})",
        "union all": " UNION ALL ".join(f"SELECT {j} AS g, node, y, e{j} AS s, count(*) FROM {rows} "
                                        f"GROUP BY node, y, e{j}" for j in e),
        "unnest": f"SELECT node, y, k, count(*) FROM (SELECT node, y, unnest(ARRAY["
                  f"{', '.join(f'{256 * j} + e{j}' for j in e)}]) AS k FROM {rows}) AS u GROUP BY node, y, k",
    }


def node_table_sql(table, n_nodes: int) -> str:
    """``nt``: each row's nine bins (255 equal-width bins of its column's range), class and node."""
    bins = []
    for j, c in enumerate(COLUMNS):
        x = table.column(c).to_numpy()
        lo, hi = float(x.min()), float(x.max()) + 1e-6
        bins.append(f"CAST(floor(({c} - {lo}) / ({hi} - {lo}) * 255) AS SMALLINT) AS e{j}")
    return (f"CREATE TABLE nt AS SELECT CAST(floor(random() * {n_nodes}) AS INTEGER) AS node, class AS y, "
            f"{', '.join(bins)} FROM agrawal")


def measure(database: str, table) -> list[dict]:
    """Rows of (database, nodes, routed, form, seconds, × scan)."""
    import contextlib

    import duckdb
    import psycopg
    from postgres_server import PostgresServer, load_table

    with contextlib.ExitStack() as stack:
        if database == "duckdb":
            con = duckdb.connect()
            con.register("arrow_rows", table)
            con.execute("CREATE TABLE agrawal AS SELECT * FROM arrow_rows")
            run = lambda sql: con.execute(sql).fetchall()  # noqa: E731
            analyze = lambda: None  # noqa: E731
        else:
            server = stack.enter_context(PostgresServer())
            load_table(server.url, "agrawal", table)
            conn = stack.enter_context(psycopg.connect(server.url, autocommit=True))
            cur = conn.cursor()
            cur.execute("SET work_mem = '1GB'")
            run = lambda sql: (cur.execute(sql), cur.fetchall() if cur.description else None)  # noqa: E731
            analyze = lambda: run("VACUUM ANALYZE nt")  # noqa: E731
        scan = harness.timed_median(REPEATS, lambda: run("SELECT class, count(*) FROM agrawal GROUP BY 1"))[0]
        rows = []
        for n_nodes in NODES:
            run("DROP TABLE IF EXISTS nt")
            run(node_table_sql(table, n_nodes))
            analyze()
            for routed in (False, True):
                for form, sql in level_queries(n_nodes, routed).items():
                    seconds = harness.timed_median(REPEATS, lambda: run(sql))[0]
                    rows.append({"database": database, "nodes": n_nodes, "routed": routed, "form": form,
                                 "seconds": seconds, "scan_seconds": scan, "x_scan": seconds / scan})
                    print(f"{database} {n_nodes} nodes {'routed' if routed else 'at their nodes'} {form}: "
                          f"{seconds:.3f} s, {seconds / scan:.1f}x the scan", flush=True)
        return rows


def write_markdown(path: Path, rows, info) -> None:
    lines = ["# A level's counts in the database itself, against one GROUP BY scan", "",
             f"- command: `{info['command']}`", f"- date: {info['date']}",
             f"- machine: {info['machine']['usable_cores']} cores, {info['machine']['cpu']}; versions: "
             + ", ".join(f"{k} {v}" for k, v in info["versions"].items()),
             f"- data: {info['rows']:,} Agrawal F7 rows; nine 255-bin `SMALLINT` columns, the class and the node "
             "in a table `nt` (see the script's docstring for the three forms)",
             "- the nodes' rows are spread evenly over every bin, so every (node, class, bin) group is there: the "
             "worst case for 16 and 256 nodes (a real deep level's rows sit in few bins of the attributes split on "
             "above, and rows at leaves have left the node table); 1 node is what every level costs per row at "
             "least", ""]
    for database in dict.fromkeys(r["database"] for r in rows):
        scan = next(r["scan_seconds"] for r in rows if r["database"] == database)
        lines += [f"## {database}: scan `SELECT class, count(*) FROM agrawal GROUP BY 1` {scan:.3f} s", "",
                  "| nodes | node | " + " | ".join(f"{f} s (× scan)" for f in FORMS) + " |",
                  "|---:|---|" + "---:|" * len(FORMS)]
        for n_nodes in NODES:
            for routed in (False, True):
                got = {r["form"]: r for r in rows if r["database"] == database and r["nodes"] == n_nodes
                       and r["routed"] == routed}
                lines.append(f"| {n_nodes} | {'routed' if routed else 'at its node'} | "
                             + " | ".join(f"{got[f]['seconds']:.3f} ({got[f]['x_scan']:.1f}×)" for f in FORMS) + " |")
        lines.append("")
    path.write_text("\n".join(lines))


def draw(axes, rows, info) -> str:
    for ax, database in zip(axes, ("postgres", "duckdb")):
        mine = [r for r in rows if r["database"] == database and not r["routed"]]
        for k, form in enumerate(FORMS):
            ax.bar([i + 0.27 * k for i in range(len(NODES))],
                   [next(r["x_scan"] for r in mine if r["nodes"] == n and r["form"] == form) for n in NODES],
                   0.27, label=form)
        ax.axhline(2.0, color="black", linestyle="--", linewidth=0.8)
        ax.set_xticks([i + 0.27 for i in range(len(NODES))])
        ax.set_xticklabels([f"{n} nodes" for n in NODES])
        ax.set_ylabel("× one GROUP BY scan")
        ax.set_title(database, fontsize=9)
    axes[0].legend(fontsize=8)
    return f"A level's counts over {info['rows']:,} rows at their nodes (dashed: issue 25's 2×)"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--databases", default="postgres,duckdb")
    p.add_argument("--out", default=str(harness.ROOT / "benchmarks" / "results" / "level_query"))
    args = p.parse_args(argv)
    from rainforest.datasets import agrawal_table

    table = agrawal_table(args.rows, function=7)
    rows = [r for database in args.databases.split(",") for r in measure(database, table)]
    info = {**harness.run_info(["duckdb", "psycopg", "pyarrow"]), "rows": args.rows}
    harness.write_results(args.out, info, rows, write_markdown, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
