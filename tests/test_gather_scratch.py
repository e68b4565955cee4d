"""One read gathering a level's candidate values for several groups of nodes and runs
(rainforest/gather_scratch.py): each group's picked rows go to scratch files as the rows stream by,
and each group is summed from its files alone.  The tree is the one a read per group builds, the
reads are fewer, each group's values stay within the room, and no scratch file outlives the read."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rainforest import DecisionTreeClassifier, exact_search, gather_scratch, grow, plan


@pytest.fixture(autouse=True)
def _bins_at_any_size(monkeypatch):
    """Bins of ranks or value keys and gathering at this size (small data otherwise counts one slot
    per value, rainforest/plan.py)."""
    monkeypatch.setattr(plan, "SMALL_EXACT_ROWS", 0)


def _table(n=60_000) -> pa.Table:
    rng = np.random.default_rng(0)
    x0, x1 = rng.normal(size=n), rng.random(n)
    y = (x0 + 0.5 * x1 + rng.normal(scale=0.8, size=n) > 0.3).astype(np.int64)
    return pa.table({"x0": x0, "x1": x1, "x2": rng.integers(0, 20, n), "y": y})


def _a_read_per_group(monkeypatch):
    """The mutation: every group and run read on its own, as before one read served them all."""
    search_entries = exact_search.search_entries
    monkeypatch.setattr(exact_search, "search_entries", lambda *args: search_entries(*args[:-2], False, args[-1]))


@pytest.mark.parametrize("where", ["kept", "spilled"])
def test_one_read_for_a_levels_groups_gives_the_tree_of_a_read_each(where, tmp_path, monkeypatch):
    params = dict(max_bins=None, max_depth=6, spill_dir=str(tmp_path))
    if where == "spilled":
        params.update(algorithm="write", memory_budget="2MB")
    table = _table()
    room = 200_000  # the root and its children in runs, the deeper levels' nodes in several groups
    monkeypatch.setattr(grow, "gathering_room", lambda budget, spare: room)
    held, search = [], exact_search.exact_splits

    def spy(avc, candidates, values, *args):
        held.append(len(values) * (exact_search.held_value_bytes(2) + exact_search.refined_slot_bytes(2)))
        return search(avc, candidates, values, *args)

    monkeypatch.setattr(exact_search, "exact_splits", spy)
    one = DecisionTreeClassifier(**params).fit(table, target="y")
    assert list(tmp_path.iterdir()) == []  # the scratch files went with their read (and the spill with the fit)
    assert 0 < max(held) <= room  # one group's values at a time, as a read of its own holds them
    _a_read_per_group(monkeypatch)
    each = DecisionTreeClassifier(**params).fit(table, target="y")
    assert one.tree_.to_json() == each.tree_.to_json()
    assert one.grow_stats_.candidate_runs == each.grow_stats_.candidate_runs > 0
    assert one.grow_stats_.gathering_bytes > 0 == each.grow_stats_.gathering_bytes
    assert one.grow_stats_.candidate_reads < each.grow_stats_.candidate_reads
    assert one.grow_stats_.candidate_values == each.grow_stats_.candidate_values
    assert one.grow_stats_.candidate_rows == each.grow_stats_.candidate_rows
    if where == "spilled":  # fewer reads of the spill folder
        assert one.grow_stats_.spill_reads < each.grow_stats_.spill_reads


def test_the_scratch_folder_goes_after_an_error_or_an_interrupt(tmp_path, monkeypatch):
    monkeypatch.setattr(grow, "gathering_room", lambda budget, spare: 200_000)
    append = gather_scratch.ScatteredPicks.append
    for raised in (OSError("disk full"), KeyboardInterrupt()):
        calls = []

        def failing(self, arrays, raised=raised):
            calls.append(len(arrays[0]))
            if len(calls) == 2:  # the first block's rows written, the folder in use
                assert any(p.name.startswith("rainforest-") for p in tmp_path.iterdir())
                raise raised
            return append(self, arrays)

        monkeypatch.setattr(gather_scratch.ScatteredPicks, "append", failing)
        with pytest.raises(type(raised)):
            DecisionTreeClassifier(max_bins=None, max_depth=6, spill_dir=str(tmp_path), algorithm="write",
                                   memory_budget="2MB").fit(_table(), target="y")
        assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_a_cell_in_several_runs_reaches_each_of_them():
    """A near-winning boundary's bins are in every run of their node: their rows go to each run's
    files, the others' to their one group's, each group's rows in row order."""
    from types import SimpleNamespace

    node = np.array([0])
    entries = [(node, np.array([[1, 1, 0, 0]], bool)), (node, np.array([[1, 0, 1, 0]], bool)),
               (node, np.array([[0, 0, 0, 1]], bool))]
    number = np.arange(4).reshape(1, 4)  # cell c is slot c
    task = SimpleNamespace(cells=SimpleNamespace(number=number, high=np.arange(4)))
    groups = gather_scratch.CellGroups(task, entries)
    cell = np.array([3, 0, 1, 2, 0, 3])
    got = {g: rows.tolist() for g, rows in groups.rows_by_group(cell)}
    assert got == {0: [1, 2, 4], 1: [1, 3, 4], 2: [0, 5]}


def test_picking_from_the_first_scans_notes_gives_the_rows_of_a_second_scan(monkeypatch):
    """pick_rows notes the rows of candidate cells as it first scans a block and picks from the notes
    (rainforest/exact_gather.py ``NOTED_ROWS``); without notes it scans the block again: the same
    picked rows, values and tree."""
    from rainforest import exact_gather

    table = _table()
    noted = DecisionTreeClassifier(max_bins=None, max_depth=6, algorithm="write", memory_budget="2MB").fit(
        table, target="y")
    monkeypatch.setattr(exact_gather, "NOTED_ROWS", 0)
    scanned = DecisionTreeClassifier(max_bins=None, max_depth=6, algorithm="write", memory_budget="2MB").fit(
        table, target="y")
    assert noted.tree_.to_json() == scanned.tree_.to_json()
    assert noted.grow_stats_.candidate_rows == scanned.grow_stats_.candidate_rows > 0
    assert noted.grow_stats_.candidate_values == scanned.grow_stats_.candidate_values
