"""Regression trees (issue 15): CART's variance reduction on the classifier's engine.

Exact mode is scikit-learn's ``DecisionTreeRegressor`` node for node (the tie-aware oracle of
``tests/oracle.py``) on real data's numeric columns used as targets and on a regression variant of
Agrawal (the loan from the other attributes), with and without sample weights; every source and
every growth algorithm builds the same tree; the target's shift keeps sums precise when the mean is
large against the spread.
"""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.tree import DecisionTreeRegressor as SkRegressor

import rainforest
from conftest import dataset_path
from oracle import compare_with_sklearn
from rainforest import DataError, DecisionTreeClassifier, DecisionTreeRegressor
from rainforest.datasets import agrawal_table
from rainforest.regression_metrics import mean_absolute_error, mean_squared_error, r2_score


def regression_xy(name: str, target: str):
    """A test dataset's other numeric columns as float32 features and one of them as the target
    (float32-exact values, as scikit-learn's features are)."""
    if name == "agrawal":
        t = agrawal_table(20_000, function=7, seed=3).drop(["class"])
    else:
        t = pq.read_table(dataset_path(name)).drop(["class"])
    cols = [c for c in t.column_names if c != target]
    X = np.column_stack([t.column(c).to_numpy().astype(np.float32) for c in cols])
    y = t.column(target).to_numpy().astype(np.float32).astype(np.float64)
    return X, y


CASES = [("magic", "FLength", 12, False), ("magic", "FLength", 10, True), ("letter", "x_box", 10, False),
         ("letter", "x_box", 8, True), ("agrawal", "loan", 10, False), ("agrawal", "loan", 8, True)]


@pytest.mark.parametrize("name,target,max_depth,weighted", CASES)
def test_exact_mode_is_sklearns_regression_tree(name, target, max_depth, weighted):
    X, y = regression_xy(name, target)
    w = np.random.default_rng(7).integers(1, 4, len(y)).astype(np.float64) if weighted else None
    reg = DecisionTreeRegressor(max_bins=None, max_depth=max_depth).fit(X, y, sample_weight=w)
    cmp = compare_with_sklearn(reg.tree_, X, y, criterion="squared_error", max_depth=max_depth,
                               estimator=SkRegressor, sample_weight=w)
    assert cmp.mismatches == []
    assert cmp.equal_nodes + cmp.ties == reg.tree_.node_count  # every node was compared
    sk = SkRegressor(max_depth=max_depth, random_state=0).fit(X, y, sample_weight=w)
    if cmp.ties == 0:  # the same tree: the same predictions, up to the last bits of the means
        np.testing.assert_allclose(reg.predict(X), sk.predict(X), rtol=1e-12, atol=1e-9)
    assert abs(reg.score(X, y, sample_weight=w) - sk.score(X, y, sample_weight=w)) < 1e-3


def test_stopping_rules_and_the_pruning_path_match_sklearn():
    X, y = regression_xy("magic", "FLength")
    params = dict(max_depth=8, min_samples_split=40, min_samples_leaf=7, min_impurity_decrease=1e-3)
    reg = DecisionTreeRegressor(max_bins=None, **params).fit(X, y)
    cmp = compare_with_sklearn(reg.tree_, X, y, criterion="squared_error", estimator=SkRegressor, **params)
    assert cmp.mismatches == [] and cmp.equal_nodes + cmp.ties == reg.tree_.node_count
    ours = DecisionTreeRegressor(max_bins=None, max_depth=5).cost_complexity_pruning_path(X, y)
    theirs = SkRegressor(max_depth=5, random_state=0).cost_complexity_pruning_path(X, y)
    np.testing.assert_allclose(ours["ccp_alphas"], theirs["ccp_alphas"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours["impurities"], theirs["impurities"], rtol=1e-9)
    alpha = float(theirs["ccp_alphas"][len(theirs["ccp_alphas"]) // 2])
    pruned = DecisionTreeRegressor(max_bins=None, max_depth=5, ccp_alpha=alpha).fit(X, y)
    assert pruned.get_n_leaves() == SkRegressor(max_depth=5, ccp_alpha=alpha, random_state=0).fit(X, y).get_n_leaves()


@pytest.fixture(scope="module")
def magic_regression(tmp_path_factory):
    """magic without its class, FLength the target, as an Arrow table and a Parquet folder of 3 files."""
    t = pq.read_table(dataset_path("magic")).drop(["class"])
    folder = tmp_path_factory.mktemp("magic_regression")
    for k, lo in enumerate(range(0, t.num_rows, 7000)):
        pq.write_table(t.slice(lo, 7000), folder / f"part-{k}.parquet")
    return t, folder


@pytest.mark.parametrize("max_bins", [255, None])
def test_every_source_and_algorithm_grows_the_same_regression_tree(magic_regression, max_bins):
    from rainforest.storage import DuckDBSource

    t, folder = magic_regression
    first = DecisionTreeRegressor(max_depth=7, max_bins=max_bins).fit(t, target="FLength")
    assert first.n_passes_ == 2  # the profile, then one read kept every row in memory
    X = np.column_stack([t.column(c).to_numpy() for c in t.column_names if c != "FLength"])
    assert DecisionTreeRegressor(max_depth=7, max_bins=max_bins).fit(
        X, t.column("FLength").to_numpy()).tree_.to_dict()["nodes"] == first.tree_.to_dict()["nodes"]
    others = [DecisionTreeRegressor(max_depth=7, max_bins=max_bins).fit(str(folder), target="FLength"),
              DecisionTreeRegressor(max_depth=7, max_bins=max_bins).fit(DuckDBSource(parquet=str(folder)),
                                                                        target="FLength")]
    budget = "4MB" if max_bins else "12MB"  # RF-Read needs one node's AVC-group over every distinct value
    others += [DecisionTreeRegressor(max_depth=7, max_bins=max_bins, algorithm=a, memory_budget=budget).fit(
        str(folder), target="FLength") for a in ("read", "write", "hybrid")]
    for other in others:
        assert other.tree_.to_json() == first.tree_.to_json()
    assert others[2].n_passes_ >= 8  # RF-Read: the profile, then a pass a level (more where 4 MB is short)
    assert others[3].n_passes_ < others[2].n_passes_  # RF-Write reads its spill instead


def test_a_large_mean_keeps_its_precision():
    """The rows hold the target less the middle of its range: a mean of 1e9 with a spread of about 1
    grows the tree of the target about 0, where sums of raw squares (about 1e18 each) would lose the
    spread entirely."""
    X, y = regression_xy("magic", "FLength")
    y = (y - y.mean()) / y.std()
    near_zero = DecisionTreeRegressor(max_bins=None, max_depth=6).fit(X, y)
    far = DecisionTreeRegressor(max_bins=None, max_depth=6).fit(X, y + 1e9)
    assert np.array_equal(far.tree_.feature, near_zero.tree_.feature)
    assert np.array_equal(far.tree_.threshold, near_zero.tree_.threshold)
    np.testing.assert_allclose(far.tree_.impurity, near_zero.tree_.impurity, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(far.predict(X) - 1e9, near_zero.predict(X), atol=1e-6)


def test_categorical_splits_order_categories_by_mean():
    """A categorical attribute splits into the categories whose mean target is below a cut and the rest."""
    rng = np.random.default_rng(0)
    means = {"a": 5.0, "b": -3.0, "c": 4.0, "d": -2.0, "e": 0.5}
    cats = rng.choice(list(means), 4000)
    y = np.array([means[c] for c in cats]) + rng.normal(scale=0.1, size=len(cats))
    t = pa.table({"color": cats, "noise": rng.normal(size=len(cats)), "y": y})
    reg = DecisionTreeRegressor(max_depth=1).fit(t, target="y")
    tree = reg.tree_
    assert tree.feature_names[tree.feature[0]] == "color"
    branch = dict(zip(tree.categories[0], tree.cat_branch[:len(tree.categories[0])]))
    assert {c for c, b in branch.items() if b == branch["a"]} == {"a", "c", "e"} or \
        {c for c, b in branch.items() if b == branch["a"]} == {"a", "c"}
    low = {c for c, b in branch.items() if b != branch["a"]}
    assert {"b", "d"} <= low
    # the cut that scores best: every split of the sorted means tried, the best kept
    order = sorted(means, key=means.get)
    def sse(group):
        v = y[np.isin(cats, list(group))]
        return ((v - v.mean()) ** 2).sum()
    best = min(range(1, 5), key=lambda k: sse(order[:k]) + sse(order[k:]))
    assert low == set(order[:best])


def test_model_file_text_and_sql(tmp_path, magic_regression):
    import duckdb

    t, folder = magic_regression
    reg = DecisionTreeRegressor(max_depth=5).fit(t, target="FLength")
    path = tmp_path / "reg.json"
    reg.save(path)
    back = rainforest.load(path)
    assert type(back) is DecisionTreeRegressor
    assert back.tree_.to_json() == reg.tree_.to_json()
    X = t.drop(["FLength"])
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))
    assert "|--- value: [" in reg.export_text()
    sql = reg.tree_.to_sql("duckdb")
    scored = duckdb.sql(f"SELECT {sql} AS p FROM read_parquet('{folder}/*.parquet')").fetchnumpy()["p"]
    np.testing.assert_allclose(np.sort(scored), np.sort(reg.predict(str(folder))), rtol=1e-15)
    with pytest.raises(ValueError, match="regression tree"):
        reg.tree_.to_sql("duckdb", "class")
    # a classifier's file is not a regressor's
    doc = path.read_text().replace('"estimator": "DecisionTreeRegressor"', '"estimator": "DecisionTreeClassifier"')
    (tmp_path / "bad.json").write_text(doc)
    with pytest.raises(rainforest.ModelError, match="regression"):
        rainforest.load(tmp_path / "bad.json")


def test_metrics_equal_sklearns():
    from sklearn import metrics

    rng = np.random.default_rng(3)
    y, p, w = rng.normal(size=500), rng.normal(size=500), rng.uniform(0, 2, 500)
    for ours, theirs in ((r2_score, metrics.r2_score), (mean_squared_error, metrics.mean_squared_error),
                         (mean_absolute_error, metrics.mean_absolute_error)):
        assert ours(y, p) == pytest.approx(theirs(y, p), rel=1e-12)
        assert ours(y, p, w) == pytest.approx(theirs(y, p, sample_weight=w), rel=1e-12)
    assert r2_score(np.ones(3), np.ones(3)) == metrics.r2_score(np.ones(3), np.ones(3))


def test_the_wrong_target_for_the_estimator_says_which_to_use(tmp_path):
    X = np.random.default_rng(0).normal(size=(100, 3))
    with pytest.raises(ValueError, match="DecisionTreeClassifier"):
        DecisionTreeRegressor().fit(X, np.array(["a", "b"] * 50))
    with pytest.raises(ValueError, match="DecisionTreeRegressor"):
        DecisionTreeClassifier().fit(X, X[:, 0])
    t = pa.table({"x": X[:, 0], "label": pa.array(["a", "b"] * 50)})
    pq.write_table(t, tmp_path / "t.parquet")
    with pytest.raises(DataError, match="'label'.*a regressor needs numbers"):
        DecisionTreeRegressor().fit(tmp_path / "t.parquet", target="label")
    for bad, said in ((np.inf, "infinite value"), (np.nan, "NaN values")):
        y = X[:, 1].copy()
        y[7] = bad
        pq.write_table(pa.table({"x": X[:, 0], "y": y}), tmp_path / "bad.parquet")
        with pytest.raises(DataError, match=f"'y'.*{said}"):
            DecisionTreeRegressor().fit(tmp_path / "bad.parquet", target="y")


def test_sklearn_tools_take_the_regressor():
    from sklearn.base import clone, is_regressor
    from sklearn.model_selection import GridSearchCV, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = regression_xy("magic", "FLength")
    X, y = X[:3000], y[:3000]
    reg = DecisionTreeRegressor(max_depth=4)
    assert is_regressor(reg) and not hasattr(clone(reg), "tree_")
    scores = cross_val_score(reg, X, y, cv=3)  # R², as a regressor's default score
    sk = cross_val_score(SkRegressor(max_depth=4, random_state=0), X, y, cv=3)
    assert np.all(np.abs(scores - sk) < 0.05)
    search = GridSearchCV(make_pipeline(StandardScaler(), reg), {"decisiontreeregressor__max_depth": [2, 5]}, cv=3)
    assert search.fit(X, y).best_params_["decisiontreeregressor__max_depth"] == 5


def test_exact_parts_give_the_same_tree_whatever_the_order_partitions_and_subtraction(magic_regression):
    """With unit weights a binned tree's cells add each target in exact parts (target_parts.py): a Dask
    DataFrame's partitions (summed apart, then merged), the rows in another order and a budget that
    changes which children are derived by subtraction all give the Parquet tree, JSON for JSON."""
    dd = pytest.importorskip("dask.dataframe")
    from rainforest.target_parts import target_grid

    t, folder = magic_regression
    ref = DecisionTreeRegressor(max_depth=8).fit(str(folder), target="FLength")
    frame = t.to_pandas()
    fits = {"dask, files": DecisionTreeRegressor(max_depth=8).fit(dd.read_parquet(str(folder)), target="FLength"),
            "dask, 7 partitions": DecisionTreeRegressor(max_depth=8).fit(dd.from_pandas(frame, npartitions=7),
                                                                         target="FLength"),
            "rows reversed": DecisionTreeRegressor(max_depth=8).fit(t.take(np.arange(t.num_rows)[::-1]),
                                                                    target="FLength"),
            "small budget": DecisionTreeRegressor(max_depth=8, memory_budget="300KB").fit(str(folder),
                                                                                        target="FLength")}
    for name, reg in fits.items():
        assert reg.tree_.to_json() == ref.tree_.to_json(), name
    # a split's largest child is its parent's cells less its siblings' (exact): its rows not counted;
    # with sample weights the sums are plain floats, and every node is counted
    assert ref.grow_stats_.subtracted_nodes > 20
    weighted = DecisionTreeRegressor(max_depth=8).fit(t, target="FLength", sample_weight=np.full(t.num_rows, 2.0))
    assert weighted.grow_stats_.subtracted_nodes == 0
    # the parts are exact: sums of every row's parts, in any order, are one float each
    y = t.column("FLength").to_numpy()
    shift = y.min() / 2 + y.max() / 2
    grid = target_grid(y.min(), y.max(), shift, len(y))
    v = y - shift
    hi = np.floor(v * grid[1]) * grid[0]
    lo = np.floor((v - hi) * grid[3]) * grid[2]
    rng = np.random.default_rng(0)
    for parts in (hi, lo):
        sums = {float(np.sum(rng.permutation(parts))) for _ in range(5)} | {float(np.cumsum(parts)[-1])}
        assert len(sums) == 1
    assert np.max(np.abs(v - hi - lo)) < grid[2] and grid[2] < 1e-12 * np.max(np.abs(v))


def test_target_grids_at_the_edges_of_float64():
    """A constant target gets grids (its parts are zero); a target whose square leaves float64 (or whose
    grid would be subnormal) gets none, and its tree adds plain floats as before."""
    from rainforest.target_parts import target_grid
    assert target_grid(7.0, 7.0, 7.0, 1000) is not None
    assert target_grid(-1e200, 1e200, 0.0, 1000) is None
    assert target_grid(-1e-300, 1e-300, 0.0, 1000) is None
    grid = target_grid(-3.0, 5.0, 1.0, 10_000_000)
    assert grid[0] == 2.0 ** (3 + 24 - 52) and grid[2] == 2.0 ** (3 + 48 - 104)  # |v| < 2**3, 24 bits of rows
    X = np.random.default_rng(0).normal(size=(500, 2))
    assert DecisionTreeRegressor(max_depth=3).fit(X, np.full(500, 7.0)).tree_.node_count == 1


def test_evaluate_scores_a_regressor_in_one_pass_over_any_source(magic_regression):
    """MSE, MAE and R² of one pass equal scikit-learn's on the rows held in memory, from a Parquet
    folder, DuckDB and Dask alike, weighted or not; a far-off mean (1e9) loses no precision in R²
    (the target's spread is merged as (weight, mean, M2), not as raw sums of squares); null targets
    are skipped and counted."""
    from sklearn import metrics

    from rainforest.metrics import evaluate
    from rainforest.storage import DuckDBSource

    t, folder = magic_regression
    reg = DecisionTreeRegressor(max_depth=6).fit(t, target="FLength")
    y, p = t.column("FLength").to_numpy().astype(np.float64), reg.predict(t)
    w = np.random.default_rng(2).uniform(0, 3, len(y))
    dd = pytest.importorskip("dask.dataframe")
    for data in (t, str(folder), DuckDBSource(parquet=str(folder)), dd.read_parquet(str(folder))):
        ev = evaluate(reg, data, target="FLength", batch_size=4000)
        assert ev.n_rows == len(y)
        assert ev.mse == pytest.approx(metrics.mean_squared_error(y, p), rel=1e-10)
        assert ev.mae == pytest.approx(metrics.mean_absolute_error(y, p), rel=1e-10)
        assert ev.r2 == pytest.approx(metrics.r2_score(y, p), rel=1e-10)
        assert ev.rmse == pytest.approx(np.sqrt(ev.mse))
    weighted = evaluate(reg, t.append_column("w", pa.array(w)), target="FLength", sample_weight="w", batch_size=999)
    assert weighted.r2 == pytest.approx(metrics.r2_score(y, p, sample_weight=w), rel=1e-10)
    assert weighted.mae == pytest.approx(metrics.mean_absolute_error(y, p, sample_weight=w), rel=1e-10)
    shifted = DecisionTreeRegressor(max_depth=6).fit(t.set_column(
        t.schema.get_field_index("FLength"), "FLength", pa.array(y + 1e9)), target="FLength")
    far = t.set_column(t.schema.get_field_index("FLength"), "FLength", pa.array(y + 1e9))
    ev = evaluate(shifted, far, target="FLength", batch_size=1000)
    assert ev.r2 == pytest.approx(metrics.r2_score(y + 1e9, shifted.predict(far)), abs=1e-6)
    assert ev.r2 == pytest.approx(reg.score(t, target="FLength"), abs=1e-4)
    holes = t.set_column(t.schema.get_field_index("FLength"), "FLength",
                         pa.array(np.where(np.arange(len(y)) % 10 == 0, np.nan, y), from_pandas=True))
    ev = evaluate(reg, holes, target="FLength")
    keep = np.arange(len(y)) % 10 != 0
    assert ev.n_missing_labels == (~keep).sum() and ev.n_rows == keep.sum()
    assert ev.r2 == pytest.approx(metrics.r2_score(y[keep], p[keep]), rel=1e-10)
    with pytest.raises(ValueError, match="classifiers"):
        evaluate(reg, t, target="FLength", threshold=0.5)


def test_passes_pushed_down_to_duckdb_grow_the_same_tree(magic_regression, tmp_path):
    """transfer="aggregates": the profile asks the database for the target's range (not a group per
    value), each level is one GROUP BY per node and slot of sums of the target less the profile's
    shift: with unit weights (binned) its exact parts (target_parts.py), which add alike in any order;
    otherwise (count, sum w, sum w y, sum w y y) in row order (DuckDB's parallel aggregation would add
    in no fixed order: those sums are ordered by the row identity).  The tree is the Parquet one, JSON
    for JSON, weighted or not, at every run; a NaN target is refused although DuckDB folds isnan() to
    false on a Parquet column whose statistics have no NaN."""
    from conftest import sql_statements

    from rainforest.storage import DuckDBSource

    t, folder = magic_regression
    w = np.random.default_rng(1).integers(0, 3, t.num_rows).astype(float)
    pq.write_table(t.append_column("w", pa.array(w)), tmp_path / "w.parquet")
    for data, weight in ((str(folder), None), (str(tmp_path / "w.parquet"), "w")):
        for max_bins in (255, None):
            ref = DecisionTreeRegressor(max_depth=7, max_bins=max_bins).fit(data, target="FLength",
                                                                              sample_weight=weight)
            source = DuckDBSource(parquet=data, transfer="aggregates")
            queries = sql_statements(source)
            inside = DecisionTreeRegressor(max_depth=7, max_bins=max_bins).fit(source, target="FLength",
                                                                                 sample_weight=weight)
            # the source twice (the profile; the root's pass, which encodes the rows into the fit's node table),
            # then one GROUP BY a level over that table
            assert inside.n_passes_ == 2 and len(queries) == 1 + 7
            assert inside.tree_.to_json() == ref.tree_.to_json()
            parts = weight is None and max_bins is not None
            assert all(("floor(" in q) == parts and ("ORDER BY" in q) != parts for q in queries[1:])
    y = t.column("FLength").to_numpy().copy()
    y[5] = np.nan
    pq.write_table(t.set_column(t.schema.get_field_index("FLength"), "FLength", pa.array(y)), tmp_path / "nan.parquet")
    with pytest.raises(DataError, match="'FLength'.*null, NaN or infinite"):
        DecisionTreeRegressor().fit(DuckDBSource(parquet=str(tmp_path / "nan.parquet"), transfer="aggregates"),
                                    target="FLength")


def test_a_decimal_target_is_regressed_as_its_float_values():
    """A warehouse's DECIMAL column (prices, amounts) is a number: the tree of its float64 values (as
    Arrow casts them)."""
    import decimal

    X, y = regression_xy("magic", "FLength")
    amounts = [decimal.Decimal(f"{v:.2f}") for v in y[:3000]]
    t = pa.table({"a": X[:3000, 0], "b": X[:3000, 1], "y": pa.array(amounts, pa.decimal128(12, 2))})
    as_decimal = DecisionTreeRegressor(max_depth=5).fit(t, target="y")
    floats = t.column("y").cast(pa.float64())  # Arrow's doubles of the decimals (not always the nearest)
    as_float = DecisionTreeRegressor(max_depth=5).fit(t.set_column(2, "y", floats), target="y")
    assert as_decimal.tree_.to_json() == as_float.tree_.to_json()
