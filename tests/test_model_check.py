"""Corrupt model files are refused at load with one ModelError naming the file and the field.

Each case here crashed, hung or predicted garbage before the checks existed: a child index one
past the last node (a segfault at predict), a cycle (predict looping for ever), a feature index
out of range and node arrays of unequal length (garbage, exit 0).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rainforest import DecisionTreeClassifier, ModelError, Tree, load

DATA = Path(__file__).resolve().parent / "data" / "buys_computer.parquet"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "model.json"
    DecisionTreeClassifier().fit(DATA, target="class").save(path)
    doc = json.loads(path.read_text())
    assert len(doc["tree"]["nodes"]["feature"]) >= 5  # a few splits to corrupt
    return doc


def _nodes(doc):
    return doc["tree"]["nodes"]


def _leaf(doc) -> int:
    return _nodes(doc)["first_child"].index(-1)


CORRUPT = {
    "child one past the last node": (lambda d: _nodes(d)["first_child"].__setitem__(
        1 if _nodes(d)["first_child"][1] >= 0 else 0, len(_nodes(d)["feature"]) - 1), "tree.nodes.first_child"),
    "cycle to the root": (lambda d: _nodes(d)["first_child"].__setitem__(0, 0), "tree.nodes.first_child[0]"),
    "child before its parent": (lambda d: _nodes(d)["first_child"].__setitem__(
        max(k for k, c in enumerate(_nodes(d)["first_child"]) if c >= 0), 1), "tree.nodes.first_child"),
    "feature out of range": (lambda d: _nodes(d)["feature"].__setitem__(0, 99), "tree.nodes.feature[0]"),
    "negative feature": (lambda d: _nodes(d)["feature"].__setitem__(0, -3), "tree.nodes.feature[0]"),
    "arrays of unequal length": (lambda d: _nodes(d)["impurity"].pop(), "tree.nodes.impurity"),
    "value rows cut short": (lambda d: _nodes(d)["value"].pop(), "tree.nodes.value"),
    "missing branch out of range": (lambda d: _nodes(d)["missing_branch"].__setitem__(0, 2),
                                    "tree.nodes.missing_branch[0]"),
    "category offset out of range": (lambda d: _nodes(d)["cat_offset"].__setitem__(
        next(k for k, o in enumerate(_nodes(d)["cat_offset"]) if o >= 0), 10**6), "tree.nodes.cat_offset"),
    "category branch out of range": (lambda d: _nodes(d)["cat_branch"].__setitem__(0, 5), "tree.nodes.cat_branch[0]"),
    "negative count": (lambda d: _nodes(d)["value"][0].__setitem__(0, -1.0), "tree.nodes.value[0]"),
    "an index as a string": (lambda d: _nodes(d)["first_child"].__setitem__(0, "1"), "tree.nodes.first_child[0]"),
    "unknown feature kind": (lambda d: d["tree"]["features"][0].__setitem__("kind", "ordinal"),
                             "tree.features[0].kind"),
    "tree of another version": (lambda d: d["tree"].__setitem__("version", 2), "tree.version"),
    "no nodes": (lambda d: d["tree"].pop("nodes"), "tree.nodes"),
    "one class": (lambda d: d["tree"].__setitem__("classes", ["no"]), "tree.classes"),
    "n_jobs of zero": (lambda d: d["params"].__setitem__("n_jobs", 0), "params.n_jobs"),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_a_corrupt_tree_is_refused_naming_the_file_and_the_field(case, saved, tmp_path):
    change, field = CORRUPT[case]
    doc = json.loads(json.dumps(saved))
    change(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as info:
        load(path)
    assert repr(str(path)) in str(info.value)
    assert info.value.path == str(path) and info.value.field.startswith(field), str(info.value)
    assert isinstance(info.value, ValueError)  # code catching ValueError keeps working


def test_a_cycle_fails_at_load_not_in_a_loop_at_predict(saved, tmp_path):
    # before: predict spun for ever on every core; run in a subprocess so a regression cannot hang the suite
    doc = json.loads(json.dumps(saved))
    _nodes(doc)["first_child"][0] = 0
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(doc))
    code = ("import sys; from rainforest import load, ModelError\n"
            "try:\n    load(sys.argv[1]).predict(sys.argv[2])\nexcept ModelError as e:\n    print('refused', e)")
    out = subprocess.run([sys.executable, "-c", code, str(path), str(DATA)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("refused"), out.stderr[-2000:]


def test_the_routing_kernel_guards_a_tree_built_by_hand(saved):
    # a Tree made directly skips the checks of from_dict: the kernel still neither loops nor reads
    # out of bounds, and apply says the tree is corrupt
    good = Tree.from_dict(saved["tree"])
    X = good.encoder().encode(pa.Table.from_pandas(__import__("pandas").read_parquet(DATA)))
    assert (good.apply(X) >= 0).all()
    for change in ({"first_child": np.where(good.first_child >= 0, 0, -1).astype(np.int32)},  # cycles
                   {"first_child": np.where(good.first_child >= 0, 10**6, -1).astype(np.int32)},  # out of bounds
                   {"feature": np.where(good.first_child >= 0, 50, -2).astype(np.int32)}):
        bad = Tree(**{**good.__dict__, "_depth": None, **change})
        with pytest.raises(ModelError, match="corrupt"):
            bad.apply(X)


def test_from_dict_checks_too(saved):
    doc = json.loads(json.dumps(saved["tree"]))
    doc["nodes"]["first_child"][0] = len(doc["nodes"]["feature"])
    with pytest.raises(ModelError, match=re.escape("nodes.first_child")):
        Tree.from_dict(doc)


def test_a_valid_tree_reads_back_the_same(saved):
    tree = Tree.from_dict(saved["tree"])
    assert tree.to_dict() == saved["tree"]
    assert tree.max_depth == int(tree.depth.max()) and tree.depth[0] == 0
