"""A random forest whose 50 trees grow together: one pass per level for the whole forest.

Run: python docs/examples/forest.py
"""
import tempfile
from pathlib import Path

from rainforest import RandomForestClassifier
from rainforest.datasets import write_agrawal_parquet

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    write_agrawal_parquet(root / "train", 100_000, function=7, n_files=4, seed=1)
    write_agrawal_parquet(root / "test", 20_000, function=7, n_files=1, seed=1, start=100_000)
    rf = RandomForestClassifier(n_estimators=50, max_depth=8, oob_score=True, random_state=0)
    rf.fit(root / "train", target="class")
    # at most profiling + 8 levels + out-of-bag, for all 50 trees together; fewer when the
    # rows of the growing nodes fit in memory (RF-Hybrid finishes them there)
    print(f"passes: {rf.n_passes_}")
    print(f"out-of-bag accuracy: {rf.oob_score_:.4f}")
    print(f"test accuracy:       {rf.score(root / 'test', target='class'):.4f}")
    assert rf.n_passes_ <= 10
