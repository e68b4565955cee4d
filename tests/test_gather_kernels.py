"""The gathering's cell arithmetic (rainforest/gather_kernels.py) against plain Python."""
from __future__ import annotations

import numpy as np
import pytest

from rainforest.gather_kernels import any_split, dense_cells, radix_sort, sum_cells, union_cells


def _state(rng, n, n_cells, n_slots):
    keys = np.unique(rng.integers(0, n_cells * n_slots, n))
    counts = rng.integers(0, 5, (len(keys), 3)).astype(float)
    return keys // n_slots, keys % n_slots * 7 - 10, counts  # signed slots, as value keys are


@pytest.mark.parametrize("sizes", [(5000, 40, 3), (40, 5000, 3), (3000, 5000), (0, 10), (1, 1), (200, 200, 0, 7)])
def test_union_of_cells_adds_equal_pairs_and_keeps_order(sizes):
    rng = np.random.default_rng(len(sizes))
    states = [_state(rng, n, 50, 300) for n in sizes]
    want = {}
    for cell, slot, counts in states:
        for c, s, v in zip(cell, slot, counts):
            want[(int(c), int(s))] = want.get((int(c), int(s)), 0) + v
    cell, slot, counts = union_cells(*states)
    assert list(zip(cell.tolist(), slot.tolist())) == sorted(want)
    assert np.array_equal(counts, np.array([want[k] for k in sorted(want)]).reshape(-1, 3))


def test_dense_cells_are_the_reached_ranks_of_each_cell():
    """Cells 0 and 2 dense (ranks 10.. and 50..), cell 1 not: the rows with counts, as (cell, rank)."""
    dense_at, first, span = np.array([0, -1, 4]), np.array([10, 99, 50]), np.array([4, 1, 3])
    dense = np.zeros((7, 2))
    dense[[1, 3, 5], 0] = [2.0, 1.0, 4.0]
    cell, slot, counts = dense_cells(dense, dense_at, first, span)
    assert cell.tolist() == [0, 0, 2] and slot.tolist() == [11, 13, 51]
    assert counts[:, 0].tolist() == [2.0, 1.0, 4.0]


def test_any_split_finds_a_row_at_a_split_node():
    """A spilled block needs every column when any row stands at a split node (exact_gather.columns_for)."""
    first_child = np.array([1, -1, -1, 4, -1, -1])
    assert not any_split(first_child, np.array([1, 2, 4, 5, 2], np.uint16))
    assert any_split(first_child, np.array([1, 2, 4, 5, 3], np.uint16))
    assert any_split(first_child, np.array([0], np.int32))
    assert not any_split(first_child, np.zeros(0, np.uint16))


def _cells_by_python(group, rank, cls, weight, first, span, n_channels):
    """sum_cells' answer, plainly: per (cell, slot) in order, each class's weight."""
    want = {}
    for g, r, c, w in zip(group.tolist(), rank.tolist(), cls.tolist(),
                          weight.tolist() if len(weight) else [1.0] * len(group)):
        want.setdefault((g, r), np.zeros(n_channels))[c] += w
    keys = sorted(want)
    return [k[0] for k in keys], [k[1] for k in keys], np.array([want[k] for k in keys]).reshape(-1, n_channels)


@pytest.mark.parametrize("n_classes, spread, weighted", [(2, 1 << 44, False), (5, 1 << 20, False),
                                                         (2, 1 << 63, False), (3, 1 << 40, True), (1, 1000, False)])
def test_summed_cells_are_each_cells_keys_and_class_counts(n_classes, spread, weighted):
    """Keyed cells (span 0, signed keys, many rows: the radix sort; few: insertion; a spread of 2**63 leaves no
    room for the class: the stable sort instead) beside cells of ranks, rows of one key in each, whole
    weights: the cells and counts plain Python finds, whatever the rows' order."""
    rng = np.random.default_rng(n_classes + int(weighted))
    n_cells = 12
    span = np.array([0, 0, 0, 0, 8, 0, 3, 0, 0, 0, 0, 5])
    first = np.array([0, 0, 0, 0, 40, 0, 7, 0, 0, 0, 0, 0])
    sizes = rng.integers(1, 3000, n_cells)
    sizes[[2, 5]] = [7, 31]  # insertion-sorted cells
    group = np.repeat(np.arange(n_cells), sizes)
    rng.shuffle(group)
    base = -(spread // 2)
    rank = np.where(span[group] > 0, first[group] + rng.integers(0, np.maximum(span[group], 1)),
                    base + rng.integers(0, spread, len(group), dtype=np.uint64).astype(np.int64) % 50_000 * (
                        spread // 50_000))
    if spread == 1 << 63:  # cell 0 spans every int64: 64 bits of key
        at = np.flatnonzero(group == 0)[:2]
        rank[at] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
    rank[group == 9] = 123  # one key in the whole cell
    rank[(group == 3)] = rank[group == 3] % 4 - 2  # many rows a key
    cls = rng.integers(0, n_classes, len(group)).astype(np.uint8)
    weight = rng.integers(0, 4, len(group)).astype(float) if weighted else np.zeros(0)
    want_cell, want_slot, want_counts = _cells_by_python(group, rank, cls, weight, first, span, n_classes)
    cell, slot, counts = sum_cells(group.astype(np.int32), rank.copy(), cls.copy(), weight, first, span, n_classes,
                                   False)
    assert cell.tolist() == want_cell and slot.tolist() == want_slot
    assert np.array_equal(counts, want_counts)


@pytest.mark.parametrize("n", [0, 1, 20, 31, 32, 1000, 70_000])
def test_radix_sort_sorts_words_below_their_bits(n):
    rng = np.random.default_rng(n)
    for bits in (1, 9, 44, 64):
        words = rng.integers(0, 1 << min(bits, 63), n, dtype=np.uint64) * (2 if bits == 64 else 1)
        got = words.copy()
        radix_sort(got, np.uint64(bits))
        assert np.array_equal(got, np.sort(words))
