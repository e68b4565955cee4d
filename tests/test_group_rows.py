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
