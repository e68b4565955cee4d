"""RF-Read, RF-Vertical, RF-Write and RF-Hybrid: the same tree, fewer passes, no spill left behind."""
import functools
import io
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rainforest import DecisionTreeClassifier, plan
from rainforest import rows as rows_module
from rainforest import spill as spill_module
from rainforest import tree_setup
from rainforest.datasets import agrawal_table
from rainforest.grow import GrowParams, PassMeter
from rainforest.storage import TableSource


@pytest.fixture(scope="module")
def table():
    return agrawal_table(20_000, function=2, seed=5)


# Budgets that make each algorithm do its own thing on 20,000 rows (9 attributes):
# binned, one node's AVC-group takes 6.2 KB; exact, 1.2 MB (salary, hvalue and loan are continuous).
# Half of the budget holds AVC-groups, a quarter rows kept in memory (encoded: 11 bytes each).
CASES = {
    "binned": dict(max_bins=64, max_depth=9, roomy="64MB", vertical="8KB", tight="200KB", hybrid="2MB"),
    "exact": dict(max_bins=None, max_depth=6, roomy="64MB", vertical="1200KB", tight="1200KB", hybrid="3MB"),
}


@pytest.mark.parametrize("mode", ["binned", "exact"])
def test_every_algorithm_builds_the_identical_tree(table, tmp_path, mode):
    case = CASES[mode]
    params = dict(max_bins=case["max_bins"], max_depth=case["max_depth"], spill_dir=str(tmp_path))

    def fit(algorithm, budget, **more):
        return DecisionTreeClassifier(algorithm=algorithm, memory_budget=budget, **params, **more).fit(
            table, target="class")

    read = fit("read", case["roomy"])
    vertical = fit("vertical", case["vertical"])
    write = fit("write", case["tight"])
    hybrid = fit("hybrid", case["hybrid"])
    hybrid_two_threads = fit("hybrid", case["hybrid"], n_jobs=2)
    hybrid_one_thread = fit("hybrid", case["hybrid"], n_jobs=1)
    want = read.tree_.to_json()
    assert read.get_depth() == case["max_depth"] and read.tree_.node_count > 50
    for other in (vertical, write, hybrid, hybrid_two_threads, hybrid_one_thread):
        assert other.tree_.to_json() == want
    # each one really took its own road
    assert read.grow_stats_.attribute_groups == 1 and read.grow_stats_.spill_reads == 0
    assert vertical.grow_stats_.spill_reads == 0
    if mode == "binned":
        assert vertical.grow_stats_.attribute_groups > 1
    else:  # one slot per value does not fit: wide attributes in bins of ranks, a gathering read a level
        assert vertical.grow_stats_.attribute_groups == 1 and vertical.grow_stats_.binned_attributes > 0
        assert vertical.grow_stats_.candidate_reads > 0 and write.grow_stats_.binned_attributes > 0
        assert read.grow_stats_.binned_attributes == 0  # it fits: one pass a level, one slot per value
    assert write.grow_stats_.spill_reads > 0 and write.grow_stats_.spill_bytes > 0
    assert write.grow_stats_.kept_rows == 0
    assert hybrid.grow_stats_.kept_rows > 0
    # RF-Write reads the data at most once per level, RF-Read several times on its tightest levels
    tight_read = fit("read" if mode == "binned" else "vertical", case["tight"])
    assert tight_read.tree_.to_json() == want
    assert max(tight_read.n_passes_per_level_) > 1 and max(write.n_passes_per_level_) == 1
    assert write.n_passes_ < tight_read.n_passes_
    assert os.listdir(tmp_path) == []  # every spill folder removed after its fit


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_rows_kept_grouped_by_node_move_down_in_blocks_to_the_read_tree(datasets, monkeypatch, n_jobs):
    """RF-Hybrid keeps rows grouped by node and moves them a level down by blocks of rows that
    threads share.  With 50-row blocks (nearly every group is cut), multiway categorical splits,
    nulls, sample and class weights and a pull below the root (several groups at once), the tree
    is RF-Read's."""
    monkeypatch.setattr(rows_module, "REGROUP_ROWS", 50)
    seen = []
    regroup = rows_module.KeptRows.regroup

    def spy(self, routing, n_children, alive):
        seen.append((len(self.nodes), int(np.max(self.ends - self.starts, initial=0))))
        return regroup(self, routing, n_children, alive)

    monkeypatch.setattr(rows_module.KeptRows, "regroup", spy)
    params = dict(max_depth=8, max_bins=32, categorical_split="multiway", class_weight="balanced", n_jobs=n_jobs)
    data = pq.read_table(datasets("adult_train"))
    data = data.append_column("w", pa.array(np.random.default_rng(0).uniform(0.5, 2.0, data.num_rows)))
    fit = dict(target="class", sample_weight="w")  # weights of many values: sums depend on their order
    read = DecisionTreeClassifier(algorithm="read", **params).fit(data, **fit)
    assert not seen
    root = DecisionTreeClassifier(algorithm="hybrid", **params).fit(data, **fit)
    assert root.grow_stats_.kept_rows == 32_561 and root.n_passes_ == 2
    assert root.tree_.to_json() == read.tree_.to_json()
    assert seen[0] == (1, 32_561)  # the root's rows, cut into blocks
    seen.clear()
    deep = DecisionTreeClassifier(algorithm="hybrid", memory_budget="2MB", **params).fit(data, **fit)
    # the rows that did not fit were spilled by the first growth pass; those pulled later came from there
    assert 0 < deep.grow_stats_.kept_rows < 32_561 and deep.n_passes_ == 2 < read.n_passes_
    assert deep.grow_stats_.spill_reads > 0
    assert deep.tree_.to_json() == read.tree_.to_json()
    assert seen[0][0] > 1 and seen[0][1] > 50  # pulled below the root: several groups, cut into blocks


def test_kept_rows_note_their_branch_in_the_narrowest_type_that_holds_it(monkeypatch):
    """A kept row's branch takes one byte whatever its slots' type (8 bytes where a column is keyed),
    two where a multiway split has more than 256 children; the tree is RF-Read's either way."""
    assert [rows_module.branch_dtype(n) for n in (2, 256, 257, 65_536, 65_537)] == \
        [np.uint8, np.uint8, np.uint16, np.uint16, np.uint32]
    rng = np.random.default_rng(0)
    n = 30_000
    code = rng.integers(0, 300, n)
    data = pa.table({"city": pa.array([f"c{c}" for c in code]), "x": rng.normal(size=n),
                     "class": (code % 3 == 0) ^ (rng.random(n) < 0.1)})
    seen = []
    regroup = rows_module.KeptRows.regroup

    def spy(self, routing, n_children, alive):
        regroup(self, routing, n_children, alive)
        seen.append((int(n_children.max(initial=0)), self.branch.dtype))

    monkeypatch.setattr(rows_module.KeptRows, "regroup", spy)
    for split, children, branch in (("multiway", 300, np.uint16), ("binary", 2, np.uint8)):
        params = dict(max_depth=3, categorical_split=split, max_bins=None)
        read = DecisionTreeClassifier(algorithm="read", **params).fit(data, target="class")
        seen.clear()
        kept = DecisionTreeClassifier(algorithm="hybrid", **params).fit(data, target="class")
        assert kept.tree_.to_json() == read.tree_.to_json() and kept.grow_stats_.kept_rows == n
        assert kept.tree_.n_children[0] == children  # the root splits the city (into its 300 values)
        assert seen == [(children, branch)] * 3  # a regrouping a level


def _spy_compact(monkeypatch) -> list:
    """Record the number of nodes of every compact search (rainforest/compact.py)."""
    from rainforest import grow as grow_module

    calls = []
    real = grow_module.compact_splits
    monkeypatch.setattr(grow_module, "compact_splits", lambda kept, pos, n, *a: calls.append(n) or real(kept, pos, n, *a))
    return calls


@pytest.mark.parametrize("case", ["weighted-multiway", "gini-binary"])
def test_exact_nodes_from_kept_rows(datasets, monkeypatch, case):
    """In exact mode, nodes counted from kept rows give RF-Read's tree, bit for bit: with nulls in wide
    and narrow numeric columns, categorical splits (binary subsets and multiway), sample and class
    weights, entropy, one thread or all.  Rows this few, kept in memory, are counted one slot per
    value, each node's AVC-group over the slots its own rows hold (rainforest/compact.py), its
    weights added in the same order as RF-Read's.  Without fractional weights, past
    plan.SMALL_EXACT_ROWS rows, the wide column (``fnlwgt``) is counted in bins of ranks and its
    candidate bins' values gathered (rainforest/exact_gather.py): the same tree."""
    calls = _spy_compact(monkeypatch)
    data = pq.read_table(datasets("adult_train"))
    rng = np.random.default_rng(4)
    for name in ("fnlwgt", "capital_gain", "age"):
        col = data.column(name).to_numpy(zero_copy_only=False).astype(float)
        col[rng.random(len(col)) < 0.05] = np.nan
        data = data.set_column(data.schema.get_field_index(name), name, pa.array(col, from_pandas=True))
    fit = dict(target="class")
    params = dict(max_bins=None, max_depth=7)
    fractional = case == "weighted-multiway"
    if fractional:
        data = data.append_column("w", pa.array(rng.uniform(0.5, 2.0, data.num_rows)))
        fit["sample_weight"] = "w"
        params.update(criterion="entropy", categorical_split="multiway", class_weight="balanced", n_jobs=1)
    read = DecisionTreeClassifier(algorithm="read", **params).fit(data, **fit)
    assert not calls and read.grow_stats_.binned_attributes == 0  # one node's slots fit: one pass a level
    hybrid = DecisionTreeClassifier(algorithm="hybrid", **params).fit(data, **fit)
    stats = hybrid.grow_stats_
    assert calls and max(calls) > 1 and stats.binned_attributes == 0  # several nodes at once, compact
    assert hybrid.tree_.to_json() == read.tree_.to_json()
    assert hybrid.n_passes_ == 2
    if not fractional:  # counted in bins as past plan.SMALL_EXACT_ROWS rows: the same tree
        calls.clear()
        monkeypatch.setattr(plan, "SMALL_EXACT_ROWS", 0)
        binned = DecisionTreeClassifier(algorithm="hybrid", **params).fit(data, **fit)
        assert not calls and binned.grow_stats_.binned_attributes == 1 and binned.grow_stats_.candidate_reads > 0
        assert binned.tree_.to_json() == read.tree_.to_json() and binned.n_passes_ == 2


def test_compact_search_below_rf_vertical_passes(table, monkeypatch):
    """One slot per value (as with fractional weights): a budget whose data passes count the attributes
    in groups (RF-Vertical) and keep some families: those are searched compactly over all attributes at
    once, and the tree is RF-Read's."""
    monkeypatch.setattr(tree_setup, "GrowParams", functools.partial(GrowParams, exact_bins=0))
    calls = _spy_compact(monkeypatch)
    read = DecisionTreeClassifier(algorithm="read", max_bins=None, max_depth=8, memory_budget="64MB")
    read.fit(table, target="class")
    hybrid = DecisionTreeClassifier(algorithm="hybrid", max_bins=None, max_depth=8, memory_budget="1500KB")
    hybrid.fit(table, target="class")
    assert hybrid.grow_stats_.attribute_groups > 1 and hybrid.grow_stats_.kept_rows > 0 and calls
    assert hybrid.tree_.to_json() == read.tree_.to_json()


@pytest.mark.parametrize("class_weight, budget", [(None, "1MB"), ("balanced", "1500KB")])
def test_spilled_nodes_that_fit_are_loaded_and_counted_in_memory(monkeypatch, class_weight, budget):
    """Exact mode, a budget that spills (RF-Write) and counts attributes in groups (RF-Vertical): nodes
    whose rows fit the room for kept rows are loaded from the spill, several to a read, and searched
    compactly.  The tree is RF-Read's, with a small part of RF-Write's spill reads; it is also when
    the loads are counted in the reverse order (the model is numbered breadth-first).  One slot per
    value, as fractional weights count (balanced class weights are; without, it is asked for)."""
    from rainforest import grow as grow_module

    monkeypatch.setattr(tree_setup, "GrowParams", functools.partial(GrowParams, exact_bins=0))
    table = agrawal_table(20_000, function=7, seed=3, perturbation=0.05)
    params = dict(max_bins=None, max_depth=8, class_weight=class_weight)
    read = DecisionTreeClassifier(algorithm="read", memory_budget="64MB", **params).fit(table, target="class")
    write = DecisionTreeClassifier(algorithm="write", memory_budget=budget, **params).fit(table, target="class")
    loads = []
    real_load = grow_module.RowSupply.load
    monkeypatch.setattr(grow_module.RowSupply, "load", lambda self, nodes, *a: loads.append(len(nodes))
                        or real_load(self, nodes, *a))
    hybrid = DecisionTreeClassifier(algorithm="hybrid", memory_budget=budget, **params).fit(table, target="class")
    assert hybrid.grow_stats_.attribute_groups > 1 and hybrid.grow_stats_.spill_bytes > 0 and max(loads) > 1
    assert hybrid.tree_.to_json() == read.tree_.to_json() == write.tree_.to_json()
    assert hybrid.grow_stats_.spill_reads * 10 < write.grow_stats_.spill_reads
    real_loads = grow_module.spilled_loads
    monkeypatch.setattr(grow_module, "spilled_loads", lambda *a: (lambda rest, packs: (rest, packs[::-1]))(
        *real_loads(*a)))
    loads.clear()
    reverse = DecisionTreeClassifier(algorithm="hybrid", memory_budget=budget, **params).fit(table, target="class")
    assert len(loads) > 1 and reverse.tree_.to_json() == read.tree_.to_json()


def test_read_takes_one_pass_per_level_when_the_budget_holds_a_level(table):
    clf = DecisionTreeClassifier(algorithm="read", max_bins=64, max_depth=12, memory_budget="1GB")
    clf.fit(table, target="class")
    assert clf.get_depth() == 12
    assert clf.n_passes_per_level_ == [1] * 12 and clf.n_passes_ == 13  # 12 levels, plus profiling


def test_hybrid_takes_strictly_fewer_passes_when_deep_nodes_fit(table):
    # a quarter of 400 KB holds about 9,300 of the 20,000 encoded rows: the first growth pass
    # spills them, later levels read the spill, and once every node still growing fits, its rows are
    # pulled into memory from there; no level after the first reads the data
    params = dict(max_bins=64, max_depth=12, memory_budget="400KB")
    read = DecisionTreeClassifier(algorithm="read", **params).fit(table, target="class")
    hybrid = DecisionTreeClassifier(algorithm="hybrid", **params).fit(table, target="class")
    assert hybrid.tree_.to_json() == read.tree_.to_json()
    assert 0 < hybrid.grow_stats_.kept_rows < 20_000 and hybrid.grow_stats_.spill_reads > 0
    assert hybrid.n_passes_ == 2 < read.n_passes_
    assert hybrid.n_passes_per_level_[1:] == [0] * (len(hybrid.n_passes_per_level_) - 1)


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
@pytest.mark.parametrize("phase", ["read", "commit"])
def test_spill_folder_is_removed_when_a_fit_fails(table, tmp_path, monkeypatch, error, phase):
    seen = []
    original = getattr(spill_module.Spill, phase)

    def failing(self, *args, **kwargs):
        seen.append(sorted(os.listdir(self.root)))  # the folder exists, written or being written
        if phase == "read":
            raise error("stopped while reading the spill")
        original(self, *args, **kwargs)
        raise error("stopped after writing the spill")

    monkeypatch.setattr(spill_module.Spill, phase, failing)
    clf = DecisionTreeClassifier(algorithm="write", max_bins=64, max_depth=7, memory_budget="200KB",
                                 spill_dir=str(tmp_path))
    with pytest.raises(error, match="stopped"):
        clf.fit(table, target="class")
    assert seen and seen[0], "the fit failed before writing its spill folder"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
@pytest.mark.parametrize("during", ["writing", "reading"])
def test_spill_folder_is_removed_when_a_fit_stops_midway(table, tmp_path, monkeypatch, error, during):
    """Stopped after some blocks were written by the first growth pass, or read by a later level:
    the folder held rows then, and nothing is left of it after."""
    seen = []
    writer, read = spill_module.Spill.writer, spill_module.Spill.read

    def stopping_writer(self, part_of_node):
        write = writer(self, part_of_node)

        def write_some(rows):
            write(rows)
            seen.append(self.bytes_written)
            if len(seen) == 3:
                raise error("stopped while writing the spill")
        return write_some

    def stopping_read(self, *args, **kwargs):
        for k, block in enumerate(read(self, *args, **kwargs)):
            seen.append(os.listdir(os.path.join(self.root, f"gen-{self.generation}")))
            if k == 2:
                raise error("stopped while reading the spill")
            yield block

    if during == "writing":
        monkeypatch.setattr(spill_module.Spill, "writer", stopping_writer)
    else:
        monkeypatch.setattr(spill_module.Spill, "read", stopping_read)
    clf = DecisionTreeClassifier(max_bins=64, max_depth=7, memory_budget="200KB", batch_size=2000,
                                 spill_dir=str(tmp_path))
    with pytest.raises(error, match="stopped"):
        clf.fit(table, target="class")
    assert len(seen) == 3 and all(seen), "the fit did not stop midway through the spill"
    assert os.listdir(tmp_path) == []


def test_the_first_growth_pass_spills_what_memory_cannot_hold(table, tmp_path, monkeypatch):
    """A depth-10 tree whose encoded rows do not fit the budget's quarter reads the data twice
    (profile, then the pass that spills); every later level reads the spill folder, which exists
    during the fit and is gone after it; the tree is RF-Read's."""
    during = []
    commit = spill_module.Spill.commit

    def watch(self):
        commit(self)
        during.append(sorted(os.listdir(os.path.join(self.root, f"gen-{self.generation}"))))

    monkeypatch.setattr(spill_module.Spill, "commit", watch)
    # 200,000 rows of 11 encoded bytes past a quarter of 8 MB; a level's AVC-groups fit one read
    table = agrawal_table(200_000, function=7, seed=3)
    params = dict(max_bins=16, max_depth=10, memory_budget="8MB")
    read = DecisionTreeClassifier(algorithm="read", **params).fit(table, target="class")
    source = TableSource(table=table)
    clf = DecisionTreeClassifier(spill_dir=str(tmp_path), **params).fit(source, target="class")
    assert clf.tree_.to_json() == read.tree_.to_json() and clf.get_depth() == 10
    assert read.n_passes_ == 11 and clf.n_passes_ == 2 and source.n_passes == 2
    assert during and during[0] == ["part-0.node", "part-0.rows"]
    stats = clf.grow_stats_
    assert stats.spill_bytes == 200_000 * (9 + 1 + 2)  # slots, class code, node (2 bytes): every row once
    assert stats.spill_reads >= 2 and stats.spill_bytes_read == stats.spill_reads * stats.spill_bytes
    assert 0 < stats.kept_rows < 200_000  # the nodes still growing came to fit: pulled from the spill
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("free", [1000, 20_000 * 14])
def test_a_disk_too_small_for_the_spill_reads_the_source_instead(free, table, tmp_path, monkeypatch):
    """Checked before writing: a warning names the folder and the bytes needed, the fit reads the
    source per level (RF-Read's passes) and grows the same tree; no folder is made.  The bytes
    needed are the rows' (9 slots, class code, node: 14 a row) and a second node file (4 a row), which
    a read writing the routed nodes back holds until it is swapped in: room for the rows alone is not
    enough (it ended in ENOSPC mid-fit at 1B rows)."""
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**7, 10**7 - free, free))
    params = dict(max_bins=64, max_depth=6, memory_budget="300KB")
    read = DecisionTreeClassifier(algorithm="read", **params).fit(table, target="class")
    with pytest.warns(RuntimeWarning, match=rf"disk \({tmp_path}\) has {free:,} bytes free and the encoded rows "
                                            rf"need {20_000 * 18:,}"):
        clf = DecisionTreeClassifier(spill_dir=str(tmp_path), **params).fit(table, target="class")
    assert clf.tree_.to_json() == read.tree_.to_json()
    assert clf.n_passes_ == read.n_passes_ > 2 and clf.grow_stats_.spill_bytes == 0
    assert os.listdir(tmp_path) == []


def test_progress_bar_counts_rows_of_the_pass(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    meter = PassMeter("level 3, pass 4 over the data", verbose=1, total=200)
    meter(50)
    assert meter.bar.n == 50 and meter.bar.total == 200
    meter(150)
    assert meter.bar.n == 200
    meter.done()  # the bar is cleared (the pass's line is logged)
    drawn = term.getvalue()
    assert "level 3, pass 4 over the data" in drawn and "/200" in drawn and "rows/s" in drawn
