"""Rows of weight 0 count as absent (scikit-learn's sample-weight equivalence), on every source.

Such a row is in no class, category, value, binning sample or row count: whatever it holds (an
extreme value, a class or a category found nowhere else, a null label), the model is the one
trained without it.  Two things stay keyed by a row's identity, its place in the source's row
order, as in :mod:`rainforest.storage.selection`: the binning sample (past ``sample_size`` rows)
and a forest's bootstrap.  A zero-weight row keeps its place, so there the model is the one
trained on the same rows with the zero-weight rows' contents changed (``altered``), and, where
no identity matters, also the one trained on the other rows alone (``kept``).
"""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import load_script

import duckdb
from rainforest import AdaBoostClassifier, DecisionTreeClassifier, NaiveBayesClassifier, RandomForestClassifier
from rainforest.errors import DataError
from rainforest.storage import DuckDBSource, PostgresSource

N = 4000


def table(zero_rows_hold: str) -> pa.Table:
    """Rows with weights 0, 1 and 2; the zero-weight rows hold ``"plain"`` values drawn like the
    others, or ``"odd"`` ones: extreme numbers, a category and a class found nowhere else."""
    rng = np.random.default_rng(0)
    x, z = rng.normal(size=N), rng.normal(size=N)
    c = rng.choice(["a", "b", "c"], N).astype(object)
    y = ((x + (c == "a") - 0.5 * z) > 0.3).astype(np.int64)
    w = rng.integers(0, 3, N).astype(np.float64)
    w[:5] = 0.0
    zero = w == 0
    if zero_rows_hold == "odd":
        x[zero] = np.where(np.arange(zero.sum()) % 2, 1e6, -1e6)
        z[zero] = 42.0
        c[zero] = "only-in-zero-weight-rows"
        y[zero] = 7
    return pa.table({"x": x, "z": z, "c": c, "y": y, "w": w})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("zero_weight")
    plain, odd = table("plain"), table("odd")
    pq.write_table(odd, d / "odd.parquet", row_group_size=700)
    return {"odd": str(d / "odd.parquet"), "plain": plain, "odd_table": odd,
            "kept": odd.filter(pa.compute.greater(odd.column("w"), 0))}


def fitted(learner, data):
    return learner.fit(data, target="y", sample_weight="w")


def assert_same_model(a, b, rows):
    assert a.classes_.tolist() == b.classes_.tolist() == [0, 1]
    if hasattr(a, "tree_"):
        assert a.tree_.to_json() == b.tree_.to_json()
    for ta, tb in zip(getattr(a, "estimators_", []), getattr(b, "estimators_", [])):
        assert (ta.to_json() if hasattr(ta, "to_json") else ta.tree_.to_json()) == \
               (tb.to_json() if hasattr(tb, "to_json") else tb.tree_.to_json())
    np.testing.assert_array_equal(a.predict_proba(rows), b.predict_proba(rows))


IDENTITY_FREE = {  # no row identity matters: the same model as without the zero-weight rows
    "tree": lambda: DecisionTreeClassifier(max_depth=6),
    "tree-min-samples": lambda: DecisionTreeClassifier(min_samples_leaf=40, min_samples_split=100),
    "tree-exact": lambda: DecisionTreeClassifier(max_depth=6, max_bins=None),
    "tree-read": lambda: DecisionTreeClassifier(max_depth=6, max_bins=8, algorithm="read"),
    "forest-no-bootstrap": lambda: RandomForestClassifier(n_estimators=4, max_depth=5, bootstrap=False),
    "forest-no-bootstrap-read": lambda: RandomForestClassifier(n_estimators=4, max_depth=5, bootstrap=False,
                                                               algorithm="read", min_samples_leaf=30),
    "naive-bayes": lambda: NaiveBayesClassifier(),
}
BY_IDENTITY = {  # the binning sample or the bootstrap is drawn by row identity
    "tree-sampled-bins": lambda: DecisionTreeClassifier(max_depth=6, max_bins=16, sample_size=1000),
    "forest": lambda: RandomForestClassifier(n_estimators=4, max_depth=5, min_samples_leaf=10),
    "forest-read": lambda: RandomForestClassifier(n_estimators=4, max_depth=5, algorithm="read"),
    "boosting": lambda: AdaBoostClassifier(n_estimators=3),
}


@pytest.mark.parametrize("name", IDENTITY_FREE)
def test_a_zero_weight_row_is_no_row_at_all(data, name):
    make = IDENTITY_FREE[name]
    assert_same_model(fitted(make(), data["odd"]), fitted(make(), data["kept"]), data["odd_table"])


@pytest.mark.parametrize("name", list(IDENTITY_FREE) + list(BY_IDENTITY))
def test_what_a_zero_weight_row_holds_changes_nothing(data, name):
    make = {**IDENTITY_FREE, **BY_IDENTITY}[name]
    assert_same_model(fitted(make(), data["odd"]), fitted(make(), data["plain"]), data["odd_table"])


def test_the_out_of_bag_score_leaves_zero_weight_rows_out(data):
    forest = fitted(RandomForestClassifier(n_estimators=6, max_depth=5, oob_score=True), data["odd"])
    odd = data["odd_table"]
    counted = odd.column("w").to_numpy() > 0
    y = odd.column("y").to_numpy()
    # every row gets its out-of-bag votes; the score is over the rows that count
    assert forest.oob_decision_function_.shape == (N, 2)
    expected = np.mean(forest.classes_[np.argmax(forest.oob_decision_function_, axis=1)][counted] == y[counted])
    assert forest.oob_score_ == pytest.approx(expected)
    plain = fitted(RandomForestClassifier(n_estimators=6, max_depth=5, oob_score=True), data["plain"])
    assert plain.oob_score_ == forest.oob_score_


@pytest.mark.parametrize("name", ["tree-read", "tree-exact", "tree-sampled-bins", "forest", "naive-bayes"])
def test_duckdb_pushes_the_rule_down(data, name):
    """The pushed-down profile and counts leave zero-weight rows out as the Parquet source does."""
    make = {**IDENTITY_FREE, **BY_IDENTITY}[name]
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{data['odd']}')")
    a, b = fitted(make(), data["odd"]), fitted(make(), DuckDBSource(table="t", connection=con))
    assert_same_model(a, b, data["odd_table"])
    if getattr(a, "algorithm", "read") == "read":  # other algorithms keep the rows of Parquet, not yet of SQL (issue 25)
        assert a.n_passes_ == b.n_passes_


@pytest.mark.parametrize("transfer", ["aggregates", "rows"])
def test_postgres_pushes_the_rule_down(data, postgres_url, transfer):
    """Pushed down, or on the rows streamed out (once: later passes read the fit's local copy)."""
    load_script("postgres_server").load_table(postgres_url, "zero_weight", data["odd_table"], replace=True)
    for make in (IDENTITY_FREE["tree-read"], BY_IDENTITY["forest-read"],
                 lambda: DecisionTreeClassifier(max_depth=6, max_bins=None, algorithm="read")):
        a = fitted(make(), data["odd"])
        b = fitted(make(), PostgresSource(postgres_url, table="zero_weight", transfer=transfer))
        assert_same_model(a, b, data["odd_table"])
        # pushed down, a tree reads the table twice (then its node table), a forest's passes fold the rows
        pushed = (min(a.n_passes_, 2) if isinstance(b, DecisionTreeClassifier) else a.n_passes_)
        assert b.n_passes_ == (pushed if transfer == "aggregates" else 1)


def test_weights_zero_on_every_row_are_refused_on_sql_too(data):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * EXCLUDE (w), 0.0 AS w FROM read_parquet('{data['odd']}')")
    with pytest.raises(DataError, match="zero on every row"):
        fitted(DecisionTreeClassifier(algorithm="read"), DuckDBSource(table="t", connection=con))
