"""Train a decision tree on partitioned Parquet data, out of core, and use it.

Run: python docs/examples/parquet_tree.py
"""
import tempfile
from pathlib import Path

from rainforest import DecisionTreeClassifier, load
from rainforest.datasets import write_agrawal_parquet

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    # 200,000 rows of Agrawal's loan-applicant data in 4 training files, 50,000 held out
    write_agrawal_parquet(root / "train", 200_000, function=2, n_files=4, seed=0)
    write_agrawal_parquet(root / "test", 50_000, function=2, n_files=1, seed=0, start=200_000)

    clf = DecisionTreeClassifier(max_depth=8, memory_budget="256MB")
    clf.fit(root / "train", target="class")        # streamed in batches: the data may exceed memory
    accuracy = clf.score(root / "test", target="class")
    print(f"passes over the data: {clf.n_passes_}")
    print(f"test accuracy:        {accuracy:.4f}")
    print(clf.export_text(max_depth=2))

    clf.save(root / "model.json")                  # versioned JSON, written atomically
    again = load(root / "model.json")
    assert (again.predict(root / "test") == clf.predict(root / "test")).all()
    assert accuracy > 0.9, accuracy
