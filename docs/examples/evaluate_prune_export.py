"""Evaluate a tree out of core, cross-validate it, prune it, and export it to ONNX.

Run: python docs/examples/evaluate_prune_export.py
"""
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pyarrow.parquet as pq

from rainforest import DecisionTreeClassifier
from rainforest.datasets import write_agrawal_parquet
from rainforest.evaluation import cross_validate
from rainforest.metrics import evaluate
from rainforest.onnx import onnx_feed, to_onnx

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    write_agrawal_parquet(root / "train", 60_000, function=5, n_files=3, seed=2, perturbation=0.05)
    write_agrawal_parquet(root / "valid", 20_000, function=5, n_files=1, seed=2, start=60_000, perturbation=0.05)
    write_agrawal_parquet(root / "test", 20_000, function=5, n_files=1, seed=2, start=80_000, perturbation=0.05)

    # 5-fold cross-validation on the folder: folds come from a hash of the row identity
    cv = cross_validate(DecisionTreeClassifier(max_depth=10), root / "train", target="class", n_folds=5)
    print(f"5-fold accuracy: {np.mean(cv.scores):.4f} +- {np.std(cv.scores):.4f}")

    clf = DecisionTreeClassifier(max_depth=12).fit(root / "train", target="class")
    grown = evaluate(clf, root / "test", target="class")           # one pass over the test files
    nodes = clf.tree_.node_count
    clf.prune_reduced_error(root / "valid", target="class")        # one pass over the validation files
    pruned = evaluate(clf, root / "test", target="class")
    print(f"grown:  {nodes} nodes, test accuracy {grown.accuracy():.4f}, AUC {grown.roc_auc():.4f}")
    print(f"pruned: {clf.tree_.node_count} nodes, test accuracy {pruned.accuracy():.4f}, AUC {pruned.roc_auc():.4f}")
    print(pruned.report())

    to_onnx(clf, root / "tree.onnx")
    session = ort.InferenceSession(str(root / "tree.onnx"))
    test = pq.read_table(root / "test")
    proba = session.run(["probabilities"], onnx_feed(root / "tree.onnx", test))[0]
    assert np.allclose(proba, clf.predict_proba(test), atol=1e-6)
    print("the ONNX model gives predict_proba's probabilities")
    assert clf.tree_.node_count < nodes and pruned.accuracy() > 0.85
