"""Out-of-core invariance and pass counts: the tree depends on the data, not on how it is read."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path
from rainforest import DecisionTreeClassifier
from rainforest.datasets import agrawal_table
from rainforest.storage import ParquetSource


def _write_parts(table: pa.Table, folder, n_files: int) -> str:
    folder.mkdir()
    bounds = np.linspace(0, table.num_rows, n_files + 1).astype(int)
    for k in range(n_files):
        pq.write_table(table.slice(bounds[k], bounds[k + 1] - bounds[k]), folder / f"part-{k:03d}.parquet")
    return str(folder)


@pytest.fixture(scope="module")
def agrawal(tmp_path_factory):
    table = agrawal_table(30_000, function=7, seed=11)
    base = tmp_path_factory.mktemp("agrawal")
    return {"table": table, "one": _write_parts(table, base / "one", 1), "fifty": _write_parts(table, base / "fifty", 50)}


@pytest.mark.parametrize("max_bins", [None, 64])
def test_same_tree_for_any_batch_size_and_file_count(agrawal, max_bins):
    params = dict(max_bins=max_bins, max_depth=8, sample_size=5000)
    trees = {
        (files, batch): DecisionTreeClassifier(batch_size=batch, **params).fit(agrawal[files], target="class")
        .tree_.to_json()
        for files in ("one", "fifty") for batch in (1000, 1_000_000)
    }
    in_memory = DecisionTreeClassifier(batch_size=777, **params).fit(agrawal["table"], target="class").tree_.to_json()
    assert len(set(trees.values()) | {in_memory}) == 1
    assert '"first_child"' in in_memory and len(in_memory) > 1000


def test_same_tree_on_strings_and_nulls_for_any_layout(tmp_path):
    table = pq.read_table(dataset_path("adult_train"))
    one = _write_parts(table, tmp_path / "one", 1)
    many = _write_parts(table, tmp_path / "many", 13)
    a = DecisionTreeClassifier(max_depth=6, batch_size=1000).fit(one, target="class").tree_.to_json()
    b = DecisionTreeClassifier(max_depth=6, batch_size=1 << 20).fit(many, target="class").tree_.to_json()
    assert a == b


def test_passes_per_level_when_the_level_fits(agrawal):
    for depth in (1, 4, 8):
        clf = DecisionTreeClassifier(max_depth=depth, max_bins=64, algorithm="read")
        clf.fit(agrawal["fifty"], target="class")
        assert clf.get_depth() == depth
        assert clf.n_passes_ - 1 <= depth + 1  # besides the profiling pass
        assert clf.n_passes_per_level_ == [1] * depth


def test_tiny_budget_takes_more_passes_for_the_identical_tree(agrawal):
    params = dict(max_depth=8, max_bins=64, algorithm="read")
    roomy = DecisionTreeClassifier(memory_budget="1GB", **params).fit(agrawal["one"], target="class")
    tight = DecisionTreeClassifier(memory_budget="150KB", **params).fit(agrawal["one"], target="class")
    assert tight.n_passes_ > roomy.n_passes_ + 5
    assert max(tight.n_passes_per_level_) > 1
    assert tight.tree_.to_json() == roomy.tree_.to_json()


def test_a_pass_is_counted_by_the_source(agrawal):
    source = ParquetSource(agrawal["fifty"])
    clf = DecisionTreeClassifier(max_depth=3, max_bins=32, algorithm="read").fit(source, target="class")
    assert source.n_passes == clf.n_passes_ == 1 + 3
    clf.predict(source)
    assert source.n_passes == 5


def test_threads_do_not_change_the_tree(agrawal):
    one = DecisionTreeClassifier(max_depth=8, n_jobs=1).fit(agrawal["one"], target="class").tree_.to_json()
    two = DecisionTreeClassifier(max_depth=8, n_jobs=2).fit(agrawal["one"], target="class").tree_.to_json()
    assert one == two


def test_predict_from_parquet_equals_predict_in_memory(agrawal):
    clf = DecisionTreeClassifier(max_depth=8).fit(agrawal["fifty"], target="class")
    X = agrawal["table"].drop_columns(["class"])
    np.testing.assert_array_equal(clf.predict(agrawal["fifty"]), clf.predict(X))
    np.testing.assert_allclose(clf.predict_proba(agrawal["fifty"]), clf.predict_proba(X.to_pandas()))
    assert clf.score(agrawal["fifty"], target="class") > 0.95


# the tight budget: too small to hold a level's families in one pass (multiway's are the larger: at
# 500KB its sixth level took 51 passes, 11 s)
@pytest.mark.parametrize("categorical_split, tight_budget", [("binary", "500KB"), ("multiway", "4MB")],
                         ids=["binary", "multiway"])
def test_sibling_subtraction_gives_the_counted_tree(categorical_split, tight_budget):
    # unit weights switch the subtraction off (weighted rows are always counted): same tree
    table = pq.read_table(dataset_path("adult_train"))
    params = dict(max_depth=6, categorical_split=categorical_split)
    derived = DecisionTreeClassifier(**params).fit(table, target="class")
    counted = DecisionTreeClassifier(**params).fit(table.append_column("w", pa.array(np.ones(table.num_rows))),
                                                   target="class", sample_weight="w")
    assert derived.tree_.to_json() == counted.tree_.to_json()
    # a budget too small to hold a level's families in one pass (RF-Read: every level from the
    # data) still gives the same tree
    tight = DecisionTreeClassifier(memory_budget=tight_budget, algorithm="read", **params).fit(table, target="class")
    assert tight.tree_.to_json() == derived.tree_.to_json() and max(tight.n_passes_per_level_) > 1


@pytest.mark.parametrize("max_bins", [None, 64])
def test_hybrid_grows_the_read_tree_in_fewer_passes(agrawal, max_bins):
    params = dict(max_depth=12, max_bins=max_bins, sample_size=5000)
    read = DecisionTreeClassifier(algorithm="read", **params).fit(agrawal["fifty"], target="class")
    # the whole data fits the hybrid share: one data pass pulls it in, the rest is in memory
    hybrid = DecisionTreeClassifier(algorithm="hybrid", **params).fit(agrawal["fifty"], target="class")
    assert hybrid.tree_.to_json() == read.tree_.to_json()
    assert read.n_passes_ >= 1 + read.get_depth() and read.get_depth() == 12  # exact mode: levels may need 2+
    assert hybrid.n_passes_ == 2 and hybrid.n_passes_per_level_ == [1] + [0] * 11


def test_one_log_line_per_pass_with_rows_per_second(agrawal, capsys, caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="rainforest"):
        read = DecisionTreeClassifier(max_depth=4, algorithm="read", verbose=1).fit(agrawal["fifty"], target="class")
    lines = [r.getMessage() for r in caplog.records if "rows/s" in r.getMessage()]
    assert len(lines) == read.n_passes_ - 1  # one per growth pass (the profiling pass is not a level)
    assert all("30,000 rows" in line and "over the data" in line for line in lines)
    assert capsys.readouterr().out.count("rows/s") == len(lines)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rainforest"):
        DecisionTreeClassifier(max_depth=4).fit(agrawal["fifty"], target="class")
    where = [r.getMessage().split(",")[1].strip() for r in caplog.records if "rows/s" in r.getMessage()]
    assert where == ["pass 2 over the data"] + ["rows kept in memory"] * 3
