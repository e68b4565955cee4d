"""BOAT: the exact tree in two passes, then incremental inserts.

Run: python docs/examples/boat_updates.py
"""
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rainforest.boat import BoatClassifier
from rainforest import DecisionTreeClassifier
from rainforest.datasets import agrawal_table, write_agrawal_parquet

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    write_agrawal_parquet(root / "train", 50_000, function=1, n_files=2, seed=4)
    stored = pq.read_table(root / "train")
    new_rows = agrawal_table(2_000, function=1, seed=4, start=50_000).cast(stored.schema)

    with BoatClassifier(max_depth=6, sample_size=5_000) as boat:   # the with-block removes the work folder
        boat.fit(root / "train", target="class")
        print(f"passes: {boat.n_passes_}, verification failures: {boat.n_verification_failures_}, "
              f"rebuilt subtrees: {boat.n_rebuilt_subtrees_}")
        exact = DecisionTreeClassifier(max_depth=6, max_bins=None).fit(root / "train", target="class")
        assert boat.tree_.to_json() == exact.tree_.to_json()      # the exact tree
        print("BOAT's tree is the exact tree")

        boat.update(inserted=new_rows)                              # 2,000 more rows
        rebuilt = DecisionTreeClassifier(max_depth=6, max_bins=None).fit(pa.concat_tables([stored, new_rows]),
                                                                         target="class")
        assert boat.tree_.to_json() == rebuilt.tree_.to_json()     # = a fit on the changed data
        print("after the update: the tree of a fit on all 52,000 rows")
