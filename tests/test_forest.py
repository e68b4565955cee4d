"""Random forests grown together: shared passes, the hashed bootstrap, identical forests on every
source, out-of-bag estimates, and accuracy beside scikit-learn's RandomForestClassifier."""
import json
import os
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path, numeric_xy
from rainforest import BudgetError, DecisionTreeClassifier, RandomForestClassifier, Tree, forest_grow, load
from rainforest.bootstrap import (bootstrap_counts, multiplicity_sql, node_features, poisson_thresholds,
                                  seed_keys, tree_seeds)
from rainforest.datasets import write_agrawal_parquet
from rainforest import forest_levels, in_bag
from rainforest.forest import bootstrap_block
from rainforest.in_bag import partition_spans
from rainforest.rowhash import row_hash_sql
from rainforest.storage import ParquetSource

dd = pytest.importorskip("dask.dataframe")

pytestmark = [
    # dask's own Parquet reader calls a pandas method pandas deprecates; not ours to fix
    pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning"),
    # small forests leave a few rows in every bootstrap (test_few_trees_warn_of_rows_without_estimate)
    pytest.mark.filterwarnings("ignore:some rows are in the bootstrap of every tree:UserWarning"),
]


N_AGRAWAL = 20_000


@pytest.fixture(scope="module")
def agrawal(tmp_path_factory):
    """Agrawal F7 in five Parquet files (the folder), 20,000 rows."""
    path = tmp_path_factory.mktemp("forest") / "train"
    write_agrawal_parquet(path, N_AGRAWAL, function=7, n_files=5, seed=3)
    return str(path)


def _split(name, frac=0.75, seed=0):
    X, y, _ = numeric_xy(name, np.float64)
    train = np.random.default_rng(seed).random(len(y)) < frac
    return X[train], y[train], X[~train], y[~train]


# -- the bootstrap ---------------------------------------------------------------------------------
def test_bootstrap_is_a_poisson_draw_from_the_row_hash():
    rows = np.arange(200_000)
    m = bootstrap_counts(rows, seed=12345)
    assert abs(m.mean() - 1.0) < 0.01 and abs(m.var() - 1.0) < 0.02  # Poisson(1)
    assert abs(np.mean(m == 0) - np.exp(-1)) < 0.005  # about 36.8 % of the rows are out of bag
    assert np.array_equal(m, bootstrap_counts(rows, seed=12345))
    assert not np.array_equal(m, bootstrap_counts(rows, seed=12346))
    # a row's draw depends on the row only: any slice of the rows gives the same draws
    assert np.array_equal(bootstrap_counts(rows[70_000:70_100], seed=12345), m[70_000:70_100])
    # the Numba kernel of the growth passes draws the same multiplicities
    out = np.empty(100_000, np.uint8)
    bootstrap_block(np.int64(50_000), *seed_keys(12345), poisson_thresholds(1.0), out)
    assert np.array_equal(out, m[50_000:150_000])
    half = bootstrap_counts(rows, seed=7, rate=0.5)
    assert abs(half.mean() - 0.5) < 0.01 and abs(np.mean(half == 0) - np.exp(-0.5)) < 0.005
    assert (bootstrap_counts(rows[:10], seed=7, rate=None) == 1).all()


def test_thresholds_are_exact_integers():
    t = poisson_thresholds(1.0)
    assert t.dtype == np.int64 and np.all(np.diff(t) > 0) and t[-1] < 2**63
    assert abs(int(t[0]) - np.exp(-1.0) * 2.0**63) < 2**12  # floor(e^-1 * 2^63), computed in decimals
    with pytest.raises(ValueError, match="rate"):
        poisson_thresholds(1.5)


def test_the_bootstrap_is_expressible_in_sql():
    duckdb = pytest.importorskip("duckdb")
    seed = 99
    steps = row_hash_sql("i", seed, lambda a, b: f"xor({a}, {b})", ("ha", "hb"))
    sql = "SELECT i FROM range(5000) t(i)"
    for name, expr in steps:
        sql = f"SELECT *, {expr} AS {name} FROM ({sql}) s"
    sql = f"SELECT i, {multiplicity_sql('hash', 1.0)} AS m FROM ({sql}) s ORDER BY i"
    got = duckdb.sql(sql).fetchnumpy()["m"]
    assert np.array_equal(got, bootstrap_counts(np.arange(5000), seed))


def test_tree_seeds_and_feature_draws_depend_only_on_their_keys():
    assert np.array_equal(tree_seeds(3, 0, 10)[5:], tree_seeds(3, 5, 10))
    draws = node_features(42, np.array([0, 1, 2, 3]), 9, 3)
    assert draws.shape == (4, 3) and all(len(set(r)) == 3 for r in draws.tolist())
    assert np.array_equal(node_features(42, np.array([2]), 9, 3)[0], draws[2])


# -- shared passes -----------------------------------------------------------------------------------
def test_fifty_trees_of_depth_eight_take_about_the_passes_of_one_tree(agrawal):
    source = ParquetSource(agrawal)
    clf = RandomForestClassifier(n_estimators=50, max_depth=8, random_state=0, oob_score=True,
                                 algorithm="read").fit(source, target="class")
    assert clf.n_passes_ <= 8 + 2  # not 50 x 8
    assert clf.n_passes_ == source.n_passes == 1 + 8 + 1  # profiling, one per level, out of bag
    assert clf.n_passes_per_level_ == [1] * 8
    assert clf.grow_stats_.jobs_per_level[0] == 50 and max(t.max_depth for t in clf.estimators_) == 8
    # RF-Hybrid: the encoded rows fit a quarter of the budget, so the first growth pass keeps them and
    # the other levels cost no pass (test_identical_forests_... shows it grows the same forest)
    hybrid = RandomForestClassifier(n_estimators=50, max_depth=8, random_state=0).fit(agrawal, target="class")
    assert hybrid.n_passes_ == 2 and hybrid.grow_stats_.kept_rows == N_AGRAWAL
    assert hybrid.n_passes_per_level_ == [1] + [0] * 7


def test_a_small_budget_takes_several_passes_per_level_for_the_same_forest(agrawal):
    params = dict(n_estimators=20, max_depth=6, random_state=1, algorithm="read")
    big = RandomForestClassifier(**params).fit(agrawal, target="class")
    small = RandomForestClassifier(memory_budget="2MB", **params).fit(agrawal, target="class")
    assert max(small.n_passes_per_level_) > 1 and small.n_passes_ > big.n_passes_
    assert small.to_json() == big.to_json()
    with pytest.raises(BudgetError, match="memory budget too small"):
        RandomForestClassifier(memory_budget="20kB", max_bins=None, **params).fit(agrawal, target="class")


# -- identical forests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, budget", [
    (dict(), "4MB"),
    (dict(max_bins=None, categorical_split="multiway", criterion="entropy"), "8MB"),
    (dict(class_weight="balanced"), "8MB"),
    (dict(bootstrap=False, max_features=0.5), "8MB"),
    (dict(max_samples=0.4, criterion="entropy"), "3MB"),
])
def test_trees_grown_in_memory_a_chunk_at_a_time_equal_the_forest_grown_by_passes(extra, budget):
    """RF-Hybrid copies each tree's in-bag rows and grows a chunk of trees at a time from them
    (rainforest/in_bag.py); the budget makes several chunks.  Categories with nulls, exact mode and
    multiway splits, weights (the record's last word) and other bootstraps grow the forest a pass
    per level grows, bit for bit, for any n_jobs."""
    table = pq.read_table(dataset_path("adult_train"))
    oob = extra.get("bootstrap", True)
    params = dict(n_estimators=6, max_depth=6, random_state=4, oob_score=oob, **extra)
    passes = RandomForestClassifier(algorithm="read", **params).fit(table, target="class")
    for n_jobs in (1, 2):
        chunked = RandomForestClassifier(memory_budget=budget, n_jobs=n_jobs, **params).fit(table, target="class")
        assert 1 <= chunked.grow_stats_.trees_grown_together < 6  # several chunks
        assert chunked.grow_stats_.kept_rows == table.num_rows
        # profiling, keeping the rows (the out-of-bag estimates read the kept rows)
        assert chunked.n_passes_ == 2 < passes.n_passes_
        assert chunked.to_json() == passes.to_json(), n_jobs
        if oob:
            assert chunked.oob_score_ == passes.oob_score_


@pytest.mark.parametrize("extra", [dict(), dict(class_weight="balanced", max_bins=None)])
def test_groups_cut_into_blocks_for_the_threads_grow_the_same_forest(extra, monkeypatch):
    """Threads share a large group's rows by blocks: each tree's draw (gather_in_bag) and each
    group's move (partition_spans, counted per block and branch, then scattered).  With blocks of
    100 rows nearly every group is cut, records of 2 words and of many (exact slots, weights) move
    through both paths, and the forest is still the one a pass per level grows."""
    table = pq.read_table(dataset_path("adult_train"))
    params = dict(n_estimators=5, max_depth=7, random_state=6, oob_score=True, **extra)
    passes = RandomForestClassifier(algorithm="read", **params).fit(table, target="class")
    monkeypatch.setattr(in_bag, "TASK_ROWS", 100)
    paths = set()

    def spy(*args):  # which groups are cut? (the kernel's block: at least TASKS_PER_THREAD per thread)
        spans, block, threads = args[6] - args[5], args[-2], args[-1]
        paths.update((spans > max(block, -(-int(spans.sum()) // (in_bag.TASKS_PER_THREAD * threads)))).tolist())
        return partition_spans(*args)
    monkeypatch.setattr(forest_levels, "partition_spans", spy)
    for n_jobs in (1, 2):
        paths.clear()
        chunked = RandomForestClassifier(memory_budget="8MB", n_jobs=n_jobs, **params).fit(table, target="class")
        assert chunked.grow_stats_.trees_grown_together >= 1 and paths == {True, False}  # cut and whole groups
        assert chunked.to_json() == passes.to_json(), n_jobs
        assert chunked.oob_score_ == passes.oob_score_


def test_kept_rows_without_room_for_copies_are_counted_from_the_roots():
    """When the kept rows fit but not even one tree's copy beside them, every level is counted over
    the kept rows from the roots: still no pass after the first, and the same forest."""
    table = pq.read_table(dataset_path("adult_train"))
    params = dict(n_estimators=4, max_depth=5, random_state=2, class_weight="balanced")
    passes = RandomForestClassifier(algorithm="read", **params).fit(table, target="class")
    kept = RandomForestClassifier(memory_budget="3500kB", **params).fit(table, target="class")
    assert kept.grow_stats_.kept_rows == table.num_rows and kept.grow_stats_.trees_grown_together == 0
    assert kept.n_passes_ == 2 and kept.n_passes_per_level_ == [1, 0, 0, 0, 0]
    assert kept.to_json() == passes.to_json()


@pytest.mark.parametrize("extra", [dict(oob_score=True), dict(class_weight="balanced", max_features=0.5),
                                   dict(memory_budget="200kB")])  # levels of several reads
def test_rows_that_do_not_fit_memory_are_spilled_once_and_read_from_there(extra, tmp_path, monkeypatch):
    """Adult's encoded rows (586 kB) do not fit a quarter of 2 MB: the first growth pass writes them
    to the spill folder in row order and every later level reads them there; the forest is the one
    a pass per level grows, the data is read twice (the out-of-bag estimates read the folder too),
    and the folder is gone after."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the forest's spill goes to the temporary folder
    table = pq.read_table(dataset_path("adult_train"))
    params = dict(n_estimators=4, max_depth=5, random_state=2, **{"memory_budget": "2MB", **extra})
    passes = RandomForestClassifier(algorithm="read", **params).fit(table, target="class")
    asked = []  # the disk check asks for what the spill will write (each column in its own type), no more
    room_for = forest_grow.room_for

    def asking(parent, n_bytes):
        asked.append(n_bytes)
        return room_for(parent, n_bytes)

    monkeypatch.setattr(forest_grow, "room_for", asking)
    spilled = RandomForestClassifier(**params).fit(table, target="class")
    if "memory_budget" in extra:
        assert passes.n_passes_ > 1 + 5  # some levels took several reads
    stats = spilled.grow_stats_
    assert stats.kept_rows == 0 and stats.trees_grown_together == 0
    assert spilled.n_passes_ == 2 and spilled.n_passes_per_level_[1:] == [0] * 4
    width = len(spilled.feature_names_in_)
    assert stats.spill_bytes == table.num_rows * (width + 1 + 2 + (8 if "class_weight" in extra else 0))  # node: 2 bytes
    assert asked == [stats.spill_bytes]
    assert stats.spill_reads == passes.n_passes_ - 2 - extra.get("oob_score", False)
    assert spilled.to_json() == passes.to_json()
    assert os.listdir(tmp_path) == []


def test_more_than_256_classes_grow_in_memory_too():
    """A class code past one byte widens the copied records (InBagCopies.layout)."""
    rng = np.random.default_rng(0)
    n, k = 6000, 300
    y = rng.integers(0, k, n)
    table = pa.table({"a": y * 1.0 + rng.normal(0, 20, n), "b": rng.integers(0, 9, n), "class": y.astype(str)})
    params = dict(n_estimators=3, max_depth=6, random_state=1)
    passes = RandomForestClassifier(algorithm="read", **params).fit(table, target="class")
    chunked = RandomForestClassifier(memory_budget="4MB", **params).fit(table, target="class")
    assert len(chunked.classes_) == k and chunked.grow_stats_.trees_grown_together >= 1
    assert chunked.to_json() == passes.to_json()


def test_identical_forests_across_n_jobs_batch_sizes_and_sources(agrawal):
    params = dict(n_estimators=10, max_depth=6, random_state=5, oob_score=True)
    ref = RandomForestClassifier(**params).fit(agrawal, target="class")
    text = ref.to_json()
    assert len(ref.estimators_) == 10 and all(isinstance(t, Tree) for t in ref.estimators_)
    table = pq.read_table(agrawal)
    fits = {
        "n_jobs=1": RandomForestClassifier(n_jobs=1, **params).fit(agrawal, target="class"),
        "n_jobs=2": RandomForestClassifier(n_jobs=2, **params).fit(agrawal, target="class"),
        "batch 777": RandomForestClassifier(batch_size=777, **params).fit(agrawal, target="class"),
        "batch 100000": RandomForestClassifier(batch_size=100_000, algorithm="read", **params).fit(
            agrawal, target="class"),
        "in-memory table": RandomForestClassifier(batch_size=4096, **params).fit(table, target="class"),
        "DataFrame and y": RandomForestClassifier(**params).fit(
            table.drop(["class"]).to_pandas(), table.column("class").to_pandas()),
        "read": RandomForestClassifier(algorithm="read", **params).fit(agrawal, target="class"),
        "dask": RandomForestClassifier(**params).fit(dd.read_parquet(agrawal), target="class"),
    }
    for name, clf in fits.items():
        assert clf.to_json() == text, name
        assert clf.oob_score_ == ref.oob_score_, name
        np.testing.assert_array_equal(clf.oob_decision_function_, ref.oob_decision_function_, err_msg=name)
    assert ref.n_passes_ == 2  # profiling, the level kept in memory (out of bag: from the kept rows)
    assert fits["read"].n_passes_ == 1 + 6 + 1  # profile, a pass a level, out of bag
    # on Dask the first growth pass keeps the encoded partitions on the workers, the levels count them
    # there; the out-of-bag pass reads the source
    assert fits["dask"].n_passes_ == 1 + 1 + 1


@pytest.mark.parametrize("transfer", ["rows", "aggregates"])
def test_identical_forests_from_duckdb(agrawal, transfer):
    pytest.importorskip("duckdb")
    from rainforest.storage import DuckDBSource

    params = dict(n_estimators=8, max_depth=5, random_state=2)
    ref = RandomForestClassifier(**params).fit(agrawal, target="class")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = RandomForestClassifier(**params).fit(DuckDBSource(parquet=agrawal, transfer=transfer), target="class")
    assert clf.to_json() == ref.to_json()
    # a forest's passes must see rows: pushing down, they stream out of the database, and it says so once
    streamed = [str(w.message) for w in caught if "stream out of the database" in str(w.message)]
    assert streamed == ([] if transfer == "rows" else [
        "transfer='aggregates': a pass of kind ForestPass cannot be said as one aggregate query, so the rows of "
        f"Parquet data {agrawal!r} read by DuckDB that it reads stream out of the database"])
    assert clf.n_passes_ == (ref.n_passes_ if transfer == "rows" else 1 + 5)  # aggregates: a query a level


@pytest.mark.parametrize("transfer", ["rows", "aggregates"])
def test_identical_forests_from_postgresql(agrawal, postgres_url, transfer):
    from conftest import load_script
    from rainforest.storage import PostgresSource

    load_script("postgres_server").load_table(postgres_url, "forest_agrawal", pq.read_table(agrawal), replace=True)
    params = dict(n_estimators=8, max_depth=5, random_state=2, oob_score=True)
    ref = RandomForestClassifier(**params).fit(agrawal, target="class")
    clf = RandomForestClassifier(**params).fit(PostgresSource(postgres_url, table="forest_agrawal", transfer=transfer),
                                               target="class")
    assert clf.to_json() == ref.to_json() and clf.oob_score_ == ref.oob_score_
    if transfer == "rows":  # one query: growth and the OOB pass read the fit's local copy of the rows
        assert ref.n_passes_ == 2 and clf.n_passes_ == 1
    else:  # rows stay in the database: one pass per level
        assert clf.n_passes_ == 1 + 5 + 1


def test_identical_forests_with_categories_missing_values_and_weights():
    table = pq.read_table(dataset_path("adult_train"))  # strings with nulls
    params = dict(n_estimators=10, max_depth=6, random_state=3, class_weight="balanced", oob_score=True)
    a = RandomForestClassifier(n_jobs=1, **params).fit(table, target="class")
    b = RandomForestClassifier(n_jobs=2, batch_size=3000, algorithm="read", **params).fit(
        dataset_path("adult_train"), target="class")
    assert a.to_json() == b.to_json() and a.oob_score_ == b.oob_score_
    kinds = a.estimators_[0].feature_kinds
    assert "categorical" in kinds and any(
        kinds[f] == "categorical" for t in a.estimators_ for f in t.feature[t.feature >= 0])


# -- out of bag -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["letter", "magic"])
def test_out_of_bag_score_agrees_with_held_out_score(name):
    X, y, Xt, yt = _split(name)
    clf = RandomForestClassifier(n_estimators=100, max_depth=16, random_state=0, oob_score=True).fit(X, y)
    held_out = clf.score(Xt, yt)
    print(f"{name}: out-of-bag {clf.oob_score_:.4f}, held-out {held_out:.4f}")
    assert abs(clf.oob_score_ - held_out) <= 0.015, (clf.oob_score_, held_out)
    assert clf.oob_decision_function_.shape == (len(y), len(clf.classes_))
    np.testing.assert_allclose(clf.oob_decision_function_.sum(axis=1), 1.0)


# -- against scikit-learn -------------------------------------------------------------------------------------
def _adult_numeric():
    """adult with categories as ordinal codes (nulls as NaN), so scikit-learn can train on it too."""
    train, test = pq.read_table(dataset_path("adult_train")), pq.read_table(dataset_path("adult_test"))
    cols = [c for c in train.column_names if c != "class"]

    def encode(t):
        out = []
        for c in cols:
            a = t.column(c)
            if pa.types.is_string(a.type) or pa.types.is_large_string(a.type):
                cats = sorted({v for v in train.column(c).to_pylist() if v is not None})
                index = {v: i for i, v in enumerate(cats)}
                out.append(np.array([np.nan if v is None else index.get(v, np.nan) for v in a.to_pylist()]))
            else:
                out.append(a.to_numpy(zero_copy_only=False).astype(np.float64))
        return np.column_stack(out).astype(np.float32)

    return (encode(train), train.column("class").to_numpy(zero_copy_only=False), encode(test),
            test.column("class").to_numpy(zero_copy_only=False))


@pytest.mark.parametrize("name", ["adult", "letter", "magic", "connect_4"])
def test_accuracy_within_one_point_of_scikit_learn(name):
    sklearn_ensemble = pytest.importorskip("sklearn.ensemble")
    X, y, Xt, yt = _adult_numeric() if name == "adult" else _split(name)
    X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    params = dict(n_estimators=40, max_features="sqrt", max_depth=14, bootstrap=True)
    ours = RandomForestClassifier(random_state=0, **params).fit(X, y).score(Xt, yt)
    theirs = sklearn_ensemble.RandomForestClassifier(random_state=0, n_jobs=2, **params).fit(X, y).score(Xt, yt)
    print(f"{name}: rainforest {ours:.4f}, scikit-learn {theirs:.4f}")
    assert abs(ours - theirs) <= 0.01, (ours, theirs)


# -- Forest-RC, warm start, persistence -------------------------------------------------------------------------
def test_forest_rc_beats_a_single_tree():
    X, y, Xt, yt = _split("magic")
    rc = RandomForestClassifier(n_estimators=25, combination="linear", n_combined=2, max_depth=12,
                                random_state=0).fit(X, y)
    tree = DecisionTreeClassifier(max_depth=12).fit(X, y)
    assert rc.score(Xt, yt) > tree.score(Xt, yt) + 0.01
    names = rc.estimators_[0].feature_names
    assert len(names) == X.shape[1] + 3 * X.shape[1] and names[-1].startswith("(")
    used = {f for t in rc.estimators_ for f in t.feature[t.feature >= 0]}
    assert min(used) >= X.shape[1]  # numeric attributes enter only through combinations
    imp = rc.feature_importances_
    assert imp.shape == (X.shape[1],) and abs(imp.sum() - 1.0) < 1e-12


def test_warm_start_grows_only_the_new_trees(agrawal):
    params = dict(max_depth=6, random_state=4)
    full = RandomForestClassifier(n_estimators=12, **params).fit(agrawal, target="class")
    warm = RandomForestClassifier(n_estimators=5, warm_start=True, **params).fit(agrawal, target="class")
    first = list(warm.estimators_)
    warm.set_params(n_estimators=12).fit(agrawal, target="class")
    assert warm.grow_stats_.jobs_per_level[0] == 7 and warm.estimators_[:5] == first
    assert warm.to_json() == full.to_json()
    with pytest.warns(UserWarning, match="no new tree"):
        warm.fit(agrawal, target="class")
    with pytest.raises(ValueError, match="n_estimators"):
        warm.set_params(n_estimators=3).fit(agrawal, target="class")


def test_save_and_load_round_trip(tmp_path):
    X, y, Xt, yt = _split("letter")
    for params in (dict(), dict(combination="linear", n_combined=3)):
        clf = RandomForestClassifier(n_estimators=8, max_depth=8, random_state=1, oob_score=True, **params).fit(X, y)
        path = tmp_path / "forest.json"
        clf.save(path)
        doc = json.loads(path.read_text())
        assert doc["format"] == "rainforest.model" and doc["forest"]["format"] == "rainforest.forest"
        back = load(path)
        assert isinstance(back, RandomForestClassifier) and back.to_json() == clf.to_json()
        np.testing.assert_array_equal(back.predict_proba(Xt), clf.predict_proba(Xt))
        np.testing.assert_array_equal(back.predict(Xt), clf.predict(Xt))
        assert back.oob_score_ == clf.oob_score_ and back.get_params() == clf.get_params()


def test_predict_proba_averages_the_trees_class_distributions(agrawal):
    clf = RandomForestClassifier(n_estimators=6, max_depth=5, random_state=8).fit(agrawal, target="class")
    table = pq.read_table(agrawal).slice(0, 2000)
    proba = clf.predict_proba(table)
    leaves = clf.apply(table)
    assert leaves.shape == (2000, 6)
    mean = np.mean([t.leaf_proba()[leaves[:, k]] for k, t in enumerate(clf.estimators_)], axis=0)
    np.testing.assert_allclose(proba, mean, rtol=0, atol=1e-15)
    assert np.array_equal(clf.predict(table), clf.classes_[np.argmax(proba, axis=1)])
    assert np.array_equal(clf.predict(agrawal)[:2000], clf.predict(table))
    imp = clf.feature_importances_
    per_tree = np.mean([t.feature_importances() for t in clf.estimators_], axis=0)
    np.testing.assert_allclose(imp, per_tree / per_tree.sum())
    lazy = clf.predict(dd.read_parquet(agrawal))  # a Dask DataFrame gives a lazy Dask collection
    assert np.array_equal(np.asarray(lazy.compute()), clf.predict(agrawal))


def test_bootstrap_options_shape_the_trees(agrawal):
    n = N_AGRAWAL
    whole = RandomForestClassifier(n_estimators=3, max_depth=2, bootstrap=False, random_state=0).fit(
        agrawal, target="class")
    assert all(t.n_node_samples[0] == n and t.weighted_n_node_samples[0] == n for t in whole.estimators_)
    tenth = RandomForestClassifier(n_estimators=3, max_depth=2, max_samples=0.1, random_state=0).fit(
        agrawal, target="class")
    assert all(abs(t.weighted_n_node_samples[0] - 0.1 * n) < 0.01 * n for t in tenth.estimators_)
    counted = RandomForestClassifier(n_estimators=3, max_depth=2, max_samples=n // 10, random_state=0).fit(
        agrawal, target="class")
    assert counted.to_json() == tenth.to_json()
    boot = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(agrawal, target="class")
    for t in boot.estimators_:  # distinct in-bag rows (about 63 %), counted with their multiplicities
        assert abs(t.n_node_samples[0] - (1 - np.exp(-1)) * n) < 0.01 * n
        assert abs(t.weighted_n_node_samples[0] - n) < 0.02 * n


def test_few_trees_warn_of_rows_without_estimate(agrawal):
    with pytest.warns(UserWarning, match="no out-of-bag estimate"):
        RandomForestClassifier(n_estimators=2, max_depth=2, oob_score=True, random_state=0).fit(agrawal, target="class")


@pytest.mark.parametrize("params, match", [
    (dict(n_estimators=0), "n_estimators"),
    (dict(max_features="half"), "max_features"),
    (dict(max_features=0.0), "max_features"),
    (dict(bootstrap=False, oob_score=True), "oob_score"),
    (dict(bootstrap=False, max_samples=0.5), "max_samples"),
    (dict(max_samples=1.5), "max_samples"),
    (dict(max_samples=10**9), "max_samples"),
    (dict(combination="quadratic"), "combination"),
    (dict(combination="linear", max_bins=None), "binned"),
    (dict(combination="linear", n_combined=99), "n_combined"),
    (dict(class_weight="balanced_subsample"), "balanced_subsample"),
    (dict(algorithm="write"), "algorithm"),
    (dict(criterion="mse"), "criterion"),
    (dict(random_state="x"), "random_state"),
])
def test_bad_parameters_are_named(agrawal, params, match):
    with pytest.raises(ValueError, match=match):
        RandomForestClassifier(**{"n_estimators": 2, "max_depth": 2, **params}).fit(agrawal, target="class")


def test_exact_mode_and_multiway_splits_grow_too():
    table = pq.read_table(dataset_path("buys_computer"))
    clf = RandomForestClassifier(n_estimators=5, max_bins=None, categorical_split="multiway", criterion="entropy",
                                 bootstrap=False, max_features=None, random_state=0).fit(table, target="class")
    single = DecisionTreeClassifier(max_bins=None, categorical_split="multiway", criterion="entropy").fit(
        table, target="class")
    # no bootstrap and every attribute at every node: each tree is the decision tree
    assert all(t.to_json() == single.tree_.to_json() for t in clf.estimators_)


def test_without_bootstrap_weighted_trees_are_the_decision_trees_to_the_last_bit():
    """Fractional class weights: the root's totals are summed over the slots of the attribute with the
    fewest (rainforest.plan.lead_of), in the forest as in the tree, so even their last bits agree."""
    table = pq.read_table(dataset_path("adult_train"))
    params = dict(max_depth=6, class_weight={"<=50K": 0.3, ">50K": 1.7})
    clf = RandomForestClassifier(n_estimators=2, bootstrap=False, max_features=None, **params).fit(
        table, target="class")
    single = DecisionTreeClassifier(**params).fit(table, target="class")
    assert all(t.to_json() == single.tree_.to_json() for t in clf.estimators_)


def test_ccp_alpha_prunes_every_tree_of_the_forest():
    """ccp_alpha prunes each grown tree as rainforest.pruning does (same seed: same grown trees),
    the out-of-bag score comes from the pruned trees, and the parameter survives save/load."""
    from rainforest.pruning import cost_complexity_prune

    X, y, _ = numeric_xy("magic")
    params = dict(n_estimators=8, max_depth=8, random_state=3, oob_score=True, max_bins=64)
    full = RandomForestClassifier(**params).fit(X, y)
    pruned = RandomForestClassifier(ccp_alpha=0.002, **params).fit(X, y)
    for a, b in zip(full.estimators_, pruned.estimators_):
        assert b.to_json() == cost_complexity_prune(a, 0.002).to_json()
    assert sum(t.node_count for t in pruned.estimators_) < sum(t.node_count for t in full.estimators_)
    assert not np.array_equal(pruned.oob_decision_function_, full.oob_decision_function_)
    with pytest.raises(ValueError, match="ccp_alpha"):
        RandomForestClassifier(ccp_alpha=-1.0).fit(X[:100], y[:100])


@pytest.mark.parametrize("name", ["adult_train", "letter"])  # categories and missing values; 26 classes
@pytest.mark.parametrize("max_bins", [255, None])
@pytest.mark.parametrize("weights", ["none", "positive", "some zero"])
def test_out_of_bag_estimates_from_the_kept_rows_are_the_pass(name, max_bins, weights):
    """RF-Hybrid keeps every encoded row; the out-of-bag estimates are then read from them, with no
    pass over the data, and equal the pass's (RF-Read's) to the last bit.  A row of weight 0 is
    not in the profile, so its slot does not say how the trees route it: then the pass is made."""
    table = pq.read_table(dataset_path(name))
    w = np.random.default_rng(4).integers(0 if weights == "some zero" else 1, 4, table.num_rows).astype(float)
    fit = dict(target="class", **({} if weights == "none" else {"sample_weight": w}))
    params = dict(n_estimators=6, max_depth=6, random_state=1, oob_score=True, max_bins=max_bins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # rows in every tree's bootstrap: 6 trees
        kept = RandomForestClassifier(**params).fit(table, **fit)
        read = RandomForestClassifier(algorithm="read", **params).fit(table, **fit)
    assert kept.to_json() == read.to_json()
    assert kept.oob_score_ == read.oob_score_
    np.testing.assert_array_equal(kept.oob_decision_function_, read.oob_decision_function_)
    assert kept.grow_stats_.kept_rows == table.num_rows
    assert kept.n_passes_ == (3 if weights == "some zero" else 2)  # the profile, the rows kept (, the OOB pass)


@pytest.mark.parametrize("name", ["adult_train", "magic"])
def test_forest_rc_out_of_bag_estimates_from_the_kept_rows_are_the_pass(name):
    """Forest-RC keeps its combinations' slots beside the features': each tree's out-of-bag votes are
    read from its own columns of the kept rows, equal to the pass's, with no pass."""
    table = pq.read_table(dataset_path(name))
    params = dict(n_estimators=6, max_depth=6, random_state=1, oob_score=True, combination="linear", n_combined=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        kept = RandomForestClassifier(**params).fit(table, target="class")
        read = RandomForestClassifier(algorithm="read", **params).fit(table, target="class")
    assert kept.to_json() == read.to_json() and kept.n_passes_ == 2
    assert kept.oob_score_ == read.oob_score_
    np.testing.assert_array_equal(kept.oob_decision_function_, read.oob_decision_function_)


@pytest.mark.parametrize("interrupt", [False, True])
def test_a_spilled_forest_reads_its_out_of_bag_rows_from_the_spill_folder(tmp_path, monkeypatch, interrupt):
    """Rows that do not fit memory are spilled by the first growth pass; the out-of-bag estimates read
    them there (2 passes, not 3), equal to the pass's, and the folder is gone after them, or after an
    interrupt during them."""
    import tempfile

    from rainforest import forest_estimator

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    table = pq.read_table(dataset_path("adult_train"))
    params = dict(n_estimators=6, max_depth=6, random_state=1, oob_score=True)
    read = RandomForestClassifier(algorithm="read", **params).fit(table, target="class")
    seen = []
    oob_from_rows = forest_estimator.oob_from_rows

    def watched(task, blocks, *args):
        seen.append([p.name for p in tmp_path.iterdir()])  # the spill folder, still there
        if interrupt:
            raise KeyboardInterrupt
        return oob_from_rows(task, blocks, *args)

    monkeypatch.setattr(forest_estimator, "oob_from_rows", watched)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if interrupt:
            with pytest.raises(KeyboardInterrupt):
                RandomForestClassifier(memory_budget="2MB", **params).fit(table, target="class")
        else:
            spilled = RandomForestClassifier(memory_budget="2MB", **params).fit(table, target="class")
            assert spilled.grow_stats_.kept_rows == 0 and spilled.grow_stats_.spill_bytes > 0
            assert spilled.n_passes_ == 2 and read.n_passes_ == 8
            assert spilled.to_json() == read.to_json() and spilled.oob_score_ == read.oob_score_
            np.testing.assert_array_equal(spilled.oob_decision_function_, read.oob_decision_function_)
    assert len(seen) == 1 and len(seen[0]) == 1 and seen[0][0].startswith("rainforest-")
    assert list(tmp_path.iterdir()) == []
