"""Exact mode counts its wide numeric attributes in bins of ranks and gathers only the values of
candidate bins (rainforest/count_bins.py, rainforest/exact_gather.py): the same trees, JSON for
JSON, as counting one slot per distinct value, on every road the rows take (memory, the spill, the
data, a Dask store), with AVC-groups whose size no longer follows the distinct values."""
from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dataset_path
from rainforest import DecisionTreeClassifier, exact_gather, exact_search, grow, plan, tree_setup
from rainforest.errors import BudgetError
from rainforest.grow import GrowParams
from rainforest.storage import DaskSource, DuckDBSource, ParquetSource

# dask's own Parquet reader calls a pandas method pandas deprecates; not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning",
                                        "ignore:The inplace keyword:FutureWarning")


@pytest.fixture(autouse=True)
def _bins_at_any_size(monkeypatch):
    """These tests prove the bins on data small enough to run here, which rows kept in memory would
    otherwise count one slot per value (plan.SMALL_EXACT_ROWS; its own test below restores it)."""
    monkeypatch.setattr(plan, "SMALL_EXACT_ROWS", 0)


def test_small_data_kept_in_memory_counts_one_slot_per_value(monkeypatch):
    """Below plan.SMALL_EXACT_ROWS rows, when all of them fit the memory RF-Hybrid keeps them in,
    exact mode counts one slot per value (compact AVC-groups, faster there); when they do not fit, or
    past that size, in bins.  The same tree every way."""
    table = pq.read_table(dataset_path("magic"))
    binned = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    monkeypatch.setattr(plan, "SMALL_EXACT_ROWS", 1 << 19)
    small = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    spilled = DecisionTreeClassifier(max_bins=None, max_depth=8, memory_budget="1500KB").fit(table, target="class")
    assert binned.grow_stats_.binned_attributes > 0
    assert small.grow_stats_.binned_attributes == 0 and small.grow_stats_.candidate_reads == 0
    assert spilled.grow_stats_.binned_attributes > 0  # rows that do not fit in memory: bins
    assert small.tree_.to_json() == binned.tree_.to_json() == spilled.tree_.to_json()


def test_nodes_refined_a_chunk_at_a_time_give_the_same_tree(monkeypatch):
    """exact_gather.exact_splits refines a level's nodes in chunks of about REFINED_SLOTS slots: one
    node a chunk gives the tree of all at once."""
    table = pq.read_table(dataset_path("magic"))
    whole = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    calls = []
    refine = exact_gather.refine
    monkeypatch.setattr(exact_gather, "refine", lambda avc, *a: calls.append(len(avc)) or refine(avc, *a))
    monkeypatch.setattr(exact_gather, "REFINED_SLOTS", 1)
    chunked = DecisionTreeClassifier(max_bins=None, max_depth=8).fit(table, target="class")
    assert set(calls) == {1} and len(calls) > whole.get_depth()  # one node a chunk, several chunks a level
    assert chunked.tree_.to_json() == whole.tree_.to_json()


@pytest.mark.parametrize("budget", [None, "1500KB"])
def test_gathering_without_room_reads_a_node_at_a_time_for_the_same_tree(monkeypatch, budget):
    """The gathering's memory is bounded (exact_search.gather_groups): nodes whose candidate rows
    exceed the room are gathered in further reads of the level's rows, down to one node a read, and
    a node too large alone in runs of its bins (exact_search.node_runs). With no room at all
    (every node alone, each candidate bin a run with the bins beside near-winning boundaries), kept
    rows or spilled, the tree is the same; the reads are more, and the two sets of reads are counted."""
    table = pq.read_table(dataset_path("magic"))
    kw = dict(max_bins=None, max_depth=8) | ({"memory_budget": budget} if budget else {})
    roomy = DecisionTreeClassifier(**kw).fit(table, target="class")
    monkeypatch.setattr(exact_search, "gathering_room", lambda budget, spare: 0)  # room for nothing: a node a read
    cramped = DecisionTreeClassifier(**kw).fit(table, target="class")
    assert cramped.tree_.to_json() == roomy.tree_.to_json()
    assert roomy.grow_stats_.candidate_runs == 0 < cramped.grow_stats_.candidate_runs
    # every node in runs: a read each, or (rows this process reads, no dense bins to hold) one read for
    # a chunk's runs, scattered to scratch files
    runs, reads = cramped.grow_stats_.candidate_runs, cramped.grow_stats_.candidate_reads
    assert reads == runs if cramped.grow_stats_.gathering_bytes == 0 else reads < runs
    # the near bins are summed in each of their node's runs, every other candidate bin once
    assert cramped.grow_stats_.candidate_values >= roomy.grow_stats_.candidate_values
    if budget is None:  # room for all: a read a level; without: a read per node with candidate bins
        assert roomy.grow_stats_.candidate_reads <= cramped.get_depth()
        assert cramped.grow_stats_.candidate_reads > 3 * roomy.grow_stats_.candidate_reads
    else:  # 1.5 MB: the room (a quarter of it) already parts some levels' nodes, and chunks part them too
        assert cramped.grow_stats_.candidate_reads > roomy.grow_stats_.candidate_reads


def _one_slot_per_value(monkeypatch):
    """Growth as before issue 13: every numeric attribute counted one slot per distinct value."""
    monkeypatch.setattr(tree_setup, "GrowParams", functools.partial(GrowParams, exact_bins=0))


def _with_nulls(table: pa.Table, names, seed=1) -> pa.Table:
    rng = np.random.default_rng(seed)
    for name in names:
        col = table.column(name).to_numpy(zero_copy_only=False).astype(float)
        col[rng.random(len(col)) < 0.07] = np.nan
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(col, from_pandas=True))
    return table


CASES = {
    # name: (dataset, estimator parameters, fit keywords maker)
    "magic-gini-kept": ("magic", dict(max_depth=8), None),
    "magic-entropy-spilled": ("magic", dict(max_depth=8, criterion="entropy", memory_budget="1500KB"), None),
    "magic-gain-ratio-nulls": ("magic", dict(max_depth=9, criterion="gain_ratio"), "nulls"),
    # depth 5: the one slot per value fit takes 241 passes (449 at depth 6, a third of this file's time)
    "magic-vertical": ("magic", dict(max_depth=5, algorithm="vertical", memory_budget="1200KB"), None),
    "adult-whole-weights": ("adult_train", dict(max_depth=8, class_weight={"<=50K": 1, ">50K": 3}), "weights"),
    "adult-leaf-rules": ("adult_train", dict(max_depth=9, min_samples_leaf=20, min_impurity_decrease=1e-5), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bins_of_ranks_give_the_tree_of_one_slot_per_value(case, monkeypatch):
    dataset, params, extra = CASES[case]
    table = pq.read_table(dataset_path(dataset))
    fit = dict(target="class")
    if extra == "nulls":
        table = _with_nulls(table, table.column_names[:3])
    if extra == "weights":  # whole numbers: their sums are the same in any order
        table = table.append_column("w", pa.array(np.random.default_rng(2).integers(0, 4, table.num_rows)))
        fit["sample_weight"] = "w"
    binned = DecisionTreeClassifier(max_bins=None, **params).fit(table, **fit)
    with monkeypatch.context() as m:
        _one_slot_per_value(m)
        dense = DecisionTreeClassifier(max_bins=None, **params).fit(table, **fit)
    assert dense.grow_stats_.binned_attributes == 0
    stats = binned.grow_stats_
    assert stats.binned_attributes > 0 and stats.candidate_reads > 0
    assert binned.tree_.node_count > 50
    assert binned.tree_.to_json() == dense.tree_.to_json()
    # the candidate values are a small part of the values a slot per value counts
    n_values = table.num_rows * stats.binned_attributes * binned.get_depth()
    assert 0 < stats.candidate_values < n_values // 4
    if params.get("algorithm") == "vertical":  # every read a pass over the data: the count and the gathering
        assert dense.grow_stats_.attribute_groups > 1 and binned.grow_stats_.attribute_groups == 1
        assert binned.n_passes_ < dense.n_passes_  # two a level, where the groups take more
    else:  # the gathering reads memory or the spill, never the data
        assert binned.n_passes_ <= dense.n_passes_


def test_a_node_that_one_slot_per_value_cannot_hold(monkeypatch):
    """RF-Read with a budget whose AVC half cannot hold one node's slots per value: refused before,
    grown now, in bins of ranks, to the tree a roomy budget builds."""
    table = pq.read_table(dataset_path("magic"))
    roomy = DecisionTreeClassifier(max_bins=None, max_depth=5, algorithm="read").fit(table, target="class")
    tight = dict(max_bins=None, max_depth=5, algorithm="read", memory_budget="300KB")
    with monkeypatch.context() as m:
        _one_slot_per_value(m)
        with pytest.raises(BudgetError, match="memory budget too small"):
            DecisionTreeClassifier(**tight).fit(table, target="class")
    binned = DecisionTreeClassifier(**tight).fit(table, target="class")
    assert binned.grow_stats_.binned_attributes == 10 and roomy.grow_stats_.binned_attributes == 0
    assert binned.tree_.to_json() == roomy.tree_.to_json()


def test_fractional_weights_count_one_slot_per_value():
    """A bin's sum of fractional weights may differ in its last bit from the sum of its values' sums:
    exact mode then counts one slot per value, and the tree is RF-Read's, bit for bit."""
    table = pq.read_table(dataset_path("magic"))
    table = table.append_column("w", pa.array(np.random.default_rng(3).uniform(0.5, 2.0, table.num_rows)))
    params = dict(max_bins=None, max_depth=7)
    hybrid = DecisionTreeClassifier(**params).fit(table, target="class", sample_weight="w")
    read = DecisionTreeClassifier(algorithm="read", **params).fit(table, target="class", sample_weight="w")
    assert hybrid.grow_stats_.binned_attributes == 0
    assert hybrid.tree_.to_json() == read.tree_.to_json()
    balanced = DecisionTreeClassifier(class_weight="balanced", **params).fit(table, target="class")
    assert balanced.grow_stats_.binned_attributes == 0  # balanced class weights are fractions


def test_a_dask_store_gathers_where_the_partitions_are_kept(magic_files):
    """A Dask source keeps the encoded partitions (threaded scheduler): the candidate values are
    gathered from them, and the tree is the Parquet source's."""
    dd = pytest.importorskip("dask.dataframe")
    params = dict(max_bins=None, max_depth=6)
    want = DecisionTreeClassifier(**params).fit(ParquetSource(magic_files), target="class")
    got = DecisionTreeClassifier(**params).fit(DaskSource(dd.read_parquet(magic_files)), target="class")
    assert got.grow_stats_.binned_attributes > 0 and got.grow_stats_.candidate_reads > 0
    assert got.tree_.to_json() == want.tree_.to_json()
    assert got.n_passes_ == want.n_passes_


@pytest.mark.parametrize("transfer", ["rows", "aggregates"])
def test_duckdb(magic_files, transfer):
    """Rows streamed out of DuckDB are gathered like any; rows that stay in the database are counted
    one slot per value by its queries (gathering would stream them out).  Both give the Parquet tree."""
    params = dict(max_bins=None, max_depth=5)
    want = DecisionTreeClassifier(**params).fit(ParquetSource(magic_files), target="class")
    got = DecisionTreeClassifier(**params).fit(DuckDBSource(parquet=f"{magic_files}/*.parquet", transfer=transfer),
                                                target="class")
    assert (got.grow_stats_.binned_attributes > 0) == (transfer == "rows")
    assert got.tree_.to_json() == want.tree_.to_json()


def _heavy_value_table(n=40_000, seed=5) -> pa.Table:
    """A continuous column whose value 0 holds 60 % of the rows (as Agrawal's commission), beside a
    continuous one; the class depends on both."""
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(n) < 0.6, 0.0, rng.uniform(10, 100, n))
    z = rng.random(n)
    y = ((x > 0) ^ (z > 0.5)) | (rng.random(n) < 0.1)
    return pa.table({"x": x, "z": z, "class": y.astype(np.int64)})


def test_a_heavy_value_is_summed_as_rows_stream_by_not_picked(monkeypatch):
    """A candidate bin holding one value at its node (a heavy value's own bin) is summed while the
    gathering reads (rainforest/gather_kernels.py): its rows are never picked to be sorted, so the rows
    picked stay below the heavy value's rows.  Once a node's bin is seen to hold one value, its
    descendants take that bin's cell from their counts and no read gathers it again
    (exact_search.OneValueBins, settled_bins): the candidate bins read at later levels hold a
    fraction of the rows they hold when settling is disabled.  The tree is the one of a slot per
    value, settled or not."""
    table = _heavy_value_table()
    n_heavy = int(np.sum(table.column("x").to_numpy() == 0))
    plan = exact_search.gathering_plan

    def fit(gathered):
        def spy(avc, candidates, spans, n_classes, weighted, row_bytes, one_value=None):
            gathered.append(int((avc[..., :n_classes].sum(axis=-1) * candidates).sum()))
            return plan(avc, candidates, spans, n_classes, weighted, row_bytes, one_value)
        with monkeypatch.context() as m:
            m.setattr(exact_search, "gathering_plan", spy)
            return DecisionTreeClassifier(max_bins=None, max_depth=6).fit(table, target="class")

    read, read_unsettled = [], []
    got = fit(read)
    with monkeypatch.context() as m:
        m.setattr(exact_search, "settled_bins", lambda candidates, one_value, weighted: np.zeros_like(candidates))
        unsettled = fit(read_unsettled)
    with monkeypatch.context() as m:
        _one_slot_per_value(m)
        want = DecisionTreeClassifier(max_bins=None, max_depth=6).fit(table, target="class")
    assert got.tree_.to_json() == want.tree_.to_json() == unsettled.tree_.to_json()
    stats = got.grow_stats_
    assert read[0] > n_heavy  # the root reads the heavy value's bin (not one-valued there: it holds others)
    assert 0 < stats.candidate_rows < n_heavy // 2
    assert stats.settled_cells > 0 and unsettled.grow_stats_.settled_cells == 0
    assert sum(read_unsettled[3:]) > n_heavy // 2  # unsettled, deeper levels read its rows again
    assert sum(read[3:]) < sum(read_unsettled[3:]) // 4


def test_dense_cells_give_the_tree_of_picked_rows(monkeypatch):
    """Candidate cells dense enough are counted in place, a row of counts per rank
    (exact_search.gathering_plan); picking every cell's rows instead gives the same tree and cells."""
    table = _heavy_value_table(seed=6)
    table = table.set_column(0, "x", pa.array(np.round(table.column("x").to_numpy(), 1)))  # ranks, with ties
    dense_seen = []
    plan = exact_search.gathering_plan

    def spy(*args, **kw):
        cells, cost, values, dense = plan(*args, **kw)
        dense_seen.append(int(dense.sum()))
        return cells, cost, values, dense

    monkeypatch.setattr(exact_search, "gathering_plan", spy)
    counted = DecisionTreeClassifier(max_bins=None, max_depth=7).fit(table, target="class")
    assert sum(dense_seen) > 0
    def picking_every_cell(*args, **kw):
        cells, cost, values, dense = plan(*args, **kw)
        return cells, cost, values, np.zeros_like(dense)

    monkeypatch.setattr(exact_search, "gathering_plan", picking_every_cell)
    picked = DecisionTreeClassifier(max_bins=None, max_depth=7).fit(table, target="class")
    assert picked.tree_.to_json() == counted.tree_.to_json()
    assert picked.grow_stats_.candidate_values == counted.grow_stats_.candidate_values
    assert picked.grow_stats_.candidate_rows > counted.grow_stats_.candidate_rows


def test_exact_spill_is_rewritten_only_when_a_third_has_reached_leaves(monkeypatch):
    """Exact mode's bins read each spilled level twice (the count, the gathering); a level rewrites the
    spill only when a third of its rows have reached leaves (grow.spill_mostly_spent).  Rewriting at
    every level instead writes more and builds the same tree."""
    table = pq.read_table(dataset_path("magic"))
    kw = dict(max_bins=None, max_depth=8, memory_budget="1500KB")
    lean = DecisionTreeClassifier(**kw).fit(table, target="class")
    monkeypatch.setattr(grow, "spill_mostly_spent", lambda growing, spilled: True)
    every = DecisionTreeClassifier(**kw).fit(table, target="class")
    assert lean.tree_.to_json() == every.tree_.to_json()
    assert lean.grow_stats_.spill_reads > 0
    assert lean.grow_stats_.spill_bytes < every.grow_stats_.spill_bytes
