"""The model: JSON round trip, exports, rules, importances, weights, and scikit-learn's conventions."""
import json

import numpy as np
import pyarrow as pa
import pytest

from conftest import dataset_path, numeric_xy
from oracle import compare_with_sklearn
from rainforest import DecisionTreeClassifier, Tree, load


@pytest.fixture(scope="module")
def adult():
    clf = DecisionTreeClassifier(max_depth=5).fit(dataset_path("adult_train"), target="class")
    return clf


def test_json_round_trip_predicts_the_same(adult, tmp_path):
    adult.save(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["format"] == "rainforest.model" and doc["version"] == 1 and doc["tree"]["version"] == 1
    again = load(tmp_path / "m.json")
    assert again.tree_.to_json() == adult.tree_.to_json()
    test = dataset_path("adult_test")
    np.testing.assert_array_equal(again.predict(test), adult.predict(test))
    np.testing.assert_array_equal(again.predict_proba(test), adult.predict_proba(test))
    assert again.get_params() == adult.get_params()
    assert list(again.feature_names_in_) == list(adult.feature_names_in_)


def test_infinite_thresholds_survive_json():
    rng = np.random.default_rng(1)
    x = rng.normal(size=400)
    y = np.isnan(np.where(rng.random(400) < 0.3, np.nan, x)).astype(int)
    x = np.where(y == 1, np.nan, x)  # missingness alone predicts the class
    clf = DecisionTreeClassifier(max_depth=1, max_bins=None).fit(x[:, None], y)
    assert np.isinf(clf.tree_.threshold[0])
    tree = Tree.from_dict(json.loads(clf.tree_.to_json()))
    assert np.isinf(tree.threshold[0]) and clf.score(x[:, None], y) == 1.0


def test_rules_coverage_and_accuracy(adult):
    rules = adult.tree_.rules()
    assert len(rules) == adult.get_n_leaves()
    assert sum(r["coverage"] for r in rules) == pytest.approx(1.0)
    # accuracy of each rule = correct / covered, and the weighted mean is the training accuracy
    train_acc = adult.score(dataset_path("adult_train"), target="class")
    assert sum(r["coverage"] * r["accuracy"] for r in rules) == pytest.approx(train_acc)
    text = adult.tree_.export_rules()
    assert text.count("IF ") == len(rules) and "THEN class =" in text and "coverage" in text


def test_export_text_shape(adult):
    text = adult.export_text(max_depth=2)
    assert text.startswith("|--- ")
    assert "truncated branch" in text
    full = adult.export_text()
    assert full.count("class: ") == adult.get_n_leaves()


def test_feature_importances_sum_to_one(adult):
    imp = adult.feature_importances_
    assert imp.shape == (adult.n_features_in_,) and imp.sum() == pytest.approx(1.0) and (imp >= 0).all()
    root_feature = adult.tree_.feature[0]
    assert imp[root_feature] > 0


def test_sklearn_conventions():
    from sklearn.base import clone
    clf = DecisionTreeClassifier(max_depth=3, criterion="entropy")
    copy = clone(clf)
    assert copy.get_params() == clf.get_params() and copy is not clf
    assert clf.set_params(max_depth=4) is clf and clf.max_depth == 4
    with pytest.raises(ValueError, match="nonsense"):
        clf.set_params(nonsense=1)
    assert "max_depth=4" in repr(clf) and "criterion='entropy'" in repr(clf)
    X, y, _ = numeric_xy("magic")
    clf.fit(X[::10], y[::10])
    assert clf.n_features_in_ == X.shape[1] and not hasattr(clf, "feature_names_in_")
    assert list(clf.classes_) == sorted(set(y))


def test_integer_sample_weights_equal_repeated_rows():
    X, y, _ = numeric_xy("magic")
    X, y = X[::6], y[::6]
    w = np.random.default_rng(0).integers(1, 4, size=len(y))  # (a zero-weight row still places thresholds)
    weighted = DecisionTreeClassifier(max_bins=None, max_depth=6).fit(X, y, sample_weight=w)
    repeated = DecisionTreeClassifier(max_bins=None, max_depth=6).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    a, b = weighted.tree_, repeated.tree_
    np.testing.assert_array_equal(a.feature, b.feature)
    np.testing.assert_array_equal(a.threshold, b.threshold)
    np.testing.assert_array_equal(a.value, b.value)


def test_class_weight_matches_sklearn():
    # integer weights keep every sum exact; with fractional weights scikit-learn's subtractions round
    # differently (it may split a node that is pure up to 1e-15), so only integers can match bit for bit
    X, y, _ = numeric_xy("shuttle")
    weights = {c: k + 1 for k, c in enumerate(sorted(set(y)))}
    clf = DecisionTreeClassifier(max_bins=None, max_depth=5, class_weight=weights).fit(X, y)
    cmp = compare_with_sklearn(clf.tree_, X, y, max_depth=5, class_weight=weights)
    assert cmp.mismatches == [] and cmp.equal_nodes > 10


def test_balanced_class_weight_equalises_the_classes():
    X, y, _ = numeric_xy("shuttle")
    clf = DecisionTreeClassifier(max_depth=1, class_weight="balanced").fit(X, y)
    root = clf.tree_.value[0]
    np.testing.assert_allclose(root, root[0])  # every class weighs n / n_classes
    assert root.sum() == pytest.approx(len(y))


def test_weight_column_in_a_source():
    t = pa.table({"x": np.arange(100.0), "y": np.arange(100) % 2 == 0, "w": np.ones(100)})
    a = DecisionTreeClassifier(max_depth=3).fit(t, target="y", sample_weight="w")
    b = DecisionTreeClassifier(max_depth=3).fit(t.drop_columns(["w"]), target="y")
    np.testing.assert_array_equal(a.tree_.value, b.tree_.value)
    assert "w" not in a.feature_names_in_
