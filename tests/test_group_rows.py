"""``avc.group_rows``: the rows of each counted node, in row order, as a serial stable sort gives
them, whatever the number of pieces and threads (the counting kernels sum each cell in that order)."""
import numba
import numpy as np
import pytest

from rainforest.avc import group_rows


def reference(node, node_pos, n_nodes):
    pos = node_pos[node]
    kept = np.flatnonzero(pos >= 0)
    order = kept[np.argsort(pos[kept], kind="stable")]
    sizes = np.bincount(pos[kept], minlength=n_nodes)
    ends = np.cumsum(sizes)
    return order, ends - sizes, ends


@pytest.mark.parametrize("n_rows, n_tree_nodes", [(0, 3), (1, 1), (7, 3), (1000, 5), (100_003, 700)])
def test_group_rows_is_a_stable_sort_on_every_thread_count(n_rows, n_tree_nodes):
    rng = np.random.default_rng(n_rows)
    node = rng.integers(0, n_tree_nodes, n_rows).astype(np.int32)
    node_pos = np.full(n_tree_nodes, -1, np.int32)
    counted = rng.permutation(n_tree_nodes)[:max(1, (2 * n_tree_nodes) // 3)]  # some nodes are not counted
    node_pos[counted] = np.arange(len(counted), dtype=np.int32)[::-1]  # places not in node order
    want = reference(node, node_pos, len(counted))
    before = numba.get_num_threads()
    try:
        for threads in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(threads)
            for n_pieces in (1, 3, 4 * threads, n_rows + 5):  # more pieces than rows too
                order, starts, ends = group_rows(node, node_pos, len(counted), n_pieces)
                assert order.dtype == np.int32
                for got, expected in zip((order, starts, ends), want):
                    np.testing.assert_array_equal(got, expected)
    finally:
        numba.set_num_threads(before)


def test_kept_partition_moves_down_two_levels_at_once_as_descend_routes_it():
    """A worker's kept partition (``KeptRows.of_blocks``) that stands two levels above the tree's
    frontier is moved there by ``advance_kept`` (two regroups): each node's rows are those
    ``descend`` routes there, in row order; the rows of a leaf no node counts any more are gone."""
    from rainforest.nodes import Nodes
    from rainforest.rows import KeptRows, RowBlock, advance_kept, descend

    nodes = Nodes()  # root split on attribute 0 at slot 1; its left child on attribute 1 at slot 2
    for depth in (0, 1, 1, 2, 2):
        nodes.add_leaf(np.zeros(2), 2, 0.0, depth)
    for k, (f, child, cut) in enumerate([(0, 1, 1), (1, 3, 2)]):
        nodes.feature[k], nodes.first_child[k], nodes.n_children[k], nodes.slot_cut[k] = f, child, 2, cut
        nodes.missing_branch[k] = 1
    routing = nodes.slot_routing(np.full(2, 8, np.int64))
    rng = np.random.default_rng(3)
    blocks = []
    for n in (5, 40, 17):  # the partition's pieces, in row order, all at the root
        S = np.asfortranarray(rng.integers(0, 6, (n, 2)).astype(np.uint8))
        blocks.append(RowBlock(S, rng.integers(0, 2, n).astype(np.uint8), np.empty(0), np.zeros(n, np.int32)))
    S = np.asfortranarray(np.vstack([b.S for b in blocks]))
    y = np.concatenate([b.y for b in blocks])
    kept = KeptRows.of_blocks(blocks, 1)
    assert kept.size == len(y) and list(kept.nodes) == [0]
    alive = np.array([False, False, True, True, False])  # node 4 is a leaf counted no more
    advance_kept(kept, routing, np.asarray(nodes.n_children, np.int64), alive)
    node = np.zeros(len(y), np.int32)
    descend(S, node, *routing)
    for k in range(5):
        start, end = kept.spans(np.arange(5, dtype=np.int32), 5)
        rows = np.flatnonzero(node == k) if alive[k] else np.empty(0, np.int64)
        np.testing.assert_array_equal(kept.S[start[k]:end[k]], S[rows])
        np.testing.assert_array_equal(kept.y[start[k]:end[k]], y[rows])
    assert kept.size == np.isin(node, [2, 3]).sum() < len(y)
    advance_kept(kept, routing, np.asarray(nodes.n_children, np.int64), alive)  # at the frontier: no move
    assert kept.size == np.isin(node, [2, 3]).sum()
