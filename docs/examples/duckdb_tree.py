"""Train where the data lives: a DuckDB table, with every pass pushed down as one query,
then score inside DuckDB.

Run: python docs/examples/duckdb_tree.py
"""
import tempfile
from pathlib import Path

import duckdb

from rainforest import DecisionTreeClassifier
from rainforest.datasets import agrawal_table
from rainforest.storage import DuckDBSource

with tempfile.TemporaryDirectory() as tmp:
    db = str(Path(tmp) / "warehouse.duckdb")
    with duckdb.connect(db) as con:
        rows = agrawal_table(100_000, function=1, seed=0)  # a pyarrow Table
        con.register("rows", rows)
        con.execute("CREATE TABLE loans AS SELECT row_number() OVER () AS id, * FROM rows")

    con = duckdb.connect(db)    # a writable connection (database=db alone opens it read-only)
    source = DuckDBSource(table="loans", connection=con)
    clf = DecisionTreeClassifier(max_depth=6, max_bins=64)
    clf.fit(source, target="class", features=[c for c in rows.column_names if c != "class"])
    print(f"passes (one aggregate query each): {clf.n_passes_}")
    print(f"accuracy on the table:             {clf.score(source, target='class'):.4f}")

    # the tree as SQL, and predictions written to a new table in one statement
    print(clf.tree_.to_sql("duckdb")[:120], "...")
    clf.predict_in_database(source, into="loan_scores", columns=["id"], proba=True)
    n = con.execute("SELECT count(*) FROM loan_scores").fetchone()[0]
    con.close()
    print(f"rows scored in DuckDB:             {n:,}")
    assert n == 100_000, n
