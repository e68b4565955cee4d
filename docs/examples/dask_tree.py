"""Train on a Dask cluster: each pass is one task graph, partitions are folded where they
live, and only AVC-groups come back. A LocalCluster stands in for a real one here.

Run: python docs/examples/dask_tree.py
"""
import tempfile
from pathlib import Path

import dask.dataframe as dd
from dask.distributed import Client, LocalCluster

from rainforest import DecisionTreeClassifier
from rainforest.datasets import write_agrawal_parquet

if __name__ == "__main__":  # worker processes import this file
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_agrawal_parquet(root / "train", 100_000, function=1, n_files=4, seed=0)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster):
            df = dd.read_parquet(str(root / "train"))
            clf = DecisionTreeClassifier(max_depth=6).fit(df, target="class")
            print(f"passes over the cluster's partitions: {clf.n_passes_}")
            local = DecisionTreeClassifier(max_depth=6).fit(root / "train", target="class")
            assert clf.tree_.to_json() == local.tree_.to_json()   # the same tree as in one process
            lazy = clf.predict(df)                                  # a lazy Dask collection
            print(f"predictions: {len(lazy.compute()):,}")
