"""Exact mode without a table of distinct values (rainforest/value_keys.py): a numeric column with
more distinct values than tree_setup.KEY_CAP is profiled by a sample only, its rows hold each value's
key, and growth counts it in the keys' bins and gathers the candidate bins' keys.  The trees are the
ones counting a slot per distinct value builds, JSON for JSON, on every road the rows take."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path
from keyed_growth import count_one_slot_per_value, key_at_small_cap
from rainforest import DecisionTreeClassifier, DecisionTreeRegressor, RandomForestClassifier, plan, profile, value_keys
from rainforest.count_bins import (EXACT_BINS, LEVEL_NODES, MOST_KEY_BINS, counted_slot, counted_slots,
                                   key_bin_count)
from rainforest.profile import ProfileTask
from rainforest.schema import NUMERIC
from rainforest.storage import DaskSource, DuckDBSource, ParquetSource
from rainforest.value_keys import KEY_MISSING, key_bins, key_slots, keys_of, values_of

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning",
                                        "ignore:The inplace keyword:FutureWarning")

ODD_VALUES = np.array([-1e300, -3.5, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 1.0, 1.0000000000000002, 2.5,
                       75000.0, 1e300, np.finfo(np.float64).max, -np.finfo(np.float64).max])


def test_keys_sort_as_the_values_and_give_them_back():
    rng = np.random.default_rng(0)
    x = np.concatenate([ODD_VALUES, rng.normal(size=5000) * 10.0 ** rng.integers(-300, 300, 5000)])
    k = keys_of(x)
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(k[order]) >= 0)  # ordered as the values
    assert np.array_equal(np.diff(k[order]) == 0, np.diff(x[order]) == 0)  # equal keys exactly for equal values
    assert keys_of(np.array([-0.0]))[0] == keys_of(np.array([0.0]))[0]
    assert np.array_equal(values_of(k), x + 0.0)
    assert np.all(k < KEY_MISSING)
    out = np.empty(len(x) + 1, np.int64)
    key_slots(np.append(x, np.nan), out)  # the encoding kernel: the same keys, NaN missing
    assert np.array_equal(out[:-1], k) and out[-1] == KEY_MISSING
    ints = np.array([-7, 0, 3, 1 << 40], np.int64)  # integer columns are read in their own type
    out = np.empty(4, np.int64)
    key_slots(ints, out)
    assert np.array_equal(out, keys_of(ints.astype(np.float64)))


@pytest.mark.parametrize("sample", [
    np.random.default_rng(1).uniform(20000, 150000, 50000),
    np.where(np.random.default_rng(2).random(50000) < 0.4, 0.0, np.random.default_rng(3).uniform(1e4, 7.5e4, 50000)),
    np.concatenate([ODD_VALUES, np.random.default_rng(4).lognormal(0, 20, 20000)]),
    np.random.default_rng(6).standard_normal(50000) * 1000.0,  # values either side of zero
    np.full(100, 3.0), np.empty(0)])
def test_key_bins_are_ranges_of_values(sample):
    """Bins never interleave (a bin is a range of values, which the exact search needs), the kernel's
    bin is numpy's, and a continuous column gets bins of about equal rows, also one whose values
    cross zero (the keys between -1 and 1 left out of the ranges: else 231 bins of 1,024 asked)."""
    kb = key_bins(sample, 1024)
    rng = np.random.default_rng(5)
    x = np.sort(np.concatenate([sample, ODD_VALUES, rng.uniform(-1e6, 1e6, 2000)]))
    k = keys_of(x)
    b = kb.bins_of(k)
    assert np.all(np.diff(b) >= 0) and b.min() >= 0 and b.max() < kb.n_bins <= 1024
    table = kb.table
    kernel = [int(counted_slot(np.uint64(int(s) & (2 ** 64 - 1)), np.uint64(kb.shift), np.uint64(KEY_MISSING),
                               np.uint64(kb.n_bins), kb.kernel_base(), table)) for s in k[::97]]
    assert kernel == b[::97].tolist()
    if len(sample) > 5000 and len(np.unique(sample)) == len(sample):  # continuous: no heavy value
        assert np.bincount(kb.bins_of(keys_of(sample))).max() < 4 * len(sample) / kb.n_bins
        assert kb.n_bins > 500


def test_a_profile_keeps_no_more_distinct_values_than_its_cap():
    """Past ``key_cap`` distinct values a column keeps none (its held and pending values are dropped at
    once, so the profile's memory stays bounded) and gets key bins; a column with fewer keeps them."""
    rng = np.random.default_rng(6)
    task = ProfileTask({"x": NUMERIC, "few": NUMERIC}, "y", None, "test", exact=True, max_bins=0, key_cap=500,
                       sample_rows=1000)
    p = task.new_state()
    for b in range(10):
        batch = pa.record_batch({"x": rng.normal(size=300), "few": rng.integers(0, 50, 300).astype(float),
                                 "y": rng.integers(0, 2, 300)})
        p = task.update(p, batch, b * 300)
        held = p.columns["x"]
        assert (held.distinct is None and not held.pending) == (b >= 1)  # 600 values: past the cap
        assert held.distinct is None or len(held.distinct) + sum(map(len, held.pending)) <= 600
    schema = task.schema(p)
    x, few = schema.attributes
    assert x.keys is not None and few.keys is None and len(few.cuts) == 50
    assert x.n_slots == KEY_MISSING and counted_slots(schema).keyed.tolist() == [True, False]


def test_more_rows_are_counted_in_more_key_bins_as_the_budget_allows():
    """Bins grow as the square root of the rows, in powers of two from EXACT_BINS to MOST_KEY_BINS, and
    never past what lets a level's AVC-groups of LEVEL_NODES nodes fit a quarter of the budget."""
    counts = [key_bin_count(n) for n in (1000, 10_000_000, 20_000_000, 100_000_000, 10 ** 9, 10 ** 12)]
    assert counts == sorted(counts) and counts[0] == counts[1] == EXACT_BINS and counts[-1] == MOST_KEY_BINS
    assert all(c & (c - 1) == 0 for c in counts) and counts[2] == 2 * EXACT_BINS and counts[3] == 4096
    keyed, other, channels = 4, 150, 2
    for budget in (2 ** 30, 2 ** 29, 2 ** 28, 2 ** 22):
        room = budget // 4
        bins = key_bin_count(10 ** 9, budget, keyed, other, channels)
        fits = LEVEL_NODES * 8 * channels * (keyed * (bins + 1) + other) <= room
        assert bins == EXACT_BINS or fits
        assert bins == MOST_KEY_BINS or bins == EXACT_BINS \
            or LEVEL_NODES * 8 * channels * (keyed * (2 * bins + 1) + other) > room  # the largest that fits
    assert [key_bin_count(10 ** 9, b, keyed, other, channels) for b in (2 ** 30, 2 ** 29, 2 ** 28)] == \
        [4096, 2048, 1024]


def test_a_profile_of_many_rows_gives_a_tree_more_key_bins():
    """The profile picks the keyed columns' bins from the rows it counted (a tree's, given its budget:
    ``key_budget``; BOAT's too); without it (a forest's) they stay EXACT_BINS."""
    rng = np.random.default_rng(8)
    batch = pa.record_batch({"x": rng.uniform(0, 1000, 20_000), "y": rng.integers(0, 2, 20_000)})
    bins = {}
    for budget in (None, 2 ** 30):
        task = ProfileTask({"x": NUMERIC}, "y", None, "test", exact=True, max_bins=0, key_cap=500,
                           sample_rows=20_000, key_budget=budget)
        p = task.update(task.new_state(), batch, 0)
        p.n_rows = 100_000_000  # as if it had counted them: the sample is what the bins are cut from
        bins[budget] = task.schema(p).attributes[0].keys.n_bins
    assert bins[None] <= EXACT_BINS < 2 * EXACT_BINS < bins[2 ** 30] <= 4096


def test_more_key_bins_gather_fewer_rows_for_the_same_tree(monkeypatch):
    """Where the bins fall decides only what is gathered: a tree whose keyed columns are counted in
    4,096 bins is the tree of 1,024, from fewer candidate rows."""
    monkeypatch.setattr(plan, "SMALL_EXACT_ROWS", 0)
    key_at_small_cap(monkeypatch)
    table = pq.read_table(dataset_path("magic"))
    got = {}
    for n_bins in (EXACT_BINS, 4 * EXACT_BINS):
        with monkeypatch.context() as m:
            m.setattr(profile, "key_bin_count", lambda *a, n=n_bins: n)
            got[n_bins] = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    few, many = got[EXACT_BINS], got[4 * EXACT_BINS]
    assert many.tree_.to_json() == few.tree_.to_json() and few.tree_.node_count > 50
    assert 0 < many.grow_stats_.candidate_rows < few.grow_stats_.candidate_rows



def test_a_column_crossing_zero_gathers_few_rows_for_the_same_tree(monkeypatch):
    """A keyed column whose values cross zero, with its bins' ranges closed over the keys between -1
    and 1 (value_keys.widest_gap), gathers far fewer rows than with ranges spread over them, for
    the same tree."""
    monkeypatch.setattr(plan, "SMALL_EXACT_ROWS", 0)
    key_at_small_cap(monkeypatch, cap=1000)
    rng = np.random.default_rng(21)
    n = 60_000
    x, z = rng.standard_normal(n) * 1e3, rng.standard_normal(n)
    y = ((x > 150.0) ^ (z < -0.3) ^ (rng.random(n) < 0.1)).astype(np.int64)
    table = pa.table({"x": x, "z": z, "class": y})
    closed = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    monkeypatch.setattr(value_keys, "widest_gap", lambda u: (0, 0))
    spread = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    assert closed.tree_.to_json() == spread.tree_.to_json() and closed.tree_.node_count > 50
    assert 0 < 3 * closed.grow_stats_.candidate_rows < spread.grow_stats_.candidate_rows


CASES = {
    "magic-gini-kept": ("magic", dict(max_depth=8), None),
    "magic-entropy-spilled": ("magic", dict(max_depth=8, criterion="entropy", memory_budget="1500KB"), None),
    "magic-gain-ratio-nulls": ("magic", dict(max_depth=9, criterion="gain_ratio"), "nulls"),
    "adult-leaf-rules": ("adult_train", dict(max_depth=9, min_samples_leaf=20, min_impurity_decrease=1e-5), None),
    "adult-write": ("adult_train", dict(max_depth=7, algorithm="write", memory_budget="2MB"), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_keyed_columns_give_the_tree_of_one_slot_per_value(case, monkeypatch):
    monkeypatch.setattr(plan, "SMALL_EXACT_ROWS", 0)
    dataset, params, extra = CASES[case]
    table = pq.read_table(dataset_path(dataset))
    if extra == "nulls":
        rng = np.random.default_rng(1)
        for name in table.column_names[:3]:
            col = table.column(name).to_numpy(zero_copy_only=False).astype(float)
            col[rng.random(len(col)) < 0.07] = np.nan
            table = table.set_column(table.schema.get_field_index(name), name, pa.array(col, from_pandas=True))
    with monkeypatch.context() as m:
        count_one_slot_per_value(m)
        dense = DecisionTreeClassifier(max_bins=None, **params).fit(table, target="class")
    with monkeypatch.context() as m:
        calls = key_at_small_cap(m)
        keyed = DecisionTreeClassifier(max_bins=None, **params).fit(table, target="class")
    assert calls and keyed.grow_stats_.binned_attributes > 0 and keyed.grow_stats_.candidate_reads > 0
    assert keyed.tree_.node_count > 50
    assert keyed.tree_.to_json() == dense.tree_.to_json()
    assert keyed.n_passes_ <= dense.n_passes_
    if "memory_budget" in params:
        assert keyed.grow_stats_.spill_reads > 0  # the spill's narrowed columns widened back to keys


def test_unique_floats_at_a_budget_below_their_distinct_values(monkeypatch):
    """A column of as many distinct values as rows, at a budget far below its distinct values x 8
    bytes: keyed at the default cap's scale (here a cap of 1,000), grown in bins, and the tree is the
    one a roomy budget counting a slot per value builds."""
    rng = np.random.default_rng(7)
    n = 120_000
    x = rng.standard_normal(n) * 1e3
    z = rng.uniform(0, 1, n)
    y = ((x > 150.0) ^ (z < 0.3) ^ (rng.random(n) < 0.1)).astype(np.int64)
    table = pa.table({"x": x, "z": z, "class": y})
    with monkeypatch.context() as m:
        count_one_slot_per_value(m)
        want = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    with monkeypatch.context() as m:
        calls = key_at_small_cap(m, cap=1000)
        got = DecisionTreeClassifier(max_bins=None, max_depth=8, memory_budget="700KB").fit(table, target="class")
    assert 700_000 < n * 8 and calls  # the budget: less than the distinct values of one column
    assert got.grow_stats_.spill_reads > 0
    assert got.tree_.to_json() == want.tree_.to_json()


def test_weights_and_regressors_keep_their_distinct_values(monkeypatch):
    """Keys serve the fits counted in bins (a tree's, a forest's: rainforest/forest_exact.py): where a
    slot per value is counted (fractional weights, class weights, a regressor, a forest reading its
    source each level), the profile keeps every value."""
    calls = key_at_small_cap(monkeypatch)
    table = pq.read_table(dataset_path("magic"))
    DecisionTreeClassifier(max_bins=None, max_depth=4, class_weight="balanced").fit(table, target="class")
    DecisionTreeClassifier(max_bins=None, max_depth=4, algorithm="read").fit(table, target="class")
    RandomForestClassifier(n_estimators=3, max_bins=None, max_depth=3, algorithm="read").fit(table, target="class")
    DecisionTreeRegressor(max_bins=None, max_depth=4).fit(table.drop_columns(["class"]), target="FLength")
    assert not calls
    DecisionTreeClassifier(max_bins=None, max_depth=4).fit(table, target="class")
    assert calls
    calls.clear()
    forest = RandomForestClassifier(n_estimators=3, max_bins=None, max_depth=3).fit(table, target="class")
    assert calls and forest.grow_stats_.candidate_reads > 0


def test_dask_and_duckdb_sources_key_as_parquet_does(magic_files, monkeypatch):
    """A Dask store (threaded scheduler) and rows streamed out of DuckDB: the keyed Parquet tree."""
    dd = pytest.importorskip("dask.dataframe")
    params = dict(max_bins=None, max_depth=6)
    with monkeypatch.context() as m:
        count_one_slot_per_value(m)
        want = DecisionTreeClassifier(**params).fit(ParquetSource(magic_files), target="class")
    calls = key_at_small_cap(monkeypatch)
    parquet = DecisionTreeClassifier(**params).fit(ParquetSource(magic_files), target="class")
    dask = DecisionTreeClassifier(**params).fit(DaskSource(dd.read_parquet(magic_files)), target="class")
    duck = DecisionTreeClassifier(**params).fit(DuckDBSource(parquet=f"{magic_files}/*.parquet", transfer="rows"),
                                                target="class")
    assert calls
    for got in (parquet, dask, duck):
        assert got.grow_stats_.binned_attributes > 0
        assert got.tree_.to_json() == want.tree_.to_json()
