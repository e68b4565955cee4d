"""The blockwise stable partition shared by the row groups kept in memory
(:meth:`rainforest.rows.KeptRows.regroup`) and the forest's per-tree copies
(:func:`rainforest.in_bag.partition_spans`).

A group of rows is cut into blocks that threads take in turn; each block routes its rows one
step and counts them per branch; then, group by group, :func:`place` turns the counts into
where each block's rows of each branch go (branch by branch, block by block), and the blocks
copy their rows there.  Every child's rows are so in row order, whatever the number of threads.
The users differ only in how a row is routed and copied (columns, or whole-word records).
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def cut_blocks(spans, block):
    """Cut each group of ``spans[g]`` rows into blocks of ``block`` rows (an empty group is one
    empty block): ``(first_task, task_group)``, group ``g``'s blocks being tasks
    ``first_task[g]:first_task[g + 1]``."""
    n_groups = spans.shape[0]
    first_task = np.zeros(n_groups + 1, np.int64)
    for g in range(n_groups):
        first_task[g + 1] = first_task[g] + max(1, -(-spans[g] // block))
    task_group = np.empty(first_task[n_groups], np.int64)
    for g in range(n_groups):
        for t in range(first_task[g], first_task[g + 1]):  # a loop: a slice assignment compiles numpy's setitem
            task_group[t] = g
    return first_task, task_group


@numba.njit(cache=True, nogil=True, inline="always")
def place(start, nb, sizes, child_start):
    """Where each block's rows of each branch go: branch by branch, block by block, from ``start``
    (``sizes[block, b]`` turns from a count into a first row); branch ``b``'s rows are
    ``child_start[b]:child_start[b + 1]``."""
    v = start
    for b in range(nb):
        child_start[b] = v
        for blk in range(sizes.shape[0]):
            rows_b = sizes[blk, b]
            sizes[blk, b] = v
            v += rows_b
    child_start[nb] = v
