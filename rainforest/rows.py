"""Encoded rows: the compact form in which growth counts, keeps and spills rows.

A row becomes its *slots*: per attribute the index of its value's AVC slot
(a bin, an exact value's rank or key (:mod:`rainforest.value_keys`), a category code; the
attribute's last slot is "missing"), its class code, its weight (omitted when all weights are one)
and the tree node it has reached.  Slots take one byte per attribute in
binned mode, so rows kept in memory (RF-Hybrid) or written to the spill
folder (RF-Write) cost a fraction of their decoded size, and every later
level routes and counts them without decoding or searching cuts again (a batch's rows become
slots in :mod:`rainforest.row_encoding`).

:func:`rainforest.avc.accumulate` counts rows from every supply.  Rows of a data pass or a
spill partition are moved to the frontier by :func:`descend` and grouped by node through an
index; rows kept in memory (:class:`KeptRows`) stay grouped by node and move down a level at a
time (:meth:`KeptRows.regroup`), so they are counted in sequence.  :func:`step` is the routing
step itself, which the random forest's kernels (:mod:`rainforest.forest_kernels`,
:mod:`rainforest.in_bag`) share.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from .partition import cut_blocks, place
from .schema import NUMERIC, Schema, present_rows

_INT64 = np.dtype(np.int64)
_UNSIGNED = [(np.dtype(t), np.iinfo(t).max) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]  # and their tops


def slot_dtype(schema: Schema) -> np.dtype:
    """The narrowest unsigned type holding every attribute's slots (missing slot included); int64 where
    an attribute is keyed (:mod:`rainforest.value_keys`: keys are signed, ordered as int64)."""
    types = column_dtypes(schema)
    return _INT64 if _INT64 in types else max(types, key=lambda t: t.itemsize)


def column_dtypes(schema: Schema) -> list[np.dtype]:
    """Per attribute, the narrowest type holding its own slots: how the spill folder stores each
    column (rows in memory hold every column in :func:`slot_dtype`, which a keyed attribute widens
    to int64 for all)."""
    return [_INT64 if a.kind == NUMERIC and a.keys is not None else next(t for t, top in _UNSIGNED if a.n_slots <= top)
            for a in schema.attributes]


REGROUP_ROWS = 1 << 14  # rows of a thread's task (at least) when kept rows move down a level


def class_dtype(n_classes: int) -> np.dtype:
    """The narrowest unsigned type holding every class code."""
    return np.dtype(np.uint8 if n_classes <= 256 else np.uint16 if n_classes <= 65536 else np.uint32)


def label_dtype(label) -> np.dtype:
    """How rows hold their label: the narrowest class code type, or a regressor's float64 target (less
    the label's shift)."""
    return np.dtype(np.float64) if label.regression else class_dtype(len(label.classes))


def row_bytes(schema: Schema, weighted: bool) -> int:
    """Bytes of one row kept in memory (:class:`KeptRows`): slots, class code, weight (8, when not all
    ones) and the branch :meth:`KeptRows.regroup` routes it to (:func:`branch_dtype`).

    ``regroup`` moves the rows into a second buffer of the same size: that one lives in the quarter
    of the budget that a data pass's batches use, since kept rows are regrouped only between
    passes, never while a batch is in flight."""
    slot = slot_dtype(schema).itemsize
    return len(schema.attributes) * slot + label_dtype(schema.label).itemsize + (8 if weighted else 0) \
        + branch_dtype(max([a.n_slots + 1 for a in schema.attributes if a.kind != NUMERIC], default=2)).itemsize


def branch_dtype(n_children: int) -> np.dtype:
    """The narrowest unsigned type holding a branch among ``n_children`` (a numeric split has two, a
    multiway categorical one at most its attribute's slots).  Not the slots' type: where a column is
    keyed the slots are int64, and an 8-byte branch made an exact Agrawal row 81 bytes where 74 do."""
    return next(t for t, top in _UNSIGNED if n_children - 1 <= top)


@numba.njit(cache=True, nogil=True, inline="always")
def step(S, i, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """The child of the split node ``k`` that row ``i`` of ``S`` goes to (see :func:`descend`): the
    one routing step of every kernel that moves encoded rows down a tree."""
    f = np.uint64(feature[k])  # unsigned: no check for a negative index (callers' i and k may be too)
    s = S[i, f]
    if branch_offset[k] >= 0:
        b = slot_branch[np.uint64(branch_offset[k] + s)]
    elif s == n_slots[f]:
        b = missing_branch[k]
    else:
        b = 0 if s <= slot_cut[k] else 1
    return first_child[k] + b


@numba.njit(cache=True, nogil=True, inline="always")
def walk(S, i, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """The leaf (or frontier node) that row ``i`` of ``S`` reaches from node ``k``, by :func:`step`."""
    while first_child[k] >= 0:
        k = step(S, i, k, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots)
    return k


@numba.njit(cache=True, parallel=True, nogil=True)
def descend(S, node, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """Move each row from ``node[i]`` down to the leaf (or frontier node) its slots lead to.

    A categorical split routes by its table ``slot_branch[branch_offset[k] + s]``; a numeric one
    sends slots up to ``slot_cut[k]`` to its first child and the rest to its second, and the
    missing slot ``n_slots[a]`` to ``missing_branch[k]``.  That is the partition the split search
    counted (slots holding no row of the node may go either way), so rows go exactly where they
    were counted, and exact mode needs no table as long as the attribute's distinct values."""
    for i in numba.prange(node.shape[0]):
        node[i] = walk(S, i, node[i], feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch,
                       n_slots)


def rows_of(S: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The ``rows`` of column-major slots ``S``, column-major, taken column by column (``S[rows]``
    would gather across the columns)."""
    out = np.empty((len(rows), S.shape[1]), S.dtype, order="F")
    for j in range(S.shape[1]):
        np.take(S[:, j], rows, out=out[:, j])
    return out


@dataclass
class RowBlock:
    """Encoded rows in row order: ``S`` (rows x attributes, column-major), class codes ``y``,
    weights ``w`` (empty when all are one) and the node ``node`` each row has reached.  A block read
    from the spill as bins (:meth:`rainforest.spill.Spill.read`) holds its keyed columns' bins in
    ``S`` and says in ``keys`` where their keys are; one read with both holds the bins in ``bins``."""

    S: np.ndarray
    y: np.ndarray
    w: np.ndarray
    node: np.ndarray
    keys: object = None  # rainforest.spill.SpilledKeys of a block read as bins
    bins: np.ndarray | None = None  # keyed columns' bins beside their keys in S (a spill read of both)

    def __len__(self) -> int:
        return self.y.shape[0]

    @property
    def nbytes(self) -> int:
        return self.S.nbytes + self.y.nbytes + self.w.nbytes + self.node.nbytes

    def take(self, mask: np.ndarray) -> "RowBlock":
        rows = np.flatnonzero(mask)
        return RowBlock(rows_of(self.S, rows), self.y[rows], self.w[rows] if len(self.w) else self.w, self.node[rows])

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the rows of ``mask``, in place (their order unchanged)."""
        kept = self.take(mask)
        self.S, self.y, self.w, self.node = kept.S, kept.y, kept.w, kept.node

    def present(self) -> "RowBlock":
        """The rows that count: those of weight 0 left out (:func:`rainforest.schema.present_rows`)."""
        keep = present_rows(self.w)
        return self if keep is None else self.take(keep)

    def to_arrow(self) -> pa.RecordBatch:
        """As an Arrow batch (columns ``s0..``, ``y``, ``node`` and ``w`` when weighted), for spilling."""
        cols = [pa.array(self.S[:, j]) for j in range(self.S.shape[1])] + [pa.array(self.y), pa.array(self.node)]
        names = [f"s{j}" for j in range(self.S.shape[1])] + ["y", "node"]
        if len(self.w):
            cols.append(pa.array(self.w))
            names.append("w")
        return pa.RecordBatch.from_arrays(cols, names=names)

    @classmethod
    def from_arrow(cls, batch: pa.RecordBatch, n_attributes: int) -> "RowBlock":
        S = np.empty((batch.num_rows, n_attributes), batch.column(0).type.to_pandas_dtype(), order="F")
        for j in range(n_attributes):
            S[:, j] = batch.column(j).to_numpy()
        w = batch.column("w").to_numpy() if "w" in batch.schema.names else np.empty(0)
        return cls(S, batch.column("y").to_numpy(), w, batch.column("node").to_numpy().copy())


class KeptRows:
    """Rows kept in memory by RF-Hybrid, grouped by the node they have reached, each group in row
    order (like scikit-learn's sample index): group ``g`` (tree node ``nodes[g]``) is rows
    ``starts[g]:ends[g]`` of ``S, y, w``.  A level then counts each node's rows in sequence
    (:func:`rainforest.avc.accumulate` without an index) and :meth:`regroup` moves them into their
    children's groups, so no row is routed from the root or looked up through an index again.

    The groups are laid out when the rows are pulled, from the node row counts the counting found,
    and filled by :meth:`add` as the pass streams its rows in row order; the arrays are sized in
    advance, so keeping ``n`` rows never holds more than ``n`` rows (twice, once regrouping:
    see :func:`row_bytes`)."""

    def __init__(self, nodes: list[int], rows_of: list[int], n_tree_nodes: int, n_attributes: int, dtype,
                 class_type, weighted: bool):
        capacity = int(sum(rows_of))
        self.S = np.empty((capacity, n_attributes), dtype, order="F")
        self.y = np.empty(capacity, class_type)
        self.w = np.empty(capacity if weighted else 0)
        order = np.argsort(nodes, kind="stable")
        self.nodes = np.asarray(nodes, np.int64)[order]
        self.starts = np.concatenate([[0], np.cumsum(np.asarray(rows_of, np.int64)[order])[:-1]])
        self.limits = self.starts + np.asarray(rows_of, np.int64)[order]
        self.ends = self.starts.copy()  # filled up to here
        self.group_of = np.full(n_tree_nodes, -1, np.int64)
        self.group_of[self.nodes] = np.arange(len(self.nodes))
        self.spare = None  # the second buffer :meth:`regroup` moves rows into
        self.branch = None  # each row's branch while :meth:`regroup` moves it

    @classmethod
    def of_blocks(cls, blocks: list[RowBlock], n_tree_nodes: int) -> "KeptRows":
        """The rows of ``blocks`` (in row order, each at the node it has reached), grouped by node: a
        Dask worker's kept partition (:meth:`rainforest.avc.AvcPass.hold`)."""
        first = blocks[0]
        per_node = np.zeros(n_tree_nodes, np.int64)
        for b in blocks:
            per_node += np.bincount(b.node, minlength=n_tree_nodes)
        nodes = np.flatnonzero(per_node)
        kept = cls(list(nodes), list(per_node[nodes]), n_tree_nodes, first.S.shape[1], first.S.dtype, first.y.dtype,
                   len(first.w) > 0)
        for b in blocks:
            kept.add(b)
        return kept

    @property
    def size(self) -> int:
        return int((self.ends - self.starts).sum())

    def add(self, block: RowBlock) -> None:
        """Keep the rows of ``block`` (at their frontier nodes) whose node has a group."""
        if len(self.nodes) == 1 and (block.node == self.nodes[0]).all():  # the root's rows: copied as columns
            v, n = int(self.ends[0]), len(block)
            if v + n > self.limits[0]:
                raise RuntimeError("more rows reached the kept nodes than the counting found")
            self.S[v:v + n] = block.S
            self.y[v:v + n] = block.y
            if len(self.w):
                self.w[v:v + n] = block.w
            self.ends[0] = v + n
        elif not _keep_rows(block.S, block.y, block.w, block.node, self.group_of, self.limits, self.ends,
                          self.S, self.y, self.w):  # the counts were exact, so this is a bug
            raise RuntimeError("more rows reached the kept nodes than the counting found")

    def release_spare(self) -> None:
        """Drop :meth:`regroup`'s second buffer: a worker keeps many partitions, and regroups one at a time."""
        self.spare = None
        self.branch = None

    def spans(self, node_pos: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
        """``starts, ends`` of the rows of each counted node (``node_pos``: tree node -> index, or -1)."""
        starts, ends = np.zeros(n_nodes, np.int64), np.zeros(n_nodes, np.int64)
        at = node_pos[self.nodes]
        mine = at >= 0
        starts[at[mine]], ends[at[mine]] = self.starts[mine], self.ends[mine]
        return starts, ends

    def regroup(self, routing: tuple, n_children: np.ndarray, alive: np.ndarray) -> None:
        """Move every row one step down the tree (``routing``: :func:`descend`'s arrays; ``n_children``
        per node) into its child's group, in row order; rows of nodes not flagged in ``alive`` are dropped."""
        nodes = np.flatnonzero(alive)  # the new groups, in node order: children follow their parents
        new_group = np.full(len(alive), -1, np.int64)
        new_group[nodes] = np.arange(len(nodes))
        if len(nodes) == 0:  # the last level: every row has reached a leaf
            self.nodes, self.starts, self.ends = nodes, np.zeros(0, np.int64), np.zeros(0, np.int64)
            self.limits, self.group_of = np.zeros(0, np.int64), new_group
            return
        if self.spare is None:
            self.spare = (np.empty_like(self.S, order="F"), np.empty_like(self.y), np.empty_like(self.w))
        wide = branch_dtype(int(n_children.max(initial=2)))
        if self.branch is None or self.branch.dtype.itemsize < wide.itemsize:
            self.branch = np.empty(len(self.y), wide)
        S2, y2, w2 = self.spare
        starts, ends = np.zeros(len(nodes), np.int64), np.zeros(len(nodes), np.int64)
        block = max(REGROUP_ROWS, -(-self.size // (4 * numba.get_num_threads())))  # 4 tasks a thread, or more
        _regroup_rows(self.S, self.y, self.w, self.starts, self.ends, self.nodes, n_children, new_group, block,
                      self.branch, S2, y2, w2, starts, ends, *routing)
        self.spare = (self.S, self.y, self.w)
        self.S, self.y, self.w = S2, y2, w2
        self.nodes, self.starts, self.ends, self.limits = nodes, starts, ends, ends.copy()
        self.group_of = new_group


def advance_kept(kept: KeptRows, routing: tuple, n_children: np.ndarray, alive: np.ndarray | None) -> None:
    """Move kept rows down to the nodes a pass counts: one :meth:`KeptRows.regroup` per level the tree
    has grown since they were placed (a worker's kept partition stands where the last pass left it);
    ``alive`` (None: every node) flags the nodes whose rows are still needed.  Each step's groups are
    exactly the nodes rows reach in it (a node split since is passed through whatever its flag), so no
    two groups ever claim one node."""
    first_child = routing[1]
    internal = first_child >= 0
    wanted = np.ones(len(first_child), bool) if alive is None else alive
    while True:
        holding = kept.nodes[kept.ends > kept.starts]
        moving = holding[internal[holding]]
        if len(moving) == 0:
            return
        reached = np.concatenate([np.arange(first_child[k], first_child[k] + n_children[k]) for k in moving])
        staying = holding[~internal[holding]]
        groups = np.zeros(len(first_child), bool)
        groups[reached] = wanted[reached] | internal[reached]
        groups[staying] = wanted[staying]
        kept.regroup(routing, n_children, groups)


@numba.njit(cache=True, nogil=True)
def _keep_rows(S, y, w, node, group_of, limits, ends, S_out, y_out, w_out):
    """Append each row whose node has a group to it (rows arrive in row order, so groups stay in it);
    False when a group would overflow."""
    weighted = w_out.shape[0] > 0
    for i in range(node.shape[0]):
        g = group_of[node[i]]
        if g < 0:
            continue
        v = ends[g]
        if v >= limits[g]:
            return False
        for a in range(S.shape[1]):
            S_out[v, a] = S[i, a]
        y_out[v] = y[i]
        if weighted:
            w_out[v] = w[i]
        ends[g] = v + 1
    return True


def _block_cells(starts, ends, group_node, n_children, block):
    """The blocks of :func:`_regroup_rows` (``first_task``, ``task_group``) and their cells: a count
    per (block, branch), starting at ``first_cell[g]`` for group ``g``.  (Plain numpy over the groups:
    a kernel of its own cost 0.7 s to compile.)"""
    first_task, task_group = cut_blocks(ends - starts, block)
    per_block = np.maximum(1, n_children[group_node])
    first_cell = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(np.diff(first_task) * per_block, out=first_cell[1:])
    return first_task, task_group, first_cell, np.zeros(first_cell[-1], np.int64)


@numba.njit(cache=True, nogil=True)
def _place_children(first_task, first_cell, cells, group_node, n_children, new_group, first_child, new_starts,
                    new_ends):
    """Turn each block's branch counts into where its rows go (:func:`rainforest.partition.place`), the
    groups following one another; -1 for the rows of a dropped child."""
    n_groups = group_node.shape[0]
    widest = 1
    for k in range(n_children.shape[0]):  # a loop, not n_children.max(): numpy's max costs 0.45 s to compile
        widest = max(widest, n_children[k])
    child_start = np.empty(widest + 1, np.int64)
    v = 0
    for g in range(n_groups):
        k = group_node[g]
        n_tasks_g = first_task[g + 1] - first_task[g]
        width = (first_cell[g + 1] - first_cell[g]) // n_tasks_g
        sizes = cells[first_cell[g]:first_cell[g + 1]].reshape((n_tasks_g, width))
        for b in range(width):  # a dropped child's rows take no room
            if new_group[k if first_child[k] < 0 else first_child[k] + b] < 0:
                for blk in range(n_tasks_g):
                    sizes[blk, b] = 0
        place(v, width, sizes, child_start)
        for b in range(width):
            p = new_group[k if first_child[k] < 0 else first_child[k] + b]
            if p >= 0:
                new_starts[p], new_ends[p] = child_start[b], child_start[b + 1]
            else:
                for blk in range(n_tasks_g):
                    sizes[blk, b] = -1  # its rows are not copied
        v = child_start[width]


def _regroup_rows(S, y, w, starts, ends, group_node, n_children, new_group, block, branch, S2, y2, w2, new_starts,
                  new_ends, feature, first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """:meth:`KeptRows.regroup`'s stable partition (:mod:`rainforest.partition`): each group is cut
    into blocks of ``block`` rows that threads take in turn; a block routes its rows one step
    (:func:`step`), noting each row's branch in ``branch``, and counts them per branch
    (:func:`_route_blocks`); :func:`rainforest.partition.place` gives each block where its rows of
    each branch go, the groups following one another (:func:`_place_children`), and the blocks copy
    their rows there (:func:`_copy_blocks`).  Every child's group is its rows in row order, whatever
    the number of threads.

    A numpy step and three kernels called in turn, not one kernel: the one ``parallel=True`` kernel
    holding both loops over blocks took 4 s to compile, a third of ``rainforest demo``'s first run."""
    first_task, task_group, first_cell, cells = _block_cells(starts, ends, group_node, n_children, block)
    _route_blocks(S, starts, ends, group_node, task_group, first_task, first_cell, cells, block, branch, feature,
                  first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots)
    _place_children(first_task, first_cell, cells, group_node, n_children, new_group, first_child, new_starts,
                    new_ends)
    _copy_blocks(S, y, w, starts, ends, task_group, first_task, first_cell, cells, block, branch, S2, y2, w2)


@numba.njit(cache=True, parallel=True, nogil=True)
def _route_blocks(S, starts, ends, group_node, task_group, first_task, first_cell, cells, block, branch, feature,
                  first_child, slot_branch, branch_offset, slot_cut, missing_branch, n_slots):
    """Each row's branch into ``branch``, each block's count per branch into its cells."""
    for task in numba.prange(task_group.shape[0]):
        g = task_group[task]
        k = group_node[g]
        width = (first_cell[g + 1] - first_cell[g]) // (first_task[g + 1] - first_task[g])
        base = first_cell[g] + (task - first_task[g]) * width
        lo = starts[g] + (task - first_task[g]) * block
        fc = first_child[k]
        for i in range(lo, min(ends[g], lo + block)):
            u = np.uint64(i)  # unsigned indices: no check for a negative index
            b = 0 if fc < 0 else step(S, u, k, feature, first_child, slot_branch, branch_offset, slot_cut,
                                      missing_branch, n_slots) - fc
            branch[u] = b
            cells[np.uint64(base + b)] += 1


@numba.njit(cache=True, parallel=True, nogil=True)
def _copy_blocks(S, y, w, starts, ends, task_group, first_task, first_cell, cells, block, branch, S2, y2, w2):
    """Each row copied where its block's cell for its branch says (-1: a dropped child's rows, not copied)."""
    weighted = w.shape[0] > 0
    for task in numba.prange(task_group.shape[0]):
        g = task_group[task]
        width = (first_cell[g + 1] - first_cell[g]) // (first_task[g + 1] - first_task[g])
        base = first_cell[g] + (task - first_task[g]) * width
        lo = starts[g] + (task - first_task[g]) * block
        for i in range(lo, min(ends[g], lo + block)):
            u = np.uint64(i)  # unsigned indices: no check for a negative index
            cell = np.uint64(base + branch[u])
            d = cells[cell]
            if d < 0:
                continue
            cells[cell] = d + 1
            v = np.uint64(d)
            for a in range(S.shape[1]):
                S2[v, np.uint64(a)] = S[u, np.uint64(a)]
            y2[v] = y[u]
            if weighted:
                w2[v] = w[u]
