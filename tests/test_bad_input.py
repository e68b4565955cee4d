"""Bad input: one clear exception naming the culprit, nothing written, inputs untouched."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rainforest import BudgetError, DataError, DecisionTreeClassifier, load
from rainforest.storage import MissingPathError, SourceError


def _listing(folder):
    return sorted((p, os.path.getsize(os.path.join(r, p)), os.path.getmtime(os.path.join(r, p)))
                  for r, _, files in os.walk(folder) for p in files)


def _good(n=200):
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    return pa.table({"x": x, "c": pa.array(np.where(x > 0, "p", "n")), "y": (x > 0.3).astype(np.int64)})


def _fails(folder, exc_type, *needles, **fit):
    """Fit on ``folder``; assert one exception of our own naming every needle, and no file changed."""
    before = _listing(folder)
    with pytest.raises(exc_type) as info:
        DecisionTreeClassifier().fit(**fit)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    assert info.value.__cause__ is None and info.value.__suppress_context__ or info.value.__context__ is None
    assert _listing(folder) == before
    return message


def test_missing_path(tmp_path):
    msg = _fails(tmp_path, MissingPathError, "nowhere.parquet", X=str(tmp_path / "nowhere.parquet"), target="y")
    assert isinstance(FileNotFoundError(), OSError) and issubclass(MissingPathError, FileNotFoundError)
    assert "no such file" in msg


def test_glob_matching_nothing(tmp_path):
    _fails(tmp_path, MissingPathError, "*.parquet", X=str(tmp_path / "*.parquet"), target="y")


def test_empty_dataset(tmp_path):
    pq.write_table(_good().slice(0, 0), tmp_path / "empty.parquet")
    _fails(tmp_path, DataError, "no rows", X=str(tmp_path), target="y")


def test_empty_folder(tmp_path):
    (tmp_path / "data").mkdir()
    _fails(tmp_path, SourceError, "data", X=str(tmp_path / "data"), target="y")


def test_missing_target_column(tmp_path):
    pq.write_table(_good(), tmp_path / "d.parquet")
    _fails(tmp_path, DataError, "'label'", "available columns", X=str(tmp_path), target="label")


def test_nulls_in_the_target(tmp_path):
    t = _good()
    y = pa.array([None if i == 17 else v for i, v in enumerate(t.column("y").to_pylist())])
    pq.write_table(t.set_column(2, "y", y), tmp_path / "d.parquet")
    _fails(tmp_path, DataError, "'y'", "null", X=str(tmp_path), target="y")


def test_nan_in_the_target(tmp_path):
    t = _good()
    y = t.column("y").to_numpy().astype(float)
    y[3] = np.nan
    pq.write_table(t.set_column(2, "y", pa.array(y)), tmp_path / "d.parquet")
    _fails(tmp_path, DataError, "'y'", "NaN", X=str(tmp_path), target="y")


def test_single_class(tmp_path):
    t = _good()
    pq.write_table(t.set_column(2, "y", pa.array(["same"] * t.num_rows)), tmp_path / "d.parquet")
    _fails(tmp_path, DataError, "single class", "'same'", X=str(tmp_path), target="y")


@pytest.mark.parametrize("column", [pa.array([[1, 2]] * 200), pa.array([{"a": 1}] * 200)], ids=["list", "struct"])
def test_unsupported_column_type(tmp_path, column):
    pq.write_table(_good().append_column("nested", column), tmp_path / "d.parquet")
    _fails(tmp_path, DataError, "'nested'", "cannot be split on", X=str(tmp_path), target="y")


def test_all_null_attribute(tmp_path):
    pq.write_table(_good().append_column("empty", pa.array([None] * 200, pa.float64())), tmp_path / "d.parquet")
    _fails(tmp_path, DataError, "'empty'", "entirely null", X=str(tmp_path), target="y")


def test_infinity_in_an_attribute(tmp_path):
    t = _good()
    x = t.column("x").to_numpy().copy()
    x[42] = np.inf
    pq.write_table(t.set_column(0, "x", pa.array(x)), tmp_path / "d.parquet")
    _fails(tmp_path, DataError, "'x'", "inf", "row 42", X=str(tmp_path), target="y")


def test_nan_in_an_attribute_is_a_missing_value():
    t = _good(1000)
    x = t.column("x").to_numpy().copy()
    x[::10] = np.nan
    clf = DecisionTreeClassifier(max_depth=3).fit(t.set_column(0, "x", pa.array(x)), target="y")
    assert clf.tree_.feature_names[clf.tree_.feature[0]] in ("x", "c")
    assert clf.predict(pa.table({"x": [np.nan], "c": ["p"]})).shape == (1,)


def test_corrupt_parquet_file(tmp_path):
    for k in range(3):
        pq.write_table(_good(), tmp_path / f"part-{k}.parquet")
    (tmp_path / "part-1.parquet").write_bytes(b"PAR1 this is not really parquet PAR1")
    _fails(tmp_path, SourceError, "part-1.parquet", X=str(tmp_path), target="y")


def test_truncated_parquet_file(tmp_path):
    for k in range(3):
        pq.write_table(_good(), tmp_path / f"part-{k}.parquet")
    data = (tmp_path / "part-2.parquet").read_bytes()
    (tmp_path / "part-2.parquet").write_bytes(data[: len(data) // 2])
    _fails(tmp_path, SourceError, "part-2.parquet", X=str(tmp_path), target="y")


def test_bad_weights_and_params(tmp_path):
    t = _good()
    with pytest.raises(DataError, match="'w'"):
        DecisionTreeClassifier().fit(t.append_column("w", pa.array(-np.ones(200))), target="y", sample_weight="w")
    with pytest.raises(ValueError, match="criterion"):
        DecisionTreeClassifier(criterion="mse").fit(t, target="y")
    with pytest.raises(ValueError, match="memory_budget"):
        DecisionTreeClassifier(memory_budget="lots").fit(t, target="y")
    with pytest.raises(BudgetError, match="too small"):
        DecisionTreeClassifier(memory_budget=1000).fit(t, target="y")
    with pytest.raises(ValueError, match="max_depth"):
        DecisionTreeClassifier(max_depth=0).fit(t, target="y")


def test_predict_needs_the_training_columns():
    clf = DecisionTreeClassifier().fit(_good(), target="y")
    with pytest.raises(DataError, match="'c'"):
        clf.predict(pa.table({"x": [0.0]}))


def test_save_is_atomic(tmp_path, monkeypatch):
    clf = DecisionTreeClassifier(max_depth=2).fit(_good(), target="y")
    path = tmp_path / "model.json"
    clf.save(path)
    original = path.read_bytes()
    import rainforest.atomic as atomic_module

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(atomic_module.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        DecisionTreeClassifier(max_depth=3).fit(_good(), target="y").save(path)
    assert path.read_bytes() == original
    assert os.listdir(tmp_path) == ["model.json"]  # no temporary file left behind


def test_load_rejects_what_is_not_a_model(tmp_path):
    (tmp_path / "x.json").write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="x.json"):
        load(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("not json")
    with pytest.raises(ValueError, match="y.json"):
        load(tmp_path / "y.json")
    with pytest.raises(FileNotFoundError, match="z.json"):
        load(tmp_path / "z.json")


# -- weights and the target (issue: hostile inputs, items 6 and 8) -----------------------------
def _weighted(tmp_path, w):
    t = _good()
    pq.write_table(t.append_column("w", w), tmp_path / "d.parquet")
    return str(tmp_path / "d.parquet")


def _train_cli(tmp_path, *args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "rainforest", "train", *args, "--model", str(tmp_path / "m.json")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("learner", ["tree", "bayes"])
def test_weight_column_of_strings_is_refused_by_the_cli(tmp_path, learner):
    path = _weighted(tmp_path, pa.array([str(i) for i in range(200)]))
    r = _train_cli(tmp_path, path, "--target", "y", "--weight", "w", "--learner", learner)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("rainforest: error:") and r.stderr.count("\n") == 1, r.stderr
    assert "'w'" in r.stderr and "string" in r.stderr
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("learner", ["tree", "bayes"])
def test_weight_column_that_is_the_target_is_refused_by_the_cli(tmp_path, learner):
    path = _weighted(tmp_path, pa.array(np.ones(200)))
    r = _train_cli(tmp_path, path, "--target", "y", "--weight", "y", "--learner", learner)
    assert r.returncode == 2 and r.stderr.startswith("rainforest: error:"), r.stderr
    assert "'y'" in r.stderr and "target" in r.stderr


@pytest.mark.parametrize("learner", [DecisionTreeClassifier, "bayes"])
def test_all_zero_weights_are_refused(tmp_path, learner):
    from rainforest import NaiveBayesClassifier
    learner = NaiveBayesClassifier if learner == "bayes" else learner
    path = _weighted(tmp_path, pa.array(np.zeros(200)))
    with pytest.raises(DataError, match="'w'.*zero on every row"):
        learner().fit(path, target="y", sample_weight="w")
    with pytest.raises(DataError, match="zero on every row"):
        learner().fit(_good().drop(["y"]), _good().column("y").to_numpy(), sample_weight=np.zeros(200))


def test_boolean_or_temporal_weights_are_refused(tmp_path):
    for w in (pa.array([True] * 200), pa.array(np.arange(200), pa.timestamp("s"))):
        with pytest.raises(DataError, match="'w'.*weights must be numbers"):
            DecisionTreeClassifier().fit(_weighted(tmp_path, w), target="y", sample_weight="w")


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_negative_or_non_finite_sample_weights_are_refused(bad):
    from rainforest import NaiveBayesClassifier
    w = np.ones(200)
    w[5] = bad
    for learner in (DecisionTreeClassifier, NaiveBayesClassifier):
        with pytest.raises(DataError, match="weight"):
            learner().fit(_good().drop(["y"]), _good().column("y").to_numpy(), sample_weight=w)


def test_continuous_float_target_points_to_regression(tmp_path):
    from rainforest import NaiveBayesClassifier
    t = _good(1000)
    y = np.round(t.column("x").to_numpy() * 1000) / 7  # about 1000 distinct non-integral floats
    pq.write_table(t.set_column(2, "y", pa.array(y)), tmp_path / "d.parquet")
    for learner in (DecisionTreeClassifier, NaiveBayesClassifier):
        with pytest.raises(DataError, match="'y'.*regression.*cast the column to string or integer"):
            learner().fit(str(tmp_path / "d.parquet"), target="y")
    r = _train_cli(tmp_path, tmp_path / "d.parquet", "--target", "y", "--task", "classification")
    assert r.returncode == 2 and r.stderr.startswith("rainforest: error:") and "regression" in r.stderr
    r = _train_cli(tmp_path, tmp_path / "d.parquet", "--target", "y")  # --task auto: a float target is regressed
    assert r.returncode == 0 and "trained a DecisionTreeRegressor" in r.stdout, r.stderr
    # said to be a class label (cast to string): trained
    DecisionTreeClassifier(max_depth=2).fit(t.drop(["y"]), y.astype(str))


def test_few_float_classes_and_whole_float_classes_are_labels(tmp_path):
    t = _good(400)
    x = t.column("x").to_numpy()
    few = t.set_column(2, "y", pa.array(np.where(x > 0, 1.5, -0.5)))
    assert DecisionTreeClassifier(max_depth=2).fit(few, target="y").classes_.tolist() == [-0.5, 1.5]
    whole = np.floor(x * 20)  # many distinct values, all whole numbers: classes, as integers would be
    pq.write_table(t.set_column(2, "y", pa.array(whole)), tmp_path / "d.parquet")
    assert len(DecisionTreeClassifier(max_depth=2).fit(str(tmp_path / "d.parquet"), target="y").classes_) > 32


# -- class weights and max_features (issue 14, item 7 and Build 3) -----------------------------------
@pytest.mark.parametrize("weight", [-1.0, float("nan"), float("inf")])
def test_a_negative_or_non_finite_class_weight_is_refused(weight):
    from rainforest import DecisionTreeClassifier

    X = np.random.default_rng(0).normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="class_weight"):
        DecisionTreeClassifier(class_weight={0: weight, 1: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="every class a weight of 0"):
        DecisionTreeClassifier(class_weight={0: 0, 1: 0}).fit(X, y)


def test_max_features_above_the_features_is_refused():
    from rainforest import RandomForestClassifier

    X = np.random.default_rng(0).normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="max_features=4 is more than the 3 features"):
        RandomForestClassifier(max_features=4, n_estimators=2).fit(X, y)
    assert RandomForestClassifier(max_features=3, n_estimators=2).fit(X, y).score(X, y) > 0.9
