"""Naive Bayes on hostile columns: huge finite values are not called infinite, an all-null column is
refused as the tree refuses it."""
import numpy as np
import pyarrow as pa
import pytest

from rainforest import DataError, DecisionTreeClassifier, NaiveBayesClassifier

Y = (np.arange(40) >= 20).astype(np.int64)


def test_huge_finite_values_are_not_called_infinite():
    x = np.where(Y == 1, 1.79e308, -1.0)  # finite: the largest float64 is 1.797e308
    with pytest.raises(DataError) as info:
        NaiveBayesClassifier().fit(pa.table({"big": x, "y": Y}), target="y")
    message = str(info.value)
    assert "'big'" in message and "variance" in message and "infinite" not in message


def test_huge_values_whose_sum_overflows_but_variance_does_not_are_learned():
    # forty values of 1.7e308 sum past float64's largest; their variance (0) does not
    table = pa.table({"big": np.full(40, 1.7e308), "x": np.arange(40.0), "y": Y})
    nb = NaiveBayesClassifier().fit(table, target="y")
    assert np.allclose(nb.theta_[:, 0], 1.7e308, rtol=1e-12) and np.isfinite(nb.var_).all()


def test_an_infinite_value_is_still_refused_naming_the_row():
    x = np.arange(40.0)
    x[7] = np.inf
    with pytest.raises(DataError, match="'x'.*inf at row 7; infinite"):
        NaiveBayesClassifier().fit(pa.table({"x": x, "y": Y}), target="y")


@pytest.mark.parametrize("column", [pa.nulls(40, pa.float64()), pa.array([np.nan] * 40),
                                    pa.nulls(40, pa.string())], ids=["null-float", "nan", "null-string"])
def test_an_all_null_column_is_refused_like_the_tree_refuses_it(column):
    table = pa.table({"x": np.arange(40.0), "empty": column, "y": Y})
    messages = []
    for learner in (DecisionTreeClassifier(), NaiveBayesClassifier()):
        with pytest.raises(DataError) as info:
            learner.fit(table, target="y")
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "'empty'" in messages[0] and "entirely null" in messages[0]


def test_rows_of_weight_zero_count_as_absent(tmp_path):
    # scikit-learn's check_sample_weight_equivalence: weight 0 is the same as no row at all, even
    # where the zero-weight rows alone hold a class, a category or an extreme value
    import pyarrow.parquet as pq
    rng = np.random.default_rng(0)
    n = 300
    x = rng.normal(size=n)
    c = rng.choice(["a", "b", "c"], n)
    y = (x > 0).astype(np.int64)
    w = rng.integers(0, 3, n).astype(np.float64)
    x[:3], c[:3], y[:3], w[:3] = 1e6, "only-in-zero-weight-rows", 7, 0.0
    full = pa.table({"x": x, "c": c, "y": y, "w": w})
    kept = full.filter(pa.array(w > 0))
    pq.write_table(full, tmp_path / "full.parquet")
    a = NaiveBayesClassifier().fit(str(tmp_path / "full.parquet"), target="y", sample_weight="w")
    b = NaiveBayesClassifier().fit(kept, target="y", sample_weight="w")
    assert a.classes_.tolist() == b.classes_.tolist() == [0, 1]
    assert a.categories_ == b.categories_
    np.testing.assert_array_equal(a.predict_proba(full), b.predict_proba(full))
    np.testing.assert_array_equal(a.var_, b.var_)
