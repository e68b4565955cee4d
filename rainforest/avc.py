"""AVC-groups: per (node, attribute slot, class) weighted counts, built in one pass.

An AVC-group of a node is a ``(n_slots_total, n_channels)`` float64 array
(see :mod:`rainforest.criteria`); one pass builds the AVC-groups of a set
of frontier nodes at once, as one ``(n_nodes, n_slots_total, n_channels)``
array.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from .schema import CATEGORICAL, Schema, numeric_values, slot_of
from .tree import route_rows


@numba.njit(cache=True, parallel=True, nogil=True)
def accumulate(X, y, w, node_of_row, slot_offsets, kinds, cuts, cut_offsets, lut_lo, lut_scale, lut,
               lut_offsets, counts, count_rows):
    """Add each row's weight to ``counts[node, slot, class]`` for every attribute.

    ``X`` is the encoded batch; numeric values become slots here, only for rows whose
    node is in this pass.  Threads split the attributes, each owning its slots, so
    every cell is summed in row order whatever the number of threads: the result is
    identical to a serial run.  ``node_of_row`` is each row's index in the pass, -1 if none.
    """
    n, p = X.shape
    n_classes = counts.shape[2] - (1 if count_rows else 0)
    for a in numba.prange(p):
        base = slot_offsets[a]
        miss = slot_offsets[a + 1] - 1
        c = cuts[cut_offsets[a]:cut_offsets[a + 1]]
        table = lut[lut_offsets[a]:lut_offsets[a + 1]]
        lo = lut_lo[a]
        scale = lut_scale[a]
        numeric = kinds[a] == 0
        for i in range(n):
            k = node_of_row[i]
            if k < 0:
                continue
            v = X[i, a]
            if v != v:
                s = miss
            elif numeric:
                s = base + slot_of(v, c, table, lo, scale)
            else:
                s = base + int(v)
            counts[k, s, y[i]] += w[i]
            if count_rows:
                counts[k, s, n_classes] += 1.0


def row_weights(batch: pa.RecordBatch, schema: Schema, y: np.ndarray, class_weight: np.ndarray | None) -> np.ndarray:
    """Per-row weights: the weight column times the class weight (ones when neither is set)."""
    w = numeric_values(batch.column(schema.weight)) if schema.weight else np.ones(len(y))
    if class_weight is not None:
        w = w * class_weight[y]
    return w


@dataclass
class AvcSet:
    """The AVC-set of one attribute at one node: class counts per attribute value."""

    attribute: str
    values: list  # value of each row: a category, a numeric value (exact) or a bin's upper edge, or None (missing)
    counts: np.ndarray  # (len(values), n_classes)


@dataclass
class AvcGroup:
    """The AVC-sets of all attributes at one node."""

    classes: list
    sets: dict  # attribute -> AvcSet

    def __getitem__(self, attribute: str) -> AvcSet:
        return self.sets[attribute]


def avc_group(schema: Schema, block: np.ndarray) -> AvcGroup:
    """Readable :class:`AvcGroup` of one node's AVC array (value slots with no rows are dropped)."""
    offsets = schema.slot_offsets()
    n_classes = len(schema.label.classes)
    sets = {}
    for j, a in enumerate(schema.attributes):
        rows = block[offsets[j]:offsets[j + 1], :n_classes]
        if a.kind == CATEGORICAL:
            labels = list(a.categories)
        elif a.exact:
            labels = a.cuts.tolist()
        else:
            labels = a.cuts.tolist() + [np.inf]
        labels = labels + [None]
        keep = rows.sum(axis=1) > 0
        sets[a.name] = AvcSet(a.name, [v for v, k in zip(labels, keep) if k], rows[keep])
    return AvcGroup(list(schema.label.classes), sets)


@dataclass
class AvcState:
    """What a pass returns: the AVC-groups, and the rows it was asked to keep (RF-Hybrid)."""

    counts: np.ndarray
    kept: list = field(default_factory=list)  # Arrow tables, in row order


@dataclass
class AvcPass:
    """A :class:`storage.PassTask` building the AVC-groups of ``nodes`` of a growing tree.

    With ``keep`` (a flag per tree node), the rows reaching flagged nodes are also kept,
    so that their subtrees can be grown in memory.
    """

    schema: Schema
    routing: tuple  # arrays of the tree so far (see tree.route_rows)
    node_pos: np.ndarray  # tree node -> index in this pass, or -1
    n_nodes: int
    n_channels: int
    class_weight: np.ndarray | None
    weighted: bool
    keep: np.ndarray | None = None

    def new_state(self) -> AvcState:
        n_slots = int(self.schema.slot_offsets()[-1])
        return AvcState(np.zeros((self.n_nodes, n_slots, self.n_channels)))

    def update(self, state: AvcState, batch: pa.RecordBatch, first_row: int) -> AvcState:
        X = self.schema.encode(batch)
        y = self.schema.label.codes(batch.column(self.schema.label.name))
        w = row_weights(batch, self.schema, y, self.class_weight)
        leaf = route_rows(X, *self.routing)
        accumulate(X, y, w, self.node_pos[leaf], self.schema.slot_offsets(), self.schema.kinds,
                   *self.schema.slot_tables(), state.counts, self.weighted)
        if self.keep is not None:
            mask = self.keep[leaf]
            if mask.any():
                state.kept.append(pa.Table.from_batches([batch]).filter(pa.array(mask)))
        return state

    def merge(self, a: AvcState, b: AvcState) -> AvcState:
        a.counts += b.counts
        a.kept.extend(b.kept)
        return a


def root_avc(source, schema: Schema, batch_size: int = 65536) -> np.ndarray:
    """One pass counting the root's AVC-group (a last row-count channel when rows are weighted)."""
    weighted = schema.weight is not None
    n_attr = len(schema.attributes)
    root = (np.array([-2], np.int32), np.array([-2.0]), np.array([-1], np.int32), np.array([-1], np.int32),
            np.array([-1], np.int32), np.empty(0, np.int32), np.zeros(n_attr, np.int64))
    columns = schema.names + [schema.label.name] + ([schema.weight] if weighted else [])
    task = AvcPass(schema, root, np.zeros(1, np.int64), 1, len(schema.label.classes) + weighted, None, weighted)
    return source.run_pass(task, columns, batch_size).counts[0]
