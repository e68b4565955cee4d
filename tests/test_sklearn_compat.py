"""scikit-learn compatibility of every estimator: its common checks, and the tools users combine
rainforest's estimators with (Pipeline, GridSearchCV, cross_val_score, clone, nested parameters).

Every common check an estimator does not pass is listed in ``EXPECTED_FAILURES`` with the reason;
scikit-learn marks those xfail (and reports an unexpected pass).
"""
import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import rainforest
from rainforest import (AdaBoostClassifier, DecisionTreeClassifier, DecisionTreeRegressor, NaiveBayesClassifier,
                        NotFittedError, RandomForestClassifier, RandomForestRegressor)
from rainforest.boat import BoatClassifier


def small_estimators():
    """Every estimator with small, fast parameters."""
    return [DecisionTreeClassifier(max_depth=4, sample_size=1000),
            RandomForestClassifier(n_estimators=4, max_depth=4, sample_size=1000),
            NaiveBayesClassifier(),
            AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, sample_size=1000), n_estimators=4),
            BoatClassifier(max_depth=4, sample_size=200, n_bootstrap=3)]


# check name -> why rainforest's estimators do not pass it. Most are input checks whose messages are
# rainforest's own (naming the column, the file or the rows; see rainforest/inputs.py), where
# scikit-learn's checks look for its own wording.
COMMON = {
    "check_estimators_unfitted": "rainforest raises its own NotFittedError (a ValueError and an AttributeError, "
                                 "as scikit-learn's), not scikit-learn's class: rainforest does not depend on it",
    "check_n_features_in_after_fitting": "a wrong column count in predict is a DataError in rainforest's words "
                                         "('X has 1 features, but the model was trained with 4'), not "
                                         "scikit-learn's 'is expecting 4 features'",
    "check_classifiers_train": "predict reads an unnamed array's columns by position, so an array with more "
                               "columns than the model's is not refused",
    "check_classifiers_train(readonly_memmap=True)": "as check_classifiers_train",
    "check_classifiers_train(readonly_memmap=True,X_dtype=float32)": "as check_classifiers_train",
    "check_complex_data": "complex values fail in the conversion to Arrow (ArrowNotImplementedError), not in a "
                          "ValueError of rainforest's",
    "check_dtype_object": "object arrays become Arrow columns: a string column is categorical, and mixed objects "
                          "fail in pyarrow, not in a ValueError of rainforest's",
    "check_estimators_empty_data_messages": "empty input is refused in rainforest's words (naming the rows), not "
                                            "scikit-learn's",
    "check_supervised_y_2d": "a column-vector y of shape (n, 1) is refused by the conversion to Arrow, not "
                             "raveled with a DataConversionWarning",
    "check_fit2d_1sample": "one row is refused as a single class in rainforest's words ('has a single class'), "
                           "not scikit-learn's",
    "check_fit2d_predict1d": "a 1-D X is refused in rainforest's words ('X must be 2-dimensional'), not "
                             "scikit-learn's 'Reshape your data'",
    "check_requires_y_none": "fit without y asks for y or target= in rainforest's words, not scikit-learn's",
}
EXPECTED_FAILURES = {  # the tree, boosting and naive Bayes pass the sample-weight equivalence checks
    "RandomForestClassifier": {"check_sample_weight_equivalence_on_dense_data":
                               "a weight is not a repeated row: the bootstrap draws each row by its identity, "
                               "so a row of weight 2 is one draw where two repeated rows are two (as "
                               "scikit-learn's own forest)"},
    "NaiveBayesClassifier": {},
    "BoatClassifier": {},  # takes no sample_weight: those checks do not run
}


def expected_failed_checks(estimator) -> dict:
    return {**COMMON, **EXPECTED_FAILURES.get(type(estimator).__name__, {})}


@parametrize_with_checks(small_estimators(), expected_failed_checks=expected_failed_checks)
def test_sklearn_common_checks(estimator, check):
    check(estimator)


#: the regressors' own reasons, where a check tries a target they refuse in rainforest's words
REGRESSOR_FAILURES = {
    "check_complex_data": "a complex target is refused as not numeric ('a regressor needs a numeric target'), "
                          "not in scikit-learn's words",
    "check_dtype_object": "an object target is refused as not numeric in rainforest's words, not scikit-learn's",
}
#: the classifiers' expected failures that a regressor passes (one row is a regressor's valid data)
REGRESSOR_PASSES = {"check_fit2d_1sample"}


def regressor_failed_checks(estimator) -> dict:
    forest = {"check_sample_weight_equivalence_on_dense_data":
              EXPECTED_FAILURES["RandomForestClassifier"]["check_sample_weight_equivalence_on_dense_data"]}
    common = {k: v for k, v in COMMON.items() if k not in REGRESSOR_PASSES}
    return {**common, **REGRESSOR_FAILURES, **(forest if isinstance(estimator, RandomForestRegressor) else {})}


@parametrize_with_checks([DecisionTreeRegressor(max_depth=4, sample_size=1000),
                          RandomForestRegressor(n_estimators=4, max_depth=4, sample_size=1000)],
                         expected_failed_checks=regressor_failed_checks)
def test_sklearn_common_checks_of_the_regressors(estimator, check):
    check(estimator)


# -- the tools users combine estimators with --------------------------------------------------------
@pytest.fixture(scope="module")
def binary():
    return make_classification(400, n_features=6, n_informative=4, random_state=0)


@pytest.mark.parametrize("estimator", small_estimators(), ids=lambda e: type(e).__name__)
def test_is_classifier_and_roc_auc_scoring(estimator, binary):
    """is_classifier answers True, so cross_val_score stratifies and roc_auc finds the scores: real numbers."""
    X, y = binary
    assert is_classifier(estimator)
    scores = cross_val_score(estimator, X, y, cv=3, scoring="roc_auc")
    assert np.all(np.isfinite(scores)) and np.all(scores > 0.6), scores


@pytest.mark.parametrize("estimator", small_estimators(), ids=lambda e: type(e).__name__)
def test_clone_and_pipeline(estimator, binary):
    X, y = binary
    copy = clone(estimator)
    assert copy is not estimator and copy.get_params(deep=False).keys() == estimator.get_params(deep=False).keys()
    pipe = make_pipeline(StandardScaler(), copy).fit(X, y)
    assert pipe.score(X, y) > 0.6  # chance is 0.5
    assert pipe.predict_proba(X).shape == (len(X), 2)


def test_grid_search_over_max_depth(binary):
    X, y = binary
    search = GridSearchCV(DecisionTreeClassifier(), {"max_depth": [1, 3]}, cv=3).fit(X, y)
    assert search.best_params_["max_depth"] in (1, 3)
    assert search.best_estimator_.tree_.max_depth <= 3


def test_adaboost_nested_parameters(binary):
    """get_params(deep=True) holds the base's parameters as estimator__name; set_params sets them,
    and GridSearchCV searches them."""
    X, y = binary
    boost = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1), n_estimators=3)
    params = boost.get_params(deep=True)
    assert params["estimator__max_depth"] == 1 and "estimator__max_depth" not in boost.get_params(deep=False)
    assert boost.set_params(estimator__max_depth=3, n_estimators=2) is boost
    assert boost.estimator.max_depth == 3 and boost.n_estimators == 2
    boost.fit(X, y)
    assert max(t.max_depth for t in boost.estimators_) == 3
    with pytest.raises(ValueError, match="nonsense"):
        boost.set_params(estimator__nonsense=1)
    search = GridSearchCV(AdaBoostClassifier(DecisionTreeClassifier(), n_estimators=2),
                          {"estimator__max_depth": [1, 2]}, cv=3).fit(X, y)
    assert search.best_params_["estimator__max_depth"] in (1, 2)


def test_adaboost_decision_function_shape():
    """Two classes: one column, the second class's votes minus the first's (scikit-learn's shape);
    more classes: one column per class. predict agrees with it."""
    X, y = make_classification(300, n_features=5, n_informative=3, random_state=1)
    boost = AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=4).fit(X, y)
    d = boost.decision_function(X)
    assert d.shape == (len(X),)
    np.testing.assert_array_equal(boost.predict(X), boost.classes_[(d > 0).astype(int)])
    X3, y3 = make_classification(300, n_features=5, n_informative=3, n_classes=3, random_state=1)
    boost3 = AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=4).fit(X3, y3)
    d3 = boost3.decision_function(X3)
    assert d3.shape == (len(X3), 3)
    np.testing.assert_array_equal(boost3.predict(X3), boost3.classes_[np.argmax(d3, axis=1)])


@pytest.mark.parametrize("param, value", [("class_weight", "balanced"), ("ccp_alpha", 0.01)])
def test_adaboost_refuses_base_tree_parameters_it_would_ignore(param, value, binary):
    X, y = binary
    with pytest.raises(ValueError, match=param):
        AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, **{param: value}), n_estimators=2).fit(X, y)


def test_naive_bayes_before_fit_is_not_fitted(binary, tmp_path):
    X, _ = binary
    nb = NaiveBayesClassifier()
    for call in (lambda: nb.predict(X), lambda: nb.predict_proba(X), lambda: nb.predict_joint_log_proba(X),
                 lambda: nb.save(tmp_path / "nb.json")):
        with pytest.raises(NotFittedError, match="not fitted"):
            call()
    assert not (tmp_path / "nb.json").exists()


def test_naive_bayes_partial_fit_with_classes(binary):
    """classes= on the first call makes every class known though a batch lacks one; the model of all
    batches is the one fit gives; a class not listed is an error naming it."""
    X, y = binary
    order = np.argsort(y, kind="stable")  # the first batch holds class 0 only
    Xs, ys = X[order], y[order]
    nb = NaiveBayesClassifier()
    nb.partial_fit(Xs[:100], ys[:100], classes=[0, 1])
    assert list(nb.classes_) == [0, 1] and set(ys[:100]) == {0}
    assert nb.predict_proba(Xs[:5])[:, 1].max() == 0.0  # no row of class 1 counted yet
    nb.partial_fit(Xs[100:], ys[100:], classes=[0, 1])
    full = NaiveBayesClassifier().fit(Xs, ys)
    np.testing.assert_allclose(nb.predict_proba(X), full.predict_proba(X), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="class 2"):
        NaiveBayesClassifier().partial_fit(X[:10], np.full(10, 2), classes=[0, 1])


@pytest.mark.parametrize("make", [lambda: DecisionTreeClassifier(max_depth=3),
                                  lambda: RandomForestClassifier(n_estimators=3, max_depth=3),
                                  lambda: BoatClassifier(max_depth=3, sample_size=200, n_bootstrap=3)],
                         ids=["tree", "forest", "boat"])
def test_random_state_defaults_to_0_everywhere(make, binary):
    """rainforest is deterministic by default: every learner's random_state is 0."""
    X, y = binary
    est = make()
    assert est.random_state == 0
    a, b = make().fit(X, y), make().fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_one_name_per_idea():
    """The profiling pass's sample is sample_size and the temporary folder spill_dir in every learner
    that has one; no learner keeps the old names."""
    for est in small_estimators():
        names = est.get_params(deep=False)
        assert "binning_sample" not in names and "work_dir" not in names
    for cls in (DecisionTreeClassifier, RandomForestClassifier, BoatClassifier):
        assert "sample_size" in cls().get_params()
    for cls in (DecisionTreeClassifier, BoatClassifier):
        assert "spill_dir" in cls().get_params()


@pytest.mark.parametrize("estimator, param, value", [
    (DecisionTreeClassifier(), "max_depth", 0), (DecisionTreeClassifier(), "sample_size", 10),
    (RandomForestClassifier(), "max_features", "half"), (NaiveBayesClassifier(), "alpha", -1.0),
    (AdaBoostClassifier(), "learning_rate", 0.0), (BoatClassifier(), "n_buckets", 2),
    (BoatClassifier(), "spill_dir", 3)], ids=lambda v: v if isinstance(v, str) else None)
def test_declared_constraints_are_checked_in_fit(estimator, param, value, binary):
    X, y = binary
    with pytest.raises(ValueError, match=param):
        clone(estimator).set_params(**{param: value}).fit(X, y)


def test_a_file_with_old_parameter_names_loads(binary, tmp_path):
    """Parameters renamed since a model was saved (binning_sample) get their names of now."""
    import json

    X, y = binary
    path = tmp_path / "tree.json"
    DecisionTreeClassifier(max_depth=2, sample_size=5000).fit(X, y).save(path)
    doc = json.loads(path.read_text())
    doc["params"]["binning_sample"] = doc["params"].pop("sample_size")
    path.write_text(json.dumps(doc))
    assert rainforest.load(path).sample_size == 5000


def test_the_estimator_layer_imports_no_learner():
    """The import circle is gone: the tree module, the model file and the base import no other learner,
    and the criteria the constraints declare are the engine's."""
    import ast
    from pathlib import Path

    from rainforest.constraints import CRITERION_NAMES
    from rainforest.criteria import CRITERIA

    root = Path(rainforest.__file__).parent
    learners = {"forest", "bayes", "boosting", "boat"}
    for name in ("estimators.py", "model_file.py", "base.py", "params.py", "constraints.py", "tree_setup.py"):
        tree = ast.parse((root / name).read_text())
        imported = {(n.module or "").split(".")[-1] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & learners, (name, imported & learners)
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
        assert not [n for n in names if n.startswith("_")], (name, names)
    assert set(CRITERION_NAMES) == set(CRITERIA)
