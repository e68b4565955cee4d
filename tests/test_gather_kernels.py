"""The gathering's cell arithmetic (rainforest/gather_kernels.py) against plain Python."""
from __future__ import annotations

import numpy as np
import pytest

from rainforest.gather_kernels import any_split, dense_cells, union_cells


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
