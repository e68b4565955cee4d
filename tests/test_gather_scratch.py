"""One read gathering a level's candidate values for several groups of nodes and runs
(rainforest/gather_scratch.py): each group's picked rows go to scratch files as the rows stream by,
and each group is summed from its files alone.  The tree is the one a read per group builds, the
reads are fewer, each group's values stay within the room, and no scratch file outlives the read."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rainforest import DecisionTreeClassifier, exact_search, gather_scratch, plan


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
    monkeypatch.setattr(exact_search, "gathering_room", lambda budget, spare: room)
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
    monkeypatch.setattr(exact_search, "gathering_room", lambda budget, spare: 200_000)
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


def test_a_spill_read_skips_the_columns_a_block_does_not_need(tmp_path):
    """Spill.read's ``columns_for`` (asked per block, with the block's nodes read first): the columns
    named are the ones written, in records of several sizes and column types, and the next record
    and the next block start where they should; the bytes skipped are not counted as read."""
    from rainforest.rows import RowBlock
    from rainforest.spill import Spill

    rng = np.random.default_rng(3)
    types = [np.dtype(np.int64), np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.int64)]
    spill = Spill(str(tmp_path), 4, types)
    try:
        write = spill.writer(np.zeros(4, np.int64))  # every node to partition 0
        blocks = []
        for n in (5, 300, 17, 1000):
            S = np.asfortranarray(np.column_stack([rng.integers(-2**40, 2**40, n), rng.integers(0, 200, n),
                                                   rng.integers(0, 60000, n), rng.integers(-9, 9, n)]))
            rows = RowBlock(S, rng.integers(0, 3, n).astype(np.uint8), rng.random(n), rng.integers(0, 4, n).astype(np.int32))
            write(rows)
            blocks.append(rows)
        spill.commit()
        whole = RowBlock(np.vstack([b.S for b in blocks]), np.concatenate([b.y for b in blocks]),
                         np.concatenate([b.w for b in blocks]), np.concatenate([b.node for b in blocks]))
        asked = []

        def wanted(node):
            asked.append(len(node))
            return None if (node == 3).all() else {0, 2}

        got = list(spill.read([0], 400, update_nodes=False, columns_for=wanted))
        before = spill.bytes_read
        at = 0
        for b in got:
            part = slice(at, at + len(b))
            assert np.array_equal(b.S[:, [0, 2]], whole.S[part][:, [0, 2]])
            assert np.array_equal(b.y, whole.y[part]) and np.array_equal(b.w, whole.w[part])
            assert np.array_equal(b.node, whole.node[part])
            at += len(b)
        assert at == len(whole.y) and asked == [len(b) for b in got] and len(got) > 1
        all_columns = list(spill.read([0], 400, update_nodes=False))
        assert spill.bytes_read - before > before  # the columns skipped were not read
        assert all(np.array_equal(a.S, whole.S[i:i + len(a)]) for a, i in
                   zip(all_columns, np.cumsum([0] + [len(a) for a in all_columns])))
    finally:
        spill.remove()


def test_gathering_reads_of_spilled_rows_read_only_the_candidate_columns(monkeypatch):
    """A gathering read takes from the spill only its candidate attributes' columns (the rows stand at
    the nodes the level's count routed them to): fewer bytes read, the tree, values and rows of a
    read of every column."""
    from rainforest import exact_gather

    rng = np.random.default_rng(1)
    table = _table().append_column("x3", pa.array(rng.normal(size=60_000))).append_column(
        "x4", pa.array(rng.integers(0, 5, 60_000)))
    params = dict(max_bins=None, max_depth=6, algorithm="write", memory_budget="2MB")
    asked = []
    columns_for = exact_gather.ValuePass.columns_for
    monkeypatch.setattr(exact_gather.ValuePass, "columns_for",
                        lambda self, node: asked.append(columns_for(self, node)) or asked[-1])
    some = DecisionTreeClassifier(**params).fit(table, target="y")
    assert asked and all(a is not None and len(a) < 5 for a in asked)
    monkeypatch.setattr(exact_gather.ValuePass, "columns_for", lambda self, node: None)
    every = DecisionTreeClassifier(**params).fit(table, target="y")
    assert some.tree_.to_json() == every.tree_.to_json()
    assert some.grow_stats_.candidate_rows == every.grow_stats_.candidate_rows > 0
    assert some.grow_stats_.candidate_values == every.grow_stats_.candidate_values
    assert some.grow_stats_.spill_reads == every.grow_stats_.spill_reads
    assert some.grow_stats_.spill_bytes_read < every.grow_stats_.spill_bytes_read


def test_a_block_with_a_row_at_a_split_node_is_read_whole():
    """A row standing at a node that split (its partition not routed by the level's count) is routed by
    the gathering read first, which needs the split attributes' columns: such a block reads them all."""
    from types import SimpleNamespace

    from rainforest import exact_gather

    first_child = np.array([1, -1, -1])  # node 0 split into 1 and 2
    task = exact_gather.ValuePass(SimpleNamespace(routing=(np.zeros(3), first_child)), np.zeros((2, 4), np.bool_))
    task.__dict__["candidate_attributes"] = frozenset({1})  # as the candidates' pairs would give
    assert task.columns_for(np.array([1, 2, 2], np.int32)) == {1}
    assert task.columns_for(np.array([1, 0, 2], np.int32)) is None


def _small_rows(seed: int, n: int = 1000):
    """``n`` encoded rows of two one-byte slot columns at nodes 0 to 9, for the node-file tests."""
    from rainforest.rows import RowBlock

    rng = np.random.default_rng(seed)
    return RowBlock(np.asfortranarray(rng.integers(0, 9, (n, 2)).astype(np.uint8)), np.zeros(n, np.uint8),
                    np.empty(0), rng.integers(0, 10, n).astype(np.int32))


def test_node_files_take_two_bytes_a_node_while_the_tree_fits_them(tmp_path):
    """A spill holds each row's node in two bytes while the tree has fewer than 65,536 nodes, in four
    past that: a read routing rows to nodes past 65,535 writes them back whole, and the next read
    finds them; a later read of a small tree's nodes writes two bytes again."""
    from rainforest.spill import Spill

    n = 1000
    rows = _small_rows(5, n)
    spill = Spill(str(tmp_path), 2)
    try:
        spill.writer(np.zeros(10, np.int64))(rows)  # a tree of 10 nodes
        spill.commit()
        assert spill.bytes_written == n * (2 + 1 + 2)
        node_file = next(tmp_path.rglob("part-0.node"))
        assert node_file.stat().st_size == 2 * n
        deep = rows.node.astype(np.int64) + 70_000
        for block in spill.read([0], 300, n_tree_nodes=80_000):  # routed to nodes past 65,535
            block.node += 70_000
        assert node_file.stat().st_size == 4 * n
        got = np.concatenate([b.node for b in spill.read([0], 300, n_tree_nodes=80_000)])
        assert np.array_equal(got, deep)
        for block in spill.read([0], 300, n_tree_nodes=20):  # a read knowing the nodes fit two bytes again
            block.node -= 70_000
        assert node_file.stat().st_size == 2 * n
        assert np.array_equal(np.concatenate([b.node for b in spill.read([0], 300, update_nodes=False)]), rows.node)
    finally:
        spill.remove()


def test_routed_nodes_of_the_same_type_are_written_over_the_node_file(tmp_path):
    """A read routing rows to nodes the file's type holds writes them back over the same file (no new
    file: its inode stays); a read stopped after a block keeps that block's routed nodes and the rest as
    they were, every row at a node on its path, and leaves no scratch file."""
    from rainforest.spill import Spill

    n = 1000
    rows = _small_rows(7, n)
    spill = Spill(str(tmp_path), 2)
    try:
        write = spill.writer(np.zeros(40, np.int64))
        for at in range(0, n, 250):  # records of 250 rows: blocks of 300 rows take two
            write(rows.take(np.arange(n) // 250 == at // 250))
        spill.commit()
        node_file = next(tmp_path.rglob("part-0.node"))
        inode = node_file.stat().st_ino
        for block in spill.read([0], 300, n_tree_nodes=40):
            block.node += 10
        assert node_file.stat().st_ino == inode
        got = np.concatenate([b.node for b in spill.read([0], 300, update_nodes=False)])
        assert np.array_equal(got, rows.node + 10)
        reading = spill.read([0], 300, n_tree_nodes=40)
        first = next(reading)
        first.node += 10
        next(reading)  # asking for the second block writes the first one back
        reading.close()
        got = np.concatenate([b.node for b in spill.read([0], 300, update_nodes=False)])
        assert np.array_equal(got[:len(first)], rows.node[:len(first)] + 20)
        assert np.array_equal(got[len(first):], rows.node[len(first):] + 10)
        assert node_file.stat().st_ino == inode and not list(tmp_path.rglob("*.next"))
    finally:
        spill.remove()
