"""Exact forests (``max_bins=None``) in bounded memory: wide attributes counted in bins, the rows of the
candidate bins gathered (rainforest/forest_exact.py), the trees those of one slot per distinct value."""
import numpy as np
import pyarrow as pa
import pytest

from keyed_growth import count_one_slot_per_value, key_at_small_cap
from rainforest import BudgetError, DecisionTreeClassifier, RandomForestClassifier, forest_exact, tree_setup
from rainforest.datasets import agrawal_table
from rainforest.grow import GrowParams

pytestmark = pytest.mark.filterwarnings("ignore:some rows are in the bootstrap of every tree:UserWarning")


@pytest.fixture(scope="module")
def table():
    """Agrawal F1 with missing salaries and a string column: 6,000 rows, salary's values mostly distinct."""
    t = agrawal_table(6000, function=1, seed=4)
    salary = t.column("salary").to_numpy().copy()
    salary[::37] = np.nan
    t = t.set_column(t.schema.get_field_index("salary"), "salary", pa.array(salary))
    return t.append_column("color", pa.array(np.array(["r", "g", "b", "y"])[np.arange(len(t)) % 4]))


def _forest(data, **kw):
    params = dict(n_estimators=4, max_depth=7, max_bins=None, random_state=2) | kw
    return RandomForestClassifier(**params).fit(data, target="class")


def _reference(data, monkeypatch, **kw):
    """The forest counted one slot per distinct value, at the default budget."""
    with monkeypatch.context() as m:
        count_one_slot_per_value(m)
        clf = _forest(data, **{k: v for k, v in kw.items() if k != "memory_budget"})
    assert clf.grow_stats_.candidate_reads == 0
    return clf.to_json()


CASES = {
    "kept rows": {},
    "spilled rows": dict(memory_budget="400KB"),
    "entropy, no bootstrap": dict(criterion="entropy", bootstrap=False),
    "every attribute, larger leaves": dict(max_features=None, min_samples_leaf=5),
    "gain ratio": dict(criterion="gain_ratio", min_impurity_decrease=0.001),
    "whole class weights": dict(class_weight={0: 1, 1: 3}),
    "leaf weight fraction": dict(min_weight_fraction_leaf=0.01),
    "half samples": dict(max_samples=0.5),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("slots", ["rank bins", "value keys"])
def test_forests_counted_in_bins_are_the_forests_of_one_slot_per_value(table, monkeypatch, case, slots):
    kw = CASES[case]
    ref = _reference(table, monkeypatch, **kw)
    if slots == "rank bins":  # salary's ~5,800 ranks in bins of 8 ranks or more
        monkeypatch.setattr(tree_setup, "GrowParams", lambda **p: GrowParams(**(p | {"exact_bins": 64})))
        keys = []
    else:
        keys = key_at_small_cap(monkeypatch)
    clf = _forest(table, **kw)
    assert clf.to_json() == ref
    stats = clf.grow_stats_
    assert stats.candidate_reads > 0 and stats.candidate_rows > 0
    assert (stats.kept_rows == 0) == ("memory_budget" in kw)
    assert bool(keys) == (slots == "value keys" and "class_weight" not in kw)  # weights keep every value


@pytest.mark.parametrize("budget", ["1GB", "400KB"])
def test_whole_sample_weights_and_rows_of_weight_zero(table, monkeypatch, budget):
    """Whole-number sample weights are counted in bins too; rows of weight 0 count as absent in the
    gathering as in the counts (kept rows' copies drop them, passes skip them)."""
    data = table.append_column("w", pa.array((np.arange(len(table)) % 4).astype(np.float64)))  # 0, 1, 2, 3
    with monkeypatch.context() as m:
        count_one_slot_per_value(m)
        ref = RandomForestClassifier(n_estimators=4, max_depth=7, max_bins=None, random_state=2).fit(
            data, target="class", sample_weight="w")
    clf = RandomForestClassifier(n_estimators=4, max_depth=7, max_bins=None, random_state=2, memory_budget=budget).fit(
        data, target="class", sample_weight="w")
    assert clf.grow_stats_.candidate_reads > 0
    assert clf.to_json() == ref.to_json()


def test_a_column_with_a_value_per_row_fits_a_budget_below_its_values(monkeypatch):
    """One node's AVC-group over one slot per value needs more than the budget's half: that forest is
    refused, the one counted in bins fits it, and they are the same forest."""
    n = 40_000
    rng = np.random.default_rng(7)
    x = rng.random(n) * 1000.0  # unique floats
    z = rng.integers(0, 50, n).astype(np.float64)
    label = np.where(np.sin(x / 37.0) + z / 60.0 > 0.4, "a", "b")
    data = pa.table({"x": x, "z": z, "y": label})
    params = dict(n_estimators=3, max_depth=6, max_bins=None, random_state=1, max_features=None)
    budget = "1MB"  # the AVC half: 500 KB; x alone over one slot per value: 40,001 x 3 channels x 8 B = 960 KB
    with monkeypatch.context() as m:
        count_one_slot_per_value(m)
        with pytest.raises(BudgetError, match="memory budget too small"):
            RandomForestClassifier(memory_budget=budget, **params).fit(data, target="y")
        ref = RandomForestClassifier(**params).fit(data, target="y")
    clf = RandomForestClassifier(memory_budget=budget, **params).fit(data, target="y")
    assert clf.to_json() == ref.to_json()
    assert clf.grow_stats_.peak_avc_bytes <= 500_000


def test_a_node_whose_candidate_rows_exceed_the_room_is_gathered_in_parts(table, monkeypatch):
    """A job whose gathering alone exceeds a quarter of the budget is gathered and searched one attribute
    a read, and an attribute that alone exceeds it in runs of its bins; the forest is the same, with
    more reads."""
    ref = _reference(table, monkeypatch)
    calls = []
    original = forest_exact._attribute_at_a_time
    monkeypatch.setattr(forest_exact, "_attribute_at_a_time", lambda *a: calls.append(a[4]) or original(*a))
    roomy = _forest(table, memory_budget="2MB")
    assert not calls
    tight = _forest(table, memory_budget="1MB")
    assert calls and tight.to_json() == roomy.to_json() == ref
    assert tight.grow_stats_.candidate_reads > roomy.grow_stats_.candidate_reads
    # an attribute whose candidate rows alone exceed the room is gathered in runs of its bins
    assert roomy.grow_stats_.candidate_runs == 0 < tight.grow_stats_.candidate_runs
    tighter = _forest(table, memory_budget="300KB")
    assert tighter.to_json() == ref and tighter.grow_stats_.candidate_runs > tight.grow_stats_.candidate_runs


def _candidate_share(clf, n_rows, n_trees):
    """Gathered entries over every (in-bag row, searched attribute) pair the levels counted, roughly:
    rows x trees x levels x attributes a node searches (3 of Agrawal's 9)."""
    levels = len(clf.grow_stats_.jobs_per_level)
    return clf.grow_stats_.candidate_rows / (n_rows * n_trees * levels * 3)


def test_the_bound_keeps_the_gathered_rows_few(monkeypatch):
    """Candidate bins are those whose bound may beat the best boundary split: a small share of the rows.
    Gathering every bin (the bound disabled: every target -inf) grows the same forest from far more."""
    n, trees = 30_000, 3
    data = agrawal_table(n, function=7, seed=9)
    kw = dict(n_estimators=trees, max_depth=8)
    clf = _forest(data, **kw)
    share = _candidate_share(clf, n, trees)
    assert 0 < share < 0.15
    original = forest_exact.mark_candidates

    def every_bin(counts, todo, job_base, job_cells, attr_start, offsets, kinds, binned, n_channels, criterion,
                  targets, *rest):
        original(counts, todo, job_base, job_cells, attr_start, offsets, kinds, binned, n_channels, criterion,
                 np.full_like(targets, -np.inf), *rest)

    monkeypatch.setattr(forest_exact, "mark_candidates", every_bin)
    unbounded = _forest(data, **kw)
    assert unbounded.to_json() == clf.to_json()
    assert _candidate_share(unbounded, n, trees) > 3 * share


def test_without_bootstrap_each_exact_tree_is_the_decision_tree(table):
    """Every attribute at every node, no bootstrap: each tree, counted in bins, is the exact decision tree
    (which counts small data one slot per value)."""
    clf = _forest(table, bootstrap=False, max_features=None, n_estimators=2)
    single = DecisionTreeClassifier(max_depth=7, max_bins=None).fit(table, target="class")
    assert clf.grow_stats_.candidate_reads > 0 and single.grow_stats_.candidate_reads == 0
    assert all(t.to_json() == single.tree_.to_json() for t in clf.estimators_)


def test_an_exact_forest_on_dask_gathers_where_the_workers_keep_the_rows(table, monkeypatch):
    """On Dask (each block's entries counted, then written, where the workers keep the rows): the forest
    of one slot per value, with value keys."""
    dd = pytest.importorskip("dask.dataframe")
    ref = _reference(table.drop(["color"]), monkeypatch)
    keys = key_at_small_cap(monkeypatch)
    clf = _forest(dd.from_pandas(table.drop(["color"]).to_pandas(), npartitions=3))
    assert clf.to_json() == ref
    assert keys and clf.grow_stats_.candidate_reads > 0
    assert clf.n_passes_ == 2  # the profile, the first level's; every gathering reads what the workers keep
