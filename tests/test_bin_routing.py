"""Keyed columns' bins stored beside their keys in the spill folder, and the counting reads that read
the bins (rainforest/bin_routing.py): the same rows, the same routing, the same trees, fewer bytes."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rainforest import DecisionTreeClassifier, grow, spill as spill_module
from rainforest.avc import AvcPass
from rainforest.bin_routing import binned_routing, route_binned
from rainforest.count_bins import CountedSlots
from rainforest.exact_gather import ValuePass
from rainforest.rows import RowBlock, descend
from rainforest.spill import Spill
from rainforest.value_keys import KEY_MISSING, key_bins, keys_of

from keyed_growth import key_at_small_cap


def _counted(columns: list) -> CountedSlots:
    """Counted slots of two keyed attributes (bins from a sample of their values) and a third of 12
    slots counted as they are."""
    tables = [key_bins(c[~np.isnan(c)][::7], 16) for c in columns]
    shift = np.array([t.shift for t in tables] + [0], np.uint64)
    missing = np.array([KEY_MISSING] * len(tables) + [12], np.uint64)
    n_counted = np.array([t.n_bins for t in tables] + [12], np.uint64)
    base = np.stack([t.kernel_base() for t in tables] + [np.zeros(3, np.uint64)])
    sizes = [len(t.table) for t in tables] + [0]
    table = np.concatenate([t.table for t in tables]).astype(np.uint16)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return CountedSlots(shift, missing, n_counted, base, table, starts)


def _rows(rng, n: int) -> tuple[np.ndarray, CountedSlots]:
    x = rng.standard_normal(n) * 100.0
    z = np.round(rng.uniform(0, 50, n), 1)  # many repeated values: bins of few keys
    x[rng.random(n) < 0.05] = np.nan
    counted = _counted([x, z])
    S = np.empty((n, 3), np.int64, order="F")
    for j, c in enumerate((x, z)):
        S[:, j] = np.where(np.isnan(c), KEY_MISSING, keys_of(np.nan_to_num(c)))
    S[:, 2] = rng.integers(0, 13, n)  # 12: missing
    return S, counted


def _spilled(tmp_path, S, y, w, counted, sizes) -> Spill:
    spill = Spill(str(tmp_path), 3, [np.dtype(np.int64), np.dtype(np.int64), np.dtype(np.uint8)], counted)
    write = spill.writer(np.zeros(1, np.int64))
    at = 0
    for m in sizes:  # records of several sizes
        write(RowBlock(np.asfortranarray(S[at:at + m]), y[at:at + m], w[at:at + m] if len(w) else w,
                       np.zeros(m, np.int32)))
        at += m
    spill.commit()
    return spill


@pytest.mark.parametrize("weighted", [False, True])
def test_spilled_bins_and_keys_read_back(tmp_path, weighted):
    """A read as keys gives the rows written; a read as bins gives each keyed column's counted bins and
    the other columns as written, and its blocks' keys are the keys written, for any rows asked; a read
    of both gives the keys and, beside them, the bins."""
    rng = np.random.default_rng(3)
    S, counted = _rows(rng, 5000)
    y = rng.integers(0, 3, len(S)).astype(np.uint8)
    w = rng.uniform(0.5, 2.0, len(S)) if weighted else np.empty(0)
    spill = _spilled(tmp_path, S, y, w, counted, [700, 1, 1299, 3000])
    try:
        as_keys = list(spill.read([0], 2000, update_nodes=False))
        keys_read = spill.bytes_read
        as_bins, at = [], 0
        for block in spill.read([0], 2000, update_nodes=False, keyed_as="bins"):
            # keys are fetched while the block is read (its file is open then)
            rows = np.sort(rng.choice(len(block), min(200, len(block)), replace=False))
            attrs = rng.integers(0, 2, len(rows))
            assert np.array_equal(block.keys.fetch(rows, attrs), S[at + rows, attrs])
            with pytest.raises(AssertionError, match="holds none"):
                block.keys.fetch(rows[:1], np.array([2]))
            as_bins.append(block)
            at += len(block)
        bins_read = spill.bytes_read - keys_read
        as_both = list(spill.read([0], 2000, update_nodes=False, keyed_as="both"))
        assert np.array_equal(np.concatenate([b.S for b in as_both]), S)
        beside = np.concatenate([b.bins for b in as_both])
        assert len(as_keys) == len(as_bins) > 1
        assert np.array_equal(np.concatenate([b.S for b in as_keys]), S)
        got = np.concatenate([b.S for b in as_bins])
        assert got.dtype == np.uint16
        for a in (0, 1):
            assert np.array_equal(got[:, a], counted.of(a, S[:, a]))
            assert np.array_equal(beside[:, a], got[:, a])
        assert np.array_equal(got[:, 2], S[:, 2])
        for blocks in (as_keys, as_bins):
            assert np.array_equal(np.concatenate([b.y for b in blocks]), y)
            if weighted:
                assert np.array_equal(np.concatenate([b.w for b in blocks]), w)
        assert bins_read == keys_read - 12 * len(S)  # two int64 keys a row read as two uint16 bins
    finally:
        spill.remove()


def _last_key(counted: CountedSlots, a: int, b: int) -> int:
    """The last key of attribute ``a``'s bin ``b``: the one before the first key of the next bin."""
    table = counted.table[counted.table_start[a]:counted.table_start[a + 1]]
    first_cell = int(np.searchsorted(table, b, side="right"))  # the first range of keys past bin b
    base, gap_at, gap_width = (int(v) for v in counted.base[a])
    unsigned = base + (first_cell << int(counted.shift[a])) - 1  # closed up: past the gap, add it back
    unsigned += gap_width if unsigned > gap_at else 0
    key = int(np.array([unsigned ^ (1 << 63)], np.uint64).view(np.int64)[0])
    assert counted.of(a, np.array([key]))[0] == b and counted.of(a, np.array([key + 1]))[0] == b + 1
    return key


def _tree(rng, S, counted) -> tuple:
    """A depth-4 binary tree over the three attributes: numeric cuts at rows' own keys (inside a bin),
    at a bin's last key (its boundary), at +inf (every present value left), and a categorical split."""
    n_inner, n_nodes = 15, 31
    feature = np.full(n_nodes, -2, np.int32)
    first_child = np.full(n_nodes, -1, np.int32)
    branch_offset = np.full(n_nodes, -1, np.int32)
    cut = np.full(n_nodes, -1, np.int64)
    missing_branch = rng.integers(0, 2, n_nodes).astype(np.int32)
    slot_branch = []
    for k in range(n_inner):
        first_child[k] = 2 * k + 1
        a = int(rng.integers(0, 3))
        feature[k] = a
        kind = k % 4
        if a == 2:
            if kind == 0:
                branch_offset[k] = len(slot_branch)
                slot_branch += list(rng.integers(0, 2, 13))
            else:
                cut[k] = int(rng.integers(0, 12))
        elif kind == 1:  # a bin's boundary: the last key its bin holds
            cut[k] = _last_key(counted, a, int(rng.integers(0, int(counted.n_counted[a]) - 1)))
        elif kind == 2:
            cut[k] = KEY_MISSING  # +inf threshold
        else:
            present = S[:, a][S[:, a] != KEY_MISSING]
            cut[k] = int(present[rng.integers(0, len(present))])
    n_slots = np.array([KEY_MISSING, KEY_MISSING, 12], np.int64)
    return (feature, first_child, np.array(slot_branch, np.int32), branch_offset, cut, missing_branch, n_slots)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rows_read_as_bins_reach_the_nodes_their_keys_do(tmp_path, seed):
    """Routing a read's bins, with the keys of open bins' rows fetched, moves every row to the node
    descending by its keys does, from the root down several levels at once (a row stopped at one open
    bin goes on below it)."""
    rng = np.random.default_rng(seed)
    S, counted = _rows(rng, 6000)
    routing = _tree(rng, S, counted)
    binned, open_bin = binned_routing(routing, counted)
    on_keys = (routing[1] >= 0) & (routing[0] < 2)
    is_open = open_bin >= 0
    assert is_open[on_keys].any() and not is_open[on_keys].all()  # both kinds of cut
    assert not is_open[~on_keys].any() and np.array_equal(open_bin[is_open], binned[4][is_open])
    spill = _spilled(tmp_path, S, np.zeros(len(S), np.uint8), np.empty(0), counted, [2500, 3500])
    fetched = []
    try:
        want = np.zeros(len(S), np.int32)
        descend(S, want, *routing)
        got = []
        for block in spill.read([0], 4000, update_nodes=False, keyed_as="bins"):
            block.keys = _Counting(block.keys, fetched)
            route_binned(block, routing, binned, open_bin)
            got.append(block.node)
        assert np.array_equal(np.concatenate(got), want)
        assert 0 < sum(fetched) < len(S) // 4  # the open bins' rows only
    finally:
        spill.remove()


class _Counting:
    """A block's keys, noting how many rows each fetch asks."""

    def __init__(self, keys, log):
        self._keys, self._log = keys, log

    def fetch(self, rows, attributes):
        self._log.append(len(rows))
        return self._keys.fetch(rows, attributes)


def test_a_spilled_keyed_fit_counts_bins_and_grows_the_same_tree(monkeypatch):
    """A fit whose keyed rows are spilled counts them read as bins (fewer bytes read, open bins' keys
    fetched) and gathers candidate rows by their bins, and grows, JSON for JSON, the tree reading
    keys alone grows; a spill larger than the page cache would hold stores and reads keys only."""
    rng = np.random.default_rng(11)
    n = 60_000
    x, z = rng.standard_normal(n) * 1e3, rng.uniform(0, 1, n)
    y = ((x > 150.0) ^ (z < 0.3) ^ (rng.random(n) < 0.1)).astype(np.int64)
    table = pa.table({"x": x, "z": z, "k": rng.integers(0, 5, n), "class": y})
    key_at_small_cap(monkeypatch, cap=1000)
    fetched = []
    original = spill_module.SpilledKeys.fetch
    monkeypatch.setattr(spill_module.SpilledKeys, "fetch", lambda self, r, a: fetched.append(len(r)) or
                        original(self, r, a))
    kw = dict(max_bins=None, max_depth=8, memory_budget="400KB", batch_size=4096)
    got = DecisionTreeClassifier(**kw).fit(table, target="class")
    assert fetched and got.grow_stats_.spill_reads > 2
    with monkeypatch.context() as m:  # a spill the page cache would not hold stores no bins
        m.setattr(grow, "page_cache_holds", lambda n_bytes: False)
        fetched.clear()
        uncached = DecisionTreeClassifier(**kw).fit(table, target="class")
        assert not fetched and uncached.tree_.to_json() == got.tree_.to_json()
        assert uncached.grow_stats_.spill_bytes < got.grow_stats_.spill_bytes
    monkeypatch.setattr(AvcPass, "spilled_keys", "keys")
    monkeypatch.setattr(ValuePass, "spilled_keys", "keys")
    fetched.clear()
    want = DecisionTreeClassifier(**kw).fit(table, target="class")
    assert not fetched
    assert got.tree_.to_json() == want.tree_.to_json()
    assert got.grow_stats_.spill_bytes_read < want.grow_stats_.spill_bytes_read
