"""The split search kernels agree with each other to the bit.

:func:`rainforest.criteria.search_nodes` searches every (node, attribute) pair in parallel and
combines them per node; it must choose what the sequential :func:`search_node` chooses.  The
two-class gini scan (:func:`_numeric_gini2`) must score exactly as the general one.
"""
import numpy as np
import pytest

from rainforest.criteria import CRITERIA, _numeric, best_splits, search_node


def _random_block(rng, sizes, n_classes, weighted, sparse=0.4):
    """A node's AVC-group: per attribute ``sizes[a]`` value slots plus a missing slot, some empty."""
    rows = int(sum(sizes)) + len(sizes)
    block = np.zeros((rows, n_classes + weighted))
    counts = rng.integers(0, 4, (rows, n_classes)).astype(float)
    counts[rng.random(rows) < sparse] = 0.0
    if weighted:
        block[:, :n_classes] = counts * rng.uniform(0.2, 3.0, (rows, 1))
        block[:, n_classes] = counts.sum(axis=1)
    else:
        block[:, :n_classes] = counts
    return block, np.concatenate([[0], np.cumsum(np.asarray(sizes) + 1)]).astype(np.int64)


def _tied_block(rng, kinds, n_classes, weighted):
    """Every numeric attribute holds the same slots (a three-way tie); each categorical one holds all
    rows in one category (no split)."""
    m = int(rng.integers(5, 50))
    one, _ = _random_block(rng, [m], n_classes, weighted)
    parts = []
    for kind in kinds:
        if kind == 0:
            parts.append(one)
        else:
            cat = np.zeros((2, one.shape[1]))
            cat[0] = one.sum(axis=0)
            parts.append(cat)
    return np.concatenate(parts), np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_two_class_gini_scan_scores_as_the_general_scan(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 400))
    block = rng.integers(0, 3, (m + 1, 2)).astype(float)
    block[rng.random(m + 1) < 0.5] = 0.0
    if seed % 2:
        block[m] = 0.0  # no missing values: one search
    counted = np.column_stack([block, block.sum(axis=1)])  # a row-count channel takes the general path
    total = block.sum(axis=0)
    n_total = wn = float(total.sum())
    for min_leaf, min_weight in [(1.0, 0.0), (3.0, 0.0), (1.0, 5.0)]:
        fast, general = np.zeros(5), np.zeros(5)
        s1 = _numeric(block, 0, m, 2, False, total, n_total, wn, 0.0, CRITERIA["gini"], min_leaf, min_weight,
                      -np.inf, fast)
        s2 = _numeric(counted, 0, m, 2, True, total, n_total, wn, 0.0, CRITERIA["gini"], min_leaf, min_weight,
                      -np.inf, general)
        assert s1 == s2 and (s1 == -np.inf or np.array_equal(fast, general))


@pytest.mark.parametrize("criterion", ["gini", "entropy", "gain_ratio"])
@pytest.mark.parametrize("n_classes, weighted, multiway", [(2, False, False), (3, True, False), (2, True, True),
                                                           (4, False, True)])
def test_parallel_pairs_choose_what_the_node_search_chooses(criterion, n_classes, weighted, multiway):
    rng = np.random.default_rng(n_classes * 10 + weighted + 2 * multiway)
    kinds = np.array([0, 1, 0, 1, 0], np.int8)
    n_nodes = 7
    blocks, offsets = [], []
    for k in range(n_nodes):
        sizes = [int(rng.integers(1, 60)) if kinds[a] == 0 else int(rng.integers(1, 6)) for a in range(len(kinds))]
        b, o = _tied_block(rng, kinds, n_classes, weighted) if k == 3 else _random_block(rng, sizes, n_classes,
                                                                                         weighted)
        blocks.append(b)
        offsets.append(o)
    node_start = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    width = max(int(np.max(np.diff(o))) for o in offsets)
    got = best_splits(np.concatenate(blocks), node_start, np.array(offsets), kinds, n_classes, weighted,
                      CRITERIA[criterion], multiway, 1.0, 0.0, 8, width)
    for k in range(n_nodes):
        branch = np.zeros(width, np.int64)
        a, score, ls, rs, inf, nb = search_node(blocks[k], offsets[k], kinds, n_classes, weighted, CRITERIA[criterion],
                                                multiway, 1.0, 0.0, 8, branch)
        assert (got[0][k], got[2][k], got[3][k], got[4][k], got[5][k]) == (a, ls, rs, inf, nb)
        assert got[1][k] == score or (a < 0 and got[1][k] == -np.inf)
        if k == 3:
            assert a == 0  # the first of the tied attributes
        if a >= 0:
            m = offsets[k][a + 1] - offsets[k][a]
            np.testing.assert_array_equal(got[6][got[7][k]:got[7][k] + m], branch[:m])
