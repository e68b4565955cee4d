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
