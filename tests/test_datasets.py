"""Tests of the Agrawal synthetic data generator (rainforest.datasets)."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from rainforest.datasets import (
    AGRAWAL_COLUMNS,
    AgrawalSource,
    agrawal_label,
    agrawal_schema,
    agrawal_table,
    iter_agrawal_batches,
    write_agrawal_parquet,
)

FEATURES = AGRAWAL_COLUMNS[:-1]


def _columns(table):
    return {name: table.column(name).to_numpy() for name in AGRAWAL_COLUMNS}


def _relabel(function, cols):
    return agrawal_label(function, *[cols[name] for name in FEATURES])


@pytest.fixture(scope="module")
def perturbed():
    return _columns(agrawal_table(50_000, function=1, seed=11, perturbation=0.05))


@pytest.fixture(scope="module")
def unperturbed():
    return _columns(agrawal_table(50_000, function=1, seed=11, perturbation=0.0))


def test_schema_and_columns():
    t = agrawal_table(10, seed=0)
    assert tuple(t.column_names) == AGRAWAL_COLUMNS
    assert t.schema.equals(agrawal_schema())
    schema = agrawal_schema()
    assert schema.field("class").type == pa.int8()
    for name in ("salary", "commission", "hvalue", "loan"):
        assert schema.field(name).type == pa.float64()
    for name in ("age", "elevel", "car", "zipcode", "hyears"):
        assert schema.field(name).type == pa.int32()


@pytest.mark.parametrize("function", range(1, 11))
def test_unperturbed_labels_match_function(function):
    cols = _columns(agrawal_table(20_000, function=function, seed=5, perturbation=0.0))
    np.testing.assert_array_equal(cols["class"], _relabel(function, cols))
    assert set(np.unique(cols["class"]).tolist()) == {0, 1}


def _check_ranges(cols):
    assert cols["salary"].min() >= 20_000 and cols["salary"].max() <= 150_000
    c = cols["commission"]
    assert np.all((c == 0) | ((c >= 10_000) & (c <= 75_000)))
    for name, lo, hi in (("age", 20, 80), ("elevel", 0, 4), ("car", 1, 20),
                         ("zipcode", 0, 8), ("hyears", 1, 30)):
        assert cols[name].dtype == np.int32
        assert cols[name].min() == lo and cols[name].max() == hi, name
    span = (9 - cols["zipcode"]) * 100_000.0
    assert np.all(cols["hvalue"] >= 0.5 * span) and np.all(cols["hvalue"] <= 1.5 * span)
    assert cols["loan"].min() >= 0 and cols["loan"].max() <= 500_000
    assert set(np.unique(cols["class"]).tolist()) <= {0, 1}


def test_ranges_unperturbed(unperturbed):
    _check_ranges(unperturbed)
    c, s = unperturbed["commission"], unperturbed["salary"]
    np.testing.assert_array_equal(c == 0, s >= 75_000)


def test_ranges_perturbed(perturbed, unperturbed):
    _check_ranges(perturbed)
    # perturbation really moves the perturbed columns, and only those
    for name in ("salary", "age", "hvalue", "hyears", "loan"):
        assert np.mean(perturbed[name] != unperturbed[name]) > 0.5, name
    for name in ("elevel", "car", "zipcode"):
        np.testing.assert_array_equal(perturbed[name], unperturbed[name])
    # commission is perturbed only where positive, and stays zero elsewhere
    pos = unperturbed["commission"] > 0
    np.testing.assert_array_equal(perturbed["commission"] > 0, pos)
    assert np.mean(perturbed["commission"][pos] != unperturbed["commission"][pos]) > 0.5
    # shifts are at most p * range
    assert np.max(np.abs(perturbed["salary"] - unperturbed["salary"])) <= 0.05 * 130_000 + 1e-6
    assert np.max(np.abs(perturbed["age"] - unperturbed["age"])) <= 3
    # labels are those of the unperturbed values
    np.testing.assert_array_equal(perturbed["class"], unperturbed["class"])


@pytest.mark.parametrize("function", [1, 7])
def test_perturbation_flips_some_labels_but_not_most(function):
    cols = _columns(agrawal_table(50_000, function=function, seed=2, perturbation=0.05))
    differ = np.mean(cols["class"] != _relabel(function, cols))
    # measured: about 4.9% for F1 and 3.1% for F7
    assert 0.01 < differ < 0.10


def test_f1_class_balance():
    cols = _columns(agrawal_table(100_000, function=1, seed=0, perturbation=0.0))
    assert abs(np.mean(cols["class"] == 0) - 41 / 61) < 0.01


def test_label_known_values():
    # young, salary in band -> group A for F2; old with salary out of band -> not A
    lab = agrawal_label(2, [60_000, 100_000], [10_000, 0], [30, 70], [0, 0], [1, 1], [0, 0],
                        [900_000, 900_000], [1, 1], [0, 0])
    np.testing.assert_array_equal(lab, np.array([0, 1], dtype=np.int8))
    # F10: equity counts only from 20 years on
    common = dict(salary=[20_000, 20_000], commission=[10_000, 10_000], age=[30, 30],
                  elevel=[4, 4], car=[1, 1], zipcode=[0, 0], hvalue=[900_000, 900_000],
                  loan=[0, 0])
    lab = agrawal_label(10, hyears=[19, 30], **common)
    np.testing.assert_array_equal(lab, np.array([1, 0], dtype=np.int8))


def test_determinism_and_seed():
    a = agrawal_table(5_000, function=3, seed=7)
    b = agrawal_table(5_000, function=3, seed=7)
    c = agrawal_table(5_000, function=3, seed=8)
    assert a.equals(b)
    assert not a.equals(c)
    assert not np.array_equal(a.column("salary").to_numpy(), c.column("salary").to_numpy())


def test_start_is_slice_of_longer_table():
    long = agrawal_table(250_000, function=5, seed=1)
    for start, n in ((0, 10), (99_990, 30), (123_456, 100_000), (199_999, 50_001)):
        assert agrawal_table(n, function=5, seed=1, start=start).equals(long.slice(start, n))
    # each 100,000-row block has its own stream: blocks do not repeat
    assert not long.slice(0, 1_000).equals(long.slice(100_000, 1_000))
    # and the function is part of the seed
    assert not np.array_equal(agrawal_table(1_000, function=1, seed=1).column("salary").to_numpy(),
                              agrawal_table(1_000, function=2, seed=1).column("salary").to_numpy())


def test_batches_independent_of_chunking():
    whole = agrawal_table(230_000, function=9, seed=4, start=17)
    batches = list(iter_agrawal_batches(230_000, function=9, seed=4, batch_rows=33_333, start=17))
    assert [b.num_rows for b in batches[:-1]] == [33_333] * (len(batches) - 1)
    assert pa.Table.from_batches(batches).equals(whole)


def _read_parts(paths):
    return pa.concat_tables([pq.read_table(p) for p in sorted(paths)])


def test_parquet_layout_independent(tmp_path):
    one = write_agrawal_parquet(tmp_path / "one", 120_001, function=6, n_files=1, seed=3,
                                row_group_size=50_000)
    seven = write_agrawal_parquet(tmp_path / "seven", 120_001, function=6, n_files=7, seed=3)
    assert [os.path.basename(p) for p in seven] == [f"part-{i:05d}.parquet" for i in range(7)]
    assert sorted(os.listdir(tmp_path / "seven")) == [os.path.basename(p) for p in seven]
    sizes = [pq.ParquetFile(p).metadata.num_rows for p in seven]
    assert sum(sizes) == 120_001 and max(sizes) - min(sizes) <= 1
    assert pq.ParquetFile(one[0]).metadata.num_row_groups == 3
    t1, t7 = _read_parts(one), _read_parts(seven)
    assert t1.num_rows == 120_001
    assert t1.equals(t7)
    assert t1.equals(agrawal_table(120_001, function=6, seed=3))
    via_dataset = ds.dataset(str(tmp_path / "seven"), format="parquet").to_table()
    assert via_dataset.num_rows == 120_001
    assert via_dataset.equals(t7)


def test_parquet_start(tmp_path):
    paths = write_agrawal_parquet(tmp_path / "d", 1_000, n_files=3, seed=2, start=500)
    assert _read_parts(paths).equals(agrawal_table(1_000, seed=2, start=500))


def test_parquet_refuses_existing_parts(tmp_path):
    out = tmp_path / "data"
    write_agrawal_parquet(out, 100, n_files=2)
    with pytest.raises(FileExistsError, match="data"):
        write_agrawal_parquet(out, 100, n_files=2)


@pytest.mark.parametrize("kwargs, culprit", [
    (dict(function=0), "function"),
    (dict(function=11), "11"),
    (dict(n_rows=0), "n_rows"),
    (dict(n_files=0), "n_files"),
    (dict(n_files=101), "n_files"),
    (dict(perturbation=-0.1), "perturbation"),
    (dict(perturbation=1.5), "perturbation"),
])
def test_bad_arguments(tmp_path, kwargs, culprit):
    args = dict(n_rows=100, function=1, n_files=2, perturbation=0.05)
    args.update(kwargs)
    with pytest.raises(ValueError, match=culprit):
        write_agrawal_parquet(tmp_path / "bad", **args)
    assert not list((tmp_path).glob("bad/part-*.parquet"))


def test_bad_arguments_of_table():
    with pytest.raises(ValueError, match="function"):
        agrawal_table(10, function=11)
    with pytest.raises(ValueError, match="function"):
        agrawal_label(0, [1.0], [0.0], [30], [0], [1], [0], [1.0], [1], [0.0])
    with pytest.raises(ValueError, match="perturbation"):
        agrawal_table(10, perturbation=2)
    with pytest.raises(ValueError, match="batch_rows"):
        list(iter_agrawal_batches(10, batch_rows=0))


@pytest.mark.parametrize("max_bins", [255, None])
def test_generated_source_fits_the_files_tree(tmp_path, max_bins):
    """AgrawalSource generates, at each pass, the rows the Parquet files hold (from row 1,000 on,
    across generation blocks): the same tree, exact and binned, the same passes; a budget that
    spills the encoded rows reads them from the spill, not by generating again."""
    from rainforest import DecisionTreeClassifier

    write_agrawal_parquet(tmp_path / "f", 230_000, function=7, n_files=3, seed=4, start=1_000)
    source = AgrawalSource(230_000, function=7, seed=4, start=1_000)
    params = dict(max_depth=6, max_bins=max_bins, memory_budget="4MB")
    files = DecisionTreeClassifier(**params).fit(str(tmp_path / "f"), target="class")
    generated = DecisionTreeClassifier(**params).fit(source, target="class")
    assert generated.tree_.to_json() == files.tree_.to_json()
    assert generated.n_passes_ == files.n_passes_ == 2 == source.n_passes
    assert generated.grow_stats_.spill_bytes > 0  # the 4 MB budget spilled: later levels read the spill
    assert "Agrawal F7 rows 1,000 to 230,999 (seed 4)" == source.description


def test_generated_source_bad_arguments():
    for kwargs, culprit in ((dict(n_rows=0), "n_rows"), (dict(n_rows=5, function=0), "function"),
                            (dict(n_rows=5, perturbation=2), "perturbation"), (dict(n_rows=5, start=-1), "start")):
        with pytest.raises(ValueError, match=culprit):
            AgrawalSource(**kwargs)
