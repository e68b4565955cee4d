"""Model files of naive Bayes and AdaBoost: bit-identical round trips, partial_fit after load,
clear errors for bad files, atomic writes."""
import json
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rainforest.atomic
from conftest import dataset_path
from rainforest import AdaBoostClassifier, DecisionTreeClassifier, NaiveBayesClassifier, NotFittedError, load


def round_trip(model, tmp_path, name="model.json"):
    path = tmp_path / name
    model.save(path)
    return load(path), json.loads(path.read_text())


def assert_same_inputs(again, model, target="class"):
    """What the command line reads off a loaded model: classes, feature columns, label column."""
    assert type(again) is type(model)
    np.testing.assert_array_equal(again.classes_, model.classes_)
    assert again.classes_.dtype == model.classes_.dtype
    assert list(again.feature_names_in_) == list(model.feature_names_in_)
    assert again.target_ == model.target_ == target
    assert again.n_passes_ == model.n_passes_


@pytest.fixture(scope="module")
def adult_nb():
    return NaiveBayesClassifier().fit(dataset_path("adult_train"), target="class")


# -- naive Bayes ---------------------------------------------------------------------------------
def test_gaussian_naive_bayes_round_trip_is_bit_identical(adult_nb, tmp_path):
    again, doc = round_trip(adult_nb, tmp_path)
    assert doc["estimator"] == "NaiveBayesClassifier" and doc["naive_bayes"]["version"] == 1
    assert_same_inputs(again, adult_nb)
    assert again.get_params() == adult_nb.get_params()
    test = dataset_path("adult_test")
    np.testing.assert_array_equal(again.predict_proba(test), adult_nb.predict_proba(test))
    np.testing.assert_array_equal(again.predict_log_proba(test), adult_nb.predict_log_proba(test))
    np.testing.assert_array_equal(again.predict(test), adult_nb.predict(test))
    np.testing.assert_array_equal(again.theta_, adult_nb.theta_)
    np.testing.assert_array_equal(again.var_, adult_nb.var_)
    assert again.categories_ == adult_nb.categories_
    # saving the loaded model writes the same file: nothing is lost or reordered
    again.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == (tmp_path / "model.json").read_text()


def test_binned_naive_bayes_round_trip_is_bit_identical(tmp_path):
    train = pq.read_table(dataset_path("magic"))
    nb = NaiveBayesClassifier(numeric="binned", max_bins=32).fit(train, target="class")
    assert nb.n_passes_ == 2
    again, doc = round_trip(nb, tmp_path)
    assert "attributes" in doc["naive_bayes"] and "counts" not in doc["naive_bayes"]
    assert_same_inputs(again, nb)
    np.testing.assert_array_equal(again.predict_proba(train), nb.predict_proba(train))
    for a, b in zip(again.category_count_, nb.category_count_):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="partial_fit"):  # bin edges are fixed: still no partial_fit
        again.partial_fit(train, target="class")


def test_textbook_naive_bayes_without_smoothing(tmp_path):
    # alpha=0 leaves log(0) = -inf in the model: the file holds counts, so it stays valid JSON
    data = dataset_path("buys_computer")
    nb = NaiveBayesClassifier(alpha=0).fit(data, target="class")
    assert np.isinf(np.concatenate([t.ravel() for t in nb.feature_log_prob_])).any()
    again, _ = round_trip(nb, tmp_path)
    assert_same_inputs(again, nb)
    np.testing.assert_array_equal(again.predict_proba(data), nb.predict_proba(data))


def mixed_types(n, seed):
    """Strings, booleans, integer categories and numbers, with float classes and missing values."""
    rng = np.random.default_rng(seed)
    code = rng.integers(0, 5, n)
    flag = rng.random(n) < 0.4
    x = rng.normal(size=n) + code
    return pa.table({
        "color": pa.array(np.array(["red", "green", "blue"])[rng.integers(0, 3, n)].tolist()),
        "flag": pa.array(flag.tolist(), mask=rng.random(n) < 0.05),
        "code": pa.array((code * 10).tolist(), pa.int64()),
        "x": pa.array(x),
        "y": pa.array(np.where(x + flag > 2.5, 1.5, -0.5)),
    })


def test_value_types_are_preserved(tmp_path):
    table = mixed_types(2000, 0)
    nb = NaiveBayesClassifier(categorical_features=["code"]).fit(table, target="y")
    again, _ = round_trip(nb, tmp_path)
    assert again.target_ == "y" and again.get_params() == nb.get_params()
    assert again.categories_ == nb.categories_
    for a, b in zip(again.categories_, nb.categories_):
        assert [type(v) for v in a] == [type(v) for v in b]
    assert {type(v) for v in again.categories_[1]} == {bool} and {type(v) for v in again.categories_[2]} == {int}
    assert again.classes_.tolist() == [-0.5, 1.5] and again.classes_.dtype == np.float64
    np.testing.assert_array_equal(again.predict_proba(table), nb.predict_proba(table))
    # the loaded counts merge with new ones: the same keys, so the same model as without the file
    more = mixed_types(500, 1)
    np.testing.assert_array_equal(again.partial_fit(more, target="y").predict_proba(table),
                                  nb.partial_fit(more, target="y").predict_proba(table))
    binned = NaiveBayesClassifier(numeric="binned", max_bins=8, categorical_features=["code"]).fit(table, target="y")
    again, _ = round_trip(binned, tmp_path, "binned.json")
    assert [[type(v) for v in c] for c in again.categories_] == [[type(v) for v in c] for c in binned.categories_]
    np.testing.assert_array_equal(again.predict_proba(table), binned.predict_proba(table))


def test_partial_fit_after_load_equals_fit_on_all(tmp_path):
    table = pq.read_table(dataset_path("adult_train"))
    half = table.num_rows // 2
    first, second = table.slice(0, half), table.slice(half)
    nb = NaiveBayesClassifier().fit(first, target="class")
    loaded, _ = round_trip(nb, tmp_path)
    loaded.partial_fit(second, target="class")
    kept = nb.partial_fit(second, target="class")  # the same merge without the file: bit for bit
    test = dataset_path("adult_test")
    np.testing.assert_array_equal(loaded.predict_proba(test), kept.predict_proba(test))
    whole = NaiveBayesClassifier().fit(table, target="class")
    np.testing.assert_array_equal(loaded.class_count_, whole.class_count_)
    assert loaded.categories_ == whole.categories_
    for a, b in zip(loaded.category_count_, whole.category_count_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(loaded.theta_, whole.theta_, rtol=1e-12)
    np.testing.assert_allclose(loaded.var_, whole.var_, rtol=1e-10)
    np.testing.assert_allclose(loaded.predict_proba(test), whole.predict_proba(test), atol=1e-10)


# -- AdaBoost ------------------------------------------------------------------------------------
BOOSTED = {
    "stumps on adult": ("adult_train", "adult_test", AdaBoostClassifier(n_estimators=8)),
    "shallow trees on letter": ("letter", "letter", AdaBoostClassifier(DecisionTreeClassifier(max_depth=3,
                                                                                              criterion="entropy"),
                                                                       n_estimators=4, learning_rate=0.5)),
    "naive Bayes on adult": ("adult_train", "adult_test", AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=4)),
    "naive Bayes on magic": ("magic", "magic", AdaBoostClassifier(NaiveBayesClassifier(var_smoothing=1e-6),
                                                                  n_estimators=4)),
}


@pytest.mark.parametrize("case", list(BOOSTED))
def test_adaboost_round_trip_is_bit_identical(case, tmp_path):
    train, test, model = BOOSTED[case]
    model.fit(dataset_path(train), target="class")
    again, doc = round_trip(model, tmp_path)
    assert doc["estimator"] == "AdaBoostClassifier" and len(doc["boosting"]["learners"]) == len(model.estimators_)
    assert_same_inputs(again, model)
    assert type(again.estimator) is type(model.estimator)
    if model.estimator is not None:
        assert again.estimator.get_params() == model.estimator.get_params()
    assert again.n_estimators == model.n_estimators and again.learning_rate == model.learning_rate
    np.testing.assert_array_equal(again.estimator_weights_, model.estimator_weights_)
    np.testing.assert_array_equal(again.estimator_errors_, model.estimator_errors_)
    assert again.n_passes_per_round_ == model.n_passes_per_round_
    rows = pq.read_table(dataset_path(test)).slice(0, 5000)
    np.testing.assert_array_equal(again.decision_function(rows), model.decision_function(rows))
    np.testing.assert_array_equal(again.predict_proba(rows), model.predict_proba(rows))
    np.testing.assert_array_equal(again.predict(rows), model.predict(rows))
    if isinstance(model.estimator, NaiveBayesClassifier):  # each round's learner is a whole naive Bayes model
        for a, b in zip(again.estimators_, model.estimators_):
            assert a.target_ == b.target_ == "class"
            np.testing.assert_array_equal(a.predict_proba(rows), b.predict_proba(rows))


# -- bad files -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_docs(tmp_path_factory):
    """Saved documents of a naive Bayes and a boosted naive Bayes model (buys_computer)."""
    folder = tmp_path_factory.mktemp("docs")
    data = dataset_path("buys_computer")
    NaiveBayesClassifier().fit(data, target="class").save(folder / "nb.json")
    AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=2).fit(data, target="class").save(folder / "ab.json")
    return {"nb": json.loads((folder / "nb.json").read_text()), "ab": json.loads((folder / "ab.json").read_text())}


def _set(path, value):
    def change(doc):
        *parents, last = path
        for key in parents:
            doc = doc[key]
        doc[last] = value
    return change


def _drop(*path):
    def change(doc):
        *parents, last = path
        for key in parents:
            doc = doc[key]
        del doc[last]
    return change


BAD = {
    "wrong format": ("nb", _set(["format"], "sklearn.pickle"), "is not a rainforest model"),
    "wrong version": ("nb", _set(["version"], 99), "version 99"),
    "unknown estimator": ("nb", _set(["estimator"], "GradientBoostingClassifier"), "unknown estimator"),
    "no naive Bayes part": ("nb", _drop("naive_bayes"), "corrupt NaiveBayesClassifier model: the entry 'naive_bayes'"),
    "naive Bayes part of another version": ("nb", _set(["naive_bayes", "version"], 7), "naive Bayes format version 7"),
    "counts cut short": ("nb", _drop("naive_bayes", "counts", "moments"), "corrupt NaiveBayesClassifier"),
    "unknown kind": ("nb", _set(["naive_bayes", "features", 0, 1], 5), "unknown kind 5"),
    "unknown parameter": ("nb", _set(["params", "smoothing"], 1), "corrupt NaiveBayesClassifier"),
    "boosting of another version": ("ab", _set(["boosting", "version"], 2), "boosting format version 2"),
    "more weights than learners": ("ab", _set(["boosting", "weights"], [1.0, 1.0, 1.0]), "learners but 3 weights"),
    "unknown base estimator": ("ab", _set(["params", "estimator", "estimator"], "SVC"), "unknown base estimator"),
    "learner not naive Bayes": ("ab", _set(["boosting", "learners", 0, "format"], "x"), "no naive Bayes model"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_documents_raise_one_error_naming_the_file(case, small_docs, tmp_path):
    which, change, message = BAD[case]
    doc = json.loads(json.dumps(small_docs[which]))
    change(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=re.escape(repr(str(path)))) as info:
        load(path)
    assert message in str(info.value)


def test_a_file_that_is_not_json(tmp_path):
    path = tmp_path / "model.json"
    path.write_text('{"format": "rainforest.model", "naive_bayes": {')
    with pytest.raises(ValueError, match=re.escape(repr(str(path))) + ".*invalid JSON"):
        load(path)


def test_a_document_of_another_estimator(small_docs):
    with pytest.raises(ValueError, match="'x.json' holds no AdaBoostClassifier model"):
        AdaBoostClassifier.from_document(small_docs["nb"], "x.json")


# -- writing -------------------------------------------------------------------------------------
def test_save_is_atomic(adult_nb, small_docs, tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        adult_nb.save(tmp_path / "missing" / "model.json")
    assert os.listdir(tmp_path) == []
    path = tmp_path / "model.json"
    path.write_text("the old model")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(rainforest.atomic.os, "replace", fail)
    boosted = AdaBoostClassifier(n_estimators=2).fit(dataset_path("buys_computer"), target="class")
    for model in (adult_nb, boosted):
        with pytest.raises(OSError, match="disk full"):
            model.save(path)
        assert os.listdir(tmp_path) == ["model.json"] and path.read_text() == "the old model"


def test_unfitted_models_are_not_saved(tmp_path):
    for model in (NaiveBayesClassifier(), AdaBoostClassifier()):
        with pytest.raises(NotFittedError):
            model.save(tmp_path / "model.json")
    assert not (tmp_path / "model.json").exists()
