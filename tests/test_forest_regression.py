"""Regression forests (issue 15): regression trees grown together on the classifier forest's engine.

R² beside scikit-learn's RandomForestRegressor on held-out rows of real data, the out-of-bag R²
beside the held-out one; without a bootstrap and with every attribute each tree is the
DecisionTreeRegressor's tree; the in-memory finish (copies of each tree's in-bag rows, a float
target word in each record), the spill and the passes grow the same forest; every source grows it;
the model file, Dask and scikit-learn's tools take it.
"""
import os

import numpy as np
import pyarrow as pa
import pytest
from sklearn.ensemble import RandomForestRegressor as SkForest

import rainforest
from rainforest import DataError, DecisionTreeRegressor, RandomForestRegressor
from test_regression import magic_regression, regression_xy  # noqa: F401 (a fixture)

pytestmark = pytest.mark.filterwarnings("ignore:some rows are in the bootstrap of every tree:UserWarning")


def held_out(name, target, frac=0.75, seed=0):
    X, y = regression_xy(name, target)
    train = np.random.default_rng(seed).random(len(y)) < frac
    return X[train], y[train], X[~train], y[~train]


@pytest.fixture(scope="module")
def magic_folder(magic_regression):
    """magic without its class (FLength the target) as a table, and as a Parquet folder of 3 files."""
    t, folder = magic_regression
    return t, str(folder)


@pytest.mark.parametrize("name,target", [("magic", "FLength"), ("letter", "x_box"), ("agrawal", "hvalue")])
def test_r2_within_a_point_of_sklearn_and_out_of_bag_agrees_with_held_out(name, target):
    X, y, Xt, yt = held_out(name, target)
    params = dict(n_estimators=40, max_depth=10)
    ours = RandomForestRegressor(oob_score=True, **params).fit(X, y)
    theirs = SkForest(random_state=0, n_jobs=2, **params).fit(X, y)
    r2, sk_r2 = ours.score(Xt, yt), theirs.score(Xt, yt)
    print(f"{name}.{target}: R² {r2:.4f} (scikit-learn {sk_r2:.4f}), out of bag {ours.oob_score_:.4f}")
    assert abs(r2 - sk_r2) <= 0.01
    assert abs(ours.oob_score_ - r2) <= 0.02
    assert ours.oob_prediction_.shape == (len(y),) and np.isfinite(ours.oob_prediction_).all()
    trees = np.mean([t.value[t.apply(Xt.astype(np.float64)), 0] for t in ours.estimators_], axis=0)
    np.testing.assert_allclose(ours.predict(Xt), trees, rtol=1e-12)  # the mean of the trees' leaf means


def test_without_bootstrap_every_tree_is_the_binned_regression_tree():
    """Binned and unweighted, the forest's cells add the targets in the tree's exact parts (without a
    bootstrap the grids are the tree's): every tree is the DecisionTreeRegressor's, JSON for JSON."""
    X, y = regression_xy("magic", "FLength")
    forest = RandomForestRegressor(n_estimators=2, bootstrap=False, max_features=None, max_depth=8).fit(X, y)
    tree = DecisionTreeRegressor(max_depth=8).fit(X, y)
    for t in forest.estimators_:
        assert t.to_dict() == tree.tree_.to_dict()


@pytest.mark.parametrize("weighted", [False, True])
def test_without_bootstrap_every_tree_is_the_regression_tree(weighted):
    X, y = regression_xy("magic", "FLength")
    w = np.random.default_rng(5).integers(1, 4, len(y)).astype(np.float64) if weighted else None
    forest = RandomForestRegressor(n_estimators=3, bootstrap=False, max_features=None, max_bins=None,
                                   max_depth=7).fit(X, y, sample_weight=w)
    tree = DecisionTreeRegressor(max_bins=None, max_depth=7).fit(X, y, sample_weight=w)
    for t in forest.estimators_:
        assert t.to_dict() == tree.tree_.to_dict()
    np.testing.assert_allclose(forest.predict(X), tree.predict(X), rtol=1e-12)


@pytest.mark.parametrize("extra, budget", [
    (dict(), "4MB"),
    (dict(max_bins=None, max_features=0.5), "12MB"),
    (dict(weighted=True, max_samples=0.5), "4MB"),
])
def test_trees_grown_in_memory_a_chunk_at_a_time_equal_the_forest_grown_by_passes(magic_folder, extra, budget):
    """Each copied record holds the target in a float64 word of its own (rainforest/in_bag.py); the
    budget makes several chunks, and the forest is the one a pass per level grows, for any n_jobs."""
    t, _ = magic_folder
    extra = dict(extra)
    if extra.pop("weighted", False):
        t = t.append_column("w", pa.array(np.random.default_rng(1).integers(0, 3, t.num_rows).astype(float)))
    fit = dict(target="FLength", sample_weight="w" if "w" in t.column_names else None)
    params = dict(n_estimators=6, max_depth=6, random_state=4, oob_score=True, **extra)
    passes = RandomForestRegressor(algorithm="read", **params).fit(t, **fit)
    for n_jobs in (1, 2):
        chunked = RandomForestRegressor(memory_budget=budget, n_jobs=n_jobs, **params).fit(t, **fit)
        assert 1 <= chunked.grow_stats_.trees_grown_together < 6  # several chunks
        assert chunked.n_passes_ == 3 < passes.n_passes_  # profiling, keeping the rows, out of bag
        assert chunked.to_json() == passes.to_json(), n_jobs
        assert chunked.oob_score_ == passes.oob_score_


def test_rows_spilled_or_counted_from_the_roots_grow_the_same_forest(magic_folder, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    t, _ = magic_folder
    params = dict(n_estimators=4, max_depth=5, random_state=2)
    passes = RandomForestRegressor(algorithm="read", **params).fit(t, target="FLength")
    spilled = RandomForestRegressor(memory_budget="1MB", **params).fit(t, target="FLength")
    stats = spilled.grow_stats_
    assert stats.kept_rows == 0 and stats.spill_reads > 0 and spilled.n_passes_ == 2
    width = t.num_columns - 1
    assert stats.spill_bytes == t.num_rows * (width * 1 + 8 + 2)  # slots, the float64 target, the node (2 bytes)
    assert spilled.to_json() == passes.to_json()
    assert os.listdir(tmp_path) == []
    roots = RandomForestRegressor(memory_budget="1500kB", **params).fit(t, target="FLength")
    assert roots.grow_stats_.kept_rows == t.num_rows and roots.grow_stats_.trees_grown_together == 0
    assert roots.to_json() == passes.to_json()


def test_every_source_grows_the_same_forest(magic_folder):
    from rainforest.storage import DuckDBSource

    t, folder = magic_folder
    params = dict(n_estimators=6, max_depth=6, random_state=3, oob_score=True)
    ref = RandomForestRegressor(**params).fit(folder, target="FLength")
    X = t.drop(["FLength"]).to_pandas()
    fits = {"table": RandomForestRegressor(**params).fit(t, target="FLength"),
            "DataFrame and y": RandomForestRegressor(**params).fit(X, t.column("FLength").to_pandas()),
            "batch 777, n_jobs=1": RandomForestRegressor(batch_size=777, n_jobs=1, **params).fit(
                folder, target="FLength"),
            "DuckDB": RandomForestRegressor(**params).fit(DuckDBSource(parquet=folder), target="FLength"),
            "DuckDB aggregates": RandomForestRegressor(**params).fit(
                DuckDBSource(parquet=folder, transfer="aggregates"), target="FLength")}
    for name, reg in fits.items():
        assert reg.to_json() == ref.to_json(), name
        assert reg.oob_score_ == ref.oob_score_, name
    assert ref.n_passes_ == 3 and fits["DuckDB aggregates"].n_passes_ == 1 + 6 + 1  # rows stay: a pass a level


def test_dask_grows_the_same_forest(magic_folder):
    """Dask sums each partition's cells, then the partitions': without sample weights the targets are
    added in exact parts (target_parts.py), so the forest is the Parquet one, JSON for JSON.  With
    weights the sums are plain floats in another order: the same roots, and a near tie deep down may
    go the other way (one node of 127 in this forest's first tree), so the scores agree closely."""
    dd = pytest.importorskip("dask.dataframe")
    t, folder = magic_folder
    params = dict(n_estimators=4, max_depth=6, random_state=3)
    ref = RandomForestRegressor(**params).fit(folder, target="FLength")
    dask = RandomForestRegressor(**params).fit(dd.read_parquet(folder), target="FLength")
    assert dask.to_json() == ref.to_json()
    frame = t.append_column("w", pa.array(np.arange(t.num_rows) % 3 + 0.5)).to_pandas()
    weighted = RandomForestRegressor(**params).fit(frame, target="FLength", sample_weight="w")
    on_dask = RandomForestRegressor(**params).fit(dd.from_pandas(frame, npartitions=5), target="FLength",
                                                  sample_weight="w")
    for a, b in zip(weighted.estimators_, on_dask.estimators_):
        assert (a.feature[0], a.threshold[0]) == (b.feature[0], b.threshold[0])
    X, y = t.drop(["FLength"]), t.column("FLength").to_numpy()
    assert abs(weighted.score(X, y) - on_dask.score(X, y)) < 1e-3
    lazy = ref.predict(dd.read_parquet(folder).drop(columns=["FLength"]))
    np.testing.assert_array_equal(np.asarray(lazy.compute()), ref.predict(t.drop(["FLength"])))


def test_postgresql_grows_the_same_tree_and_forest(magic_folder, postgres_url):
    from conftest import load_script
    from rainforest.metrics import evaluate
    from rainforest.storage import PostgresSource

    t, folder = magic_folder
    load_script("postgres_server").load_table(postgres_url, "forest_magic", t, replace=True)
    table = PostgresSource(postgres_url, table="forest_magic", transfer="rows")
    params = dict(n_estimators=4, max_depth=5, random_state=2, oob_score=True)
    ref = RandomForestRegressor(**params).fit(folder, target="FLength")
    reg = RandomForestRegressor(**params).fit(table, target="FLength")
    assert reg.to_json() == ref.to_json() and reg.oob_score_ == ref.oob_score_
    tree = DecisionTreeRegressor(max_depth=7).fit(table, target="FLength")
    assert tree.tree_.to_json() == DecisionTreeRegressor(max_depth=7).fit(folder, target="FLength").tree_.to_json()
    assert tree.n_passes_ == 1  # one query: the profile and growth read the fit's local copy of the rows
    assert evaluate(tree, table, target="FLength").r2 == pytest.approx(tree.score(t, target="FLength"), rel=1e-9)
    inside = DecisionTreeRegressor(max_depth=7).fit(PostgresSource(postgres_url, table="forest_magic",
                                                                    transfer="aggregates"), target="FLength")
    # the table twice (the profile; the root's pass, which encodes the rows into a temporary node table), then one
    # GROUP BY query a level over that table; no row leaves
    assert inside.n_passes_ == 2
    assert inside.tree_.to_json() == tree.tree_.to_json()  # exact parts of the target: any order adds alike


def test_model_file_warm_start_and_checks(tmp_path, magic_folder):
    t, _ = magic_folder
    X = t.drop(["FLength"])
    reg = RandomForestRegressor(n_estimators=5, max_depth=5, oob_score=True).fit(t, target="FLength")
    path = tmp_path / "forest.json"
    reg.save(path)
    back = rainforest.load(path)
    assert type(back) is RandomForestRegressor and back.oob_score_ == reg.oob_score_
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))
    np.testing.assert_array_equal(back.feature_importances_, reg.feature_importances_)
    doc = path.read_text().replace('"estimator": "RandomForestRegressor"', '"estimator": "RandomForestClassifier"')
    (tmp_path / "bad.json").write_text(doc)
    with pytest.raises(rainforest.ModelError, match="regression"):
        rainforest.load(tmp_path / "bad.json")
    more = RandomForestRegressor(n_estimators=5, max_depth=5, warm_start=True).fit(t, target="FLength")
    more.set_params(n_estimators=8).fit(t, target="FLength")
    whole = RandomForestRegressor(n_estimators=8, max_depth=5).fit(t, target="FLength")
    assert more.to_json() == whole.to_json()


def test_wrong_targets_and_parameters_are_refused(tmp_path):
    X = np.random.default_rng(0).normal(size=(200, 3))
    with pytest.raises(ValueError, match="classifier"):
        RandomForestRegressor().fit(X, np.array(["a", "b"] * 100))
    t = pa.table({"x": X[:, 0], "label": pa.array(["a", "b"] * 100)})
    with pytest.raises(DataError, match="'label'.*a regressor needs numbers"):
        RandomForestRegressor().fit(t, target="label")
    for bad in (dict(criterion="gini"), dict(class_weight="balanced"), dict(categorical_split="multiway")):
        with pytest.raises((ValueError, TypeError)):
            RandomForestRegressor(**bad).fit(X, X[:, 0])


def test_sklearn_tools_take_the_forest():
    from sklearn.base import clone, is_regressor
    from sklearn.model_selection import cross_val_score

    X, y = regression_xy("magic", "FLength")
    X, y = X[:3000], y[:3000]
    reg = RandomForestRegressor(n_estimators=30, max_depth=6, max_bins=None)  # 2,000 rows: exact, as scikit-learn
    assert is_regressor(reg) and not hasattr(clone(reg), "estimators_")
    ours = cross_val_score(reg, X, y, cv=3)  # R², a regressor's default score
    theirs = cross_val_score(SkForest(n_estimators=30, max_depth=6, random_state=0), X, y, cv=3)
    assert np.all(np.abs(ours - theirs) < 0.02), (ours, theirs)
