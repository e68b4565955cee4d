"""Graphviz DOT / PNG and ONNX exports (rainforest.dot, rainforest.onnx).

The ONNX model runs in onnxruntime and is checked against ``predict_proba`` to 1e-6 on adult
(string categoricals with nulls, binary and multiway splits, binned and exact) and letter (26
classes), for trees and forests (Forest-RI and Forest-RC).
"""
import os
import re
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path
from rainforest.errors import MissingDependency
from rainforest import (AdaBoostClassifier, DecisionTreeClassifier, DecisionTreeRegressor, NaiveBayesClassifier,
                        RandomForestClassifier, RandomForestRegressor)
from rainforest.dot import branch_members, class_colors, export_dot, render_png
from rainforest.errors import DataError, NotFittedError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from rainforest.onnx import onnx_feed, to_onnx  # noqa: E402

TP = onnx.TensorProto


# -- data ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def adult():
    """Adult train / test slices; the test rows gain unseen categories, empty strings and missing ages."""
    train = pq.read_table(dataset_path("adult_train")).slice(0, 12000)
    test = pq.read_table(dataset_path("adult_test")).slice(0, 3000)
    extra = test.slice(0, 4).to_pylist()
    extra[0].update(workclass="Mars", native_country="Atlantis")  # unseen in training
    extra[1].update(workclass=None, occupation=None, age=None)  # missing string and numeric values
    extra[2].update(education="Unheard-of", age=None)
    extra[3].update(native_country=None, capital_gain=None)
    test = pa.concat_tables([test, pa.Table.from_pylist(extra, schema=test.schema)])
    assert test.column("workclass").null_count > 0 and test.column("age").null_count == 2
    return train, test


@pytest.fixture(scope="module")
def letter():
    t = pq.read_table(dataset_path("letter"))
    return t.slice(0, 12000), t.slice(12000, 3000)


def run_onnx(model_proto, X):
    session = ort.InferenceSession(model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, onnx_feed(model_proto, X))


def assert_matches(model, test, **kwargs):
    """ONNX probabilities == predict_proba (1e-6); labels == predict wherever the best class is clear."""
    proto = to_onnx(model, **kwargs)
    label, proba = run_onnx(proto, test)
    expected = model.predict_proba(test)
    assert proba.shape == expected.shape
    np.testing.assert_allclose(proba, expected, rtol=0, atol=1e-6)
    top = np.sort(expected, axis=1)
    clear = top[:, -1] - top[:, -2] > 1e-6  # float32 may tie two classes a hair apart
    assert clear.mean() > 0.9
    np.testing.assert_array_equal(label[clear], model.predict(test)[clear])
    return proto


def categorical_splits(tree):
    inner = (tree.first_child >= 0) & (tree.cat_offset >= 0)
    return tree.n_children[inner]


# -- ONNX: agreement with predict_proba -------------------------------------------------------------
@pytest.mark.parametrize("split", ["binary", "multiway"])
@pytest.mark.parametrize("max_bins", [255, None])
def test_onnx_tree_adult(adult, split, max_bins):
    train, test = adult
    clf = DecisionTreeClassifier(categorical_split=split, max_bins=max_bins, max_depth=12).fit(train, target="class")
    kids = categorical_splits(clf.tree_)
    assert len(kids) > 10  # the export is exercised on many categorical splits
    assert (kids > 2).any() if split == "multiway" else (kids == 2).all()
    assert_matches(clf, test)


def test_onnx_matrix_input_adult(adult):
    train, test = adult
    clf = DecisionTreeClassifier(categorical_split="multiway", max_depth=10).fit(train, target="class")
    proto = assert_matches(clf, test, inputs="matrix")
    (x,) = proto.graph.input
    assert x.name == "X" and x.type.tensor_type.elem_type == TP.DOUBLE
    assert [d.dim_param or d.dim_value for d in x.type.tensor_type.shape.dim] == ["N", clf.n_features_in_]


@pytest.mark.parametrize("max_bins", [255, None])
def test_onnx_tree_letter(letter, max_bins):
    train, test = letter
    clf = DecisionTreeClassifier(max_bins=max_bins).fit(train, target="class")
    proto = assert_matches(clf, test)
    assert proto.graph.output[1].type.tensor_type.shape.dim[1].dim_value == 26


@pytest.mark.parametrize("kwargs", [dict(), dict(max_bins=None), dict(combination="linear")],
                         ids=["binned", "exact", "forest-rc"])
def test_onnx_forest_adult(adult, kwargs):
    train, test = adult
    rf = RandomForestClassifier(n_estimators=5, max_depth=8, random_state=3, **kwargs).fit(train, target="class")
    proto = assert_matches(rf, test)
    tree_op = [n for n in proto.graph.node if n.op_type == "TreeEnsembleClassifier"][0]
    treeids = [a for a in tree_op.attribute if a.name == "nodes_treeids"][0].ints
    assert len(set(treeids)) == 5


def test_onnx_forest_letter(letter):
    train, test = letter
    rf = RandomForestClassifier(n_estimators=4, max_depth=10, random_state=1).fit(train, target="class")
    assert_matches(rf, test)


@pytest.mark.parametrize("make", [
    lambda: DecisionTreeRegressor(max_depth=10, max_bins=None),
    lambda: RandomForestRegressor(n_estimators=5, max_depth=8, random_state=2),
    lambda: RandomForestRegressor(n_estimators=4, max_depth=6, combination="linear"),
], ids=["tree-exact", "forest", "forest-rc"])
@pytest.mark.parametrize("inputs", ["columns", "matrix"])
def test_onnx_regressors_give_predict(adult, make, inputs):
    """A TreeEnsembleRegressor whose one output, summed leaf means / n_trees, is predict up to float32
    (adult's hours per week from the other columns: categories with nulls, unseen ones, missing values)."""
    train, test = adult
    reg = make().fit(train.drop(["class"]), target="hours_per_week")
    X = test.drop(["class", "hours_per_week"])
    proto = to_onnx(reg, inputs=inputs)
    assert [n.op_type for n in proto.graph.node if n.domain == "ai.onnx.ml" and "Tree" in n.op_type] == [
        "TreeEnsembleRegressor"]
    assert [o.name for o in proto.graph.output] == ["variable"]
    (variable,) = run_onnx(proto, X)
    expected = reg.predict(X)
    assert variable.shape == (len(expected), 1) and len(np.unique(expected)) > 20
    np.testing.assert_allclose(variable[:, 0], expected, rtol=2e-7, atol=1e-5)  # float32 output


def test_onnx_thresholds_are_compared_in_double():
    """Exact-mode thresholds are midpoints that float32 cannot hold; rows on either side stay apart."""
    x = np.array([1.0, 1.0, 1.0 + 2e-9, 1.0 + 2e-9])
    clf = DecisionTreeClassifier(max_bins=None).fit(pa.table({"x": x, "class": ["a", "a", "b", "b"]}), target="class")
    t = clf.tree_.threshold[0]
    assert np.float32(t) != t  # float32 would put 1.0 and t on the same side
    probe = pa.table({"x": [1.0, 1.0 + 0.5e-9, 1.0 + 1.5e-9, 1.0 + 2e-9]})
    label, _ = run_onnx(to_onnx(clf), probe)
    assert list(label) == ["a", "a", "b", "b"] == list(clf.predict(probe))


# -- ONNX: declared inputs and outputs --------------------------------------------------------------
def test_onnx_declared_inputs_and_outputs(adult):
    train, _ = adult
    clf = DecisionTreeClassifier(max_depth=6).fit(train, target="class")
    proto = to_onnx(clf)
    names = [c for c in train.column_names if c != "class"]
    inputs = {i.name: i.type.tensor_type for i in proto.graph.input}
    assert list(inputs) == names
    for name in names:
        string = pa.types.is_string(train.schema.field(name).type)
        assert inputs[name].elem_type == (TP.STRING if string else TP.DOUBLE), name
        assert [d.dim_param or d.dim_value for d in inputs[name].shape.dim] == ["N", 1]
    outputs = {o.name: o.type.tensor_type for o in proto.graph.output}
    assert list(outputs) == ["label", "probabilities"]
    assert outputs["label"].elem_type == TP.STRING
    assert outputs["probabilities"].elem_type == TP.FLOAT
    assert [d.dim_param or d.dim_value for d in outputs["probabilities"].shape.dim] == ["N", 2]
    meta = {p.key: p.value for p in proto.metadata_props}
    assert meta["rainforest.classes"] == '["<=50K", ">50K"]' and meta["rainforest.missing_string"] == '""'
    assert {o.domain: o.version for o in proto.opset_import} == {"": 17, "ai.onnx.ml": 3}


def test_onnx_hand_built_feed_follows_the_documented_conventions(adult):
    """Without onnx_feed: numerics as float64 [N,1] (NaN missing), strings as object [N,1] ('' missing)."""
    train, test = adult
    clf = DecisionTreeClassifier(max_depth=8).fit(train, target="class")
    rows = test.slice(test.num_rows - 4).to_pylist()
    feed = {}
    for name in clf.tree_.feature_names:
        values = [r[name] for r in rows]
        if isinstance(next(v for v in values if v is not None), str):
            feed[name] = np.array(["" if v is None else v for v in values], dtype=object).reshape(-1, 1)
        else:
            feed[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64).reshape(-1, 1)
    session = ort.InferenceSession(to_onnx(clf).SerializeToString(), providers=["CPUExecutionProvider"])
    _, proba = session.run(None, feed)
    np.testing.assert_allclose(proba, clf.predict_proba(pa.Table.from_pylist(rows, schema=test.schema)), atol=1e-6)


def test_onnx_integer_and_boolean_categories():
    rng = np.random.default_rng(0)
    n = 3000
    a, b = rng.integers(0, 6, n), rng.random(n) < 0.5
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    y = np.where(((a % 3 == 0) ^ b) | (np.nan_to_num(x) > 0.5), "yes", "no")
    table = pa.table({"a": a, "b": b, "x": x, "class": y})
    for split in ("binary", "multiway"):
        clf = DecisionTreeClassifier(categorical_split=split, categorical_features=["a"]).fit(table, target="class")
        assert len(categorical_splits(clf.tree_)) > 2
        proto = assert_matches(clf, table)
        types = {i.name: i.type.tensor_type.elem_type for i in proto.graph.input}
        assert types == {"a": TP.INT64, "b": TP.BOOL, "x": TP.DOUBLE}
        unseen = pa.table({"a": [7, -1, 3], "b": [True, False, True], "x": [np.nan, 0.0, 2.0]})
        _, proba = run_onnx(proto, unseen)
        np.testing.assert_allclose(proba, clf.predict_proba(unseen), atol=1e-6)
    with pytest.raises(DataError, match="'a'.*null"):
        onnx_feed(proto, pa.table({"a": pa.array([1, None]), "b": [True, True], "x": [0.0, 0.0]}))


def test_onnx_missing_string_must_not_be_a_category():
    t = pa.table({"s": ["", "u", "v", "", "u", "v"] * 5, "class": ["p", "q", "q", "p", "p", "q"] * 5})
    clf = DecisionTreeClassifier().fit(t, target="class")
    with pytest.raises(DataError, match="column 's'.*missing_string"):
        to_onnx(clf)
    proto = to_onnx(clf, missing_string="<NA>")
    probe = pa.table({"s": ["", "u", None, "w"]})
    _, proba = run_onnx(proto, probe)
    np.testing.assert_allclose(proba, clf.predict_proba(probe), atol=1e-6)


def test_onnx_written_atomically(tmp_path, letter):
    train, test = letter
    clf = DecisionTreeClassifier(max_depth=5).fit(train, target="class")
    path = tmp_path / "model.onnx"
    to_onnx(clf, path)
    assert os.listdir(tmp_path) == ["model.onnx"]
    label, proba = run_onnx(onnx.load(path), test)
    np.testing.assert_allclose(proba, clf.predict_proba(test), atol=1e-6)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        to_onnx(clf, tmp_path / "nowhere" / "model.onnx")


def test_onnx_refuses_what_it_cannot_export(letter):
    train, _ = letter
    with pytest.raises(NotFittedError):
        to_onnx(DecisionTreeClassifier())
    with pytest.raises(TypeError, match="NaiveBayesClassifier"):
        to_onnx(NaiveBayesClassifier().fit(train.slice(0, 2000), target="class"))
    boosted = AdaBoostClassifier(n_estimators=2).fit(train.slice(0, 2000), target="class")
    with pytest.raises(TypeError, match="AdaBoostClassifier.*not a mean"):
        to_onnx(boosted)
    clf = DecisionTreeClassifier(max_depth=2).fit(train, target="class")
    with pytest.raises(ValueError, match="inputs must be"):
        to_onnx(clf, inputs="rows")


# -- DOT ----------------------------------------------------------------------------------------------
NODE = re.compile(r'^(\d+) \[label="((?:[^"\\]|\\.)*)"(.*)\] ;$')
EDGE = re.compile(r'^(\d+) -> (\d+) \[label="((?:[^"\\]|\\.)*)"\] ;$')


def parse_dot(text):
    """{node: (label lines, attributes)} and {(parent, child): label lines} of export_dot's text."""
    lines = text.strip().splitlines()
    assert lines[0] == "digraph Tree {" and lines[-1] == "}"
    nodes, edges = {}, {}
    for line in lines[3:-1]:
        if m := EDGE.match(line):
            edges[int(m[1]), int(m[2])] = _unescape(m[3]).split("\n")
        elif m := NODE.match(line):
            assert int(m[1]) not in nodes
            nodes[int(m[1])] = (_unescape(m[2]).split("\n"), m[3])
        else:
            raise AssertionError(f"unparsed DOT line {line!r}")
    return nodes, edges


def _unescape(s):
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], s)


def expected_edge(tree, i, b):
    if tree.cat_offset[i] >= 0 and tree.n_children[i] > 2:
        members = branch_members(tree, i, b)
        first = f"= {members[0]}" if len(members) == 1 else "in {" + ", ".join(members) + "}"
    else:
        first = "True" if b == 0 else "False"
    return [first] + (["missing"] if tree.missing_branch[i] == b else [])


@pytest.mark.parametrize("split", ["binary", "multiway"])
def test_dot_one_node_per_tree_node_and_one_edge_per_link(adult, split):
    train, _ = adult
    clf = DecisionTreeClassifier(categorical_split=split, max_depth=5).fit(train, target="class")
    tree = clf.tree_
    nodes, edges = parse_dot(export_dot(clf))
    assert set(nodes) == set(range(tree.node_count))
    links = {(i, tree.first_child[i] + b) for i in range(tree.node_count) for b in range(tree.n_children[i])}
    assert set(edges) == links
    for i in range(tree.node_count):
        label, _ = nodes[i]
        assert label[-1] == f"class = {tree.classes[int(np.argmax(tree.value[i]))]}"
        assert label[-3] == f"samples = {tree.n_node_samples[i]}"
        assert label[-2] == "value = [" + ", ".join(str(int(v)) for v in tree.value[i]) + "]"
        assert label[-4].startswith("gini = ")
        if tree.first_child[i] < 0:
            assert len(label) == 4
            continue
        name = tree.feature_names[tree.feature[i]]
        if tree.cat_offset[i] < 0:
            assert re.fullmatch(rf"{name} (<= [-0-9.e+]+|is present)", label[0]), label[0]
        elif tree.n_children[i] == 2:
            assert label[0] == f"{name} in {{{', '.join(branch_members(tree, i, 0))}}}"
        else:
            assert label[0] == name
        for b in range(tree.n_children[i]):
            assert edges[i, tree.first_child[i] + b] == expected_edge(tree, i, b)
    if split == "multiway":
        assert any(len(edges[k]) and edges[k][0].startswith("= ") for k in edges)


def test_dot_textbook_tree_by_hand(datasets):
    """buys_computer, ID3: the root splits three ways on age; checked line by line."""
    t = pq.read_table(datasets("buys_computer"))
    clf = DecisionTreeClassifier(criterion="entropy", categorical_split="multiway").fit(t, target="class")
    nodes, edges = parse_dot(export_dot(clf, precision=2))
    assert nodes[0][0] == ["age", "entropy = 0.94", "samples = 14", "value = [5, 9]", "class = Yes"]
    assert sorted(tuple(v) for (p, _), v in edges.items() if p == 0) == \
        [("= 31-40",), ("= >40",), ("in {<=30, <other>}", "missing")]


def test_dot_max_depth_filled_names_and_file(tmp_path, adult):
    train, _ = adult
    clf = DecisionTreeClassifier(max_depth=6).fit(train, target="class")
    tree = clf.tree_
    path = tmp_path / "tree.dot"
    text = export_dot(clf, path, max_depth=2, filled=True, node_ids=True, class_names=["low", "high"],
                      feature_names=[f"f{j}" for j in range(tree.n_features)])
    assert path.read_text() == text and os.listdir(tmp_path) == ["tree.dot"]
    nodes, edges = parse_dot(text)
    depth = tree.depth
    assert set(nodes) == set(np.flatnonzero(depth <= 3))
    for i, (label, attrs) in nodes.items():
        if depth[i] == 3:
            assert label == ["(...)"] and 'fillcolor="#C0C0C0"' in attrs
            continue
        assert label[0] == f"node #{i}" and label[-1] in ("class = low", "class = high")
        assert re.search(r'fillcolor="#[0-9a-f]{6}"', attrs)
        if tree.first_child[i] >= 0:
            assert re.match(r"f\d+ ", label[1])
    assert all(depth[c] <= 3 for _, c in edges)
    # a pure node takes its class's full colour (scikit-learn's palette: orange first)
    pure = [i for i in nodes if depth[i] <= 2 and tree.value[i].min() == 0]
    assert class_colors(2)[0] == (230, 129, 57)
    for i in pure:
        k = int(np.argmax(tree.value[i]))
        assert f'fillcolor="#{"".join(f"{c:02x}" for c in class_colors(2)[k])}"' in nodes[i][1]
    with pytest.raises(ValueError, match="feature_names has 2 names"):
        export_dot(clf, feature_names=["a", "b"])


def test_dot_forest_tree_index_escaping_and_refusals():
    t = pa.table({"s": ['say "hi"', "back\\slash", "plain"] * 20, "x": np.arange(60.0) % 7,
                  "class": ["a", "b", "b"] * 20})
    rf = RandomForestClassifier(n_estimators=3, max_features=None, random_state=0).fit(t, target="class")
    for k in range(3):
        nodes, edges = parse_dot(export_dot(rf, tree_index=k))
        assert len(nodes) == rf.estimators_[k].node_count and len(edges) == len(nodes) - 1
    labels = [line for label, _ in parse_dot(export_dot(rf))[0].values() for line in label]
    assert any('say "hi"' in line or "back\\slash" in line for line in labels)
    with pytest.raises(IndexError, match="3 trees"):
        export_dot(rf, tree_index=3)
    with pytest.raises(NotFittedError):
        export_dot(RandomForestClassifier())
    with pytest.raises(TypeError, match="NaiveBayesClassifier"):
        export_dot(NaiveBayesClassifier().fit(t, target="class"))


# -- PNG ----------------------------------------------------------------------------------------------
def test_render_png_without_graphviz_names_it(tmp_path, monkeypatch, letter):
    clf = DecisionTreeClassifier(max_depth=2).fit(letter[0], target="class")
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    with pytest.raises(MissingDependency, match="install graphviz"):
        render_png(clf, tmp_path / "tree.png")
    assert os.listdir(tmp_path) == []


def test_render_png_with_graphviz(tmp_path, letter):
    if shutil.which("dot") is None:
        reason = "Graphviz's dot is not installed: the PNG rendering is not exercised"
        print(reason)
        pytest.skip(reason)
    clf = DecisionTreeClassifier(max_depth=3).fit(letter[0], target="class")
    path = tmp_path / "tree.png"
    assert render_png(clf, path, filled=True) == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(tmp_path) == ["tree.png"]
