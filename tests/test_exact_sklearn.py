"""Exact mode grows scikit-learn's tree: same attribute and threshold node for node (ties verified)."""
import numpy as np
import pytest

from conftest import numeric_xy
from oracle import compare_with_sklearn
from rainforest import DecisionTreeClassifier
from rainforest.datasets import agrawal_table


def _agrawal_f7(n=20_000):
    t = agrawal_table(n, function=7, seed=3)
    cols = [c for c in t.column_names if c != "class"]
    X = np.column_stack([t.column(c).to_numpy().astype(np.float32) for c in cols])
    return X, t.column("class").to_numpy(), cols


CASES = [("magic", "gini", 14), ("magic", "entropy", 12), ("letter", "gini", None), ("letter", "entropy", None),
         ("shuttle", "gini", None), ("shuttle", "entropy", None), ("agrawal_f7", "gini", None),
         ("agrawal_f7", "entropy", 10)]


@pytest.mark.parametrize("name,criterion,max_depth", CASES)
def test_exact_mode_is_sklearns_tree(name, criterion, max_depth):
    X, y, _ = _agrawal_f7() if name == "agrawal_f7" else numeric_xy(name)
    clf = DecisionTreeClassifier(criterion=criterion, max_bins=None, max_depth=max_depth).fit(X, y)
    cmp = compare_with_sklearn(clf.tree_, X, y, criterion=criterion, max_depth=max_depth)
    assert cmp.mismatches == []
    assert cmp.equal_nodes + cmp.ties == clf.tree_.node_count  # every node was compared
    assert cmp.ties < 0.2 * clf.tree_.node_count
    # where no tie intervened, predictions agree with scikit-learn's on every training row
    from sklearn.tree import DecisionTreeClassifier as SkTree
    sk = SkTree(criterion=criterion, max_depth=max_depth, random_state=0).fit(X, y)
    agree = np.mean(sk.predict(X) == clf.predict(X))
    assert agree > 0.99 if cmp.ties else agree == 1.0


def test_stopping_rules_match_sklearn():
    X, y, _ = numeric_xy("magic")
    params = dict(max_depth=8, min_samples_split=40, min_samples_leaf=7, min_impurity_decrease=1e-4)
    clf = DecisionTreeClassifier(max_bins=None, **params).fit(X, y)
    cmp = compare_with_sklearn(clf.tree_, X, y, **params)
    assert cmp.mismatches == [] and cmp.equal_nodes > 0


def test_feature_importances_equal_sklearn_without_ties():
    X, y, _ = numeric_xy("magic")
    clf = DecisionTreeClassifier(max_bins=None, max_depth=4).fit(X, y)
    from sklearn.tree import DecisionTreeClassifier as SkTree
    sk = SkTree(max_depth=4, random_state=0).fit(X, y)
    cmp = compare_with_sklearn(clf.tree_, X, y, max_depth=4)
    assert cmp.ties == 0 and cmp.mismatches == []
    np.testing.assert_allclose(clf.feature_importances_, sk.feature_importances_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(clf.predict_proba(X), sk.predict_proba(X), rtol=1e-12)
