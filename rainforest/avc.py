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

from .rows import RowBlock, descend, encode_rows
from .schema import CATEGORICAL, Schema


@numba.njit(cache=True, parallel=True, nogil=True)
def accumulate(S, y, w, pos, attrs, offsets, counts, count_rows):
    """Add each row's weight to ``counts[pos[i], offsets[j] + S[i, attrs[j]], y[i]]`` for the
    counted attributes ``attrs`` (all of them, or a group of them under RF-Vertical).

    ``pos`` is each row's node index in this pass, -1 if its node is not counted; ``w`` is
    empty when every weight is one.  Threads split the attributes, each owning its slots, so
    every cell is summed in row order whatever the number of threads: the result is identical
    to a serial run.
    """
    n = S.shape[0]
    n_classes = counts.shape[2] - (1 if count_rows else 0)
    unit = w.shape[0] == 0
    for j in numba.prange(attrs.shape[0]):
        a = attrs[j]
        base = offsets[j]
        for i in range(n):
            k = pos[i]
            if k < 0:
                continue
            s = base + S[i, a]
            counts[k, s, y[i]] += 1.0 if unit else w[i]
            if count_rows:
                counts[k, s, n_classes] += 1.0


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
    """What a pass returns: the AVC-groups, and the rows it was asked to keep (RF-Hybrid) when
    they are not kept in place."""

    counts: np.ndarray
    kept: list = field(default_factory=list)  # RowBlocks, in row order


@dataclass
class AvcPass:
    """A :class:`storage.PassTask` building the AVC-groups of ``n_nodes`` frontier nodes of a
    growing tree, over the attributes ``attrs``.

    ``routing`` is ``(feature, first_child, slot_branch, branch_offset)`` of the tree so far (see
    :func:`rainforest.rows.descend`); ``node_pos`` maps a tree node to its index in the pass, or -1.
    With ``keep`` (a flag per tree node) the rows reaching flagged nodes are kept too: into
    ``keep_into`` (a :class:`rainforest.rows.KeptRows`) for a local source, else in the state.
    ``spill`` (RF-Write), when set, receives every counted block of rows.
    """

    schema: Schema
    routing: tuple
    node_pos: np.ndarray
    n_nodes: int
    n_channels: int
    class_weight: np.ndarray | None
    weighted: bool
    attrs: np.ndarray
    keep: np.ndarray | None = None
    keep_into: object = None
    spill: object = None

    def new_state(self) -> AvcState:
        offsets = self.schema.slot_offsets()
        n_slots = int(sum(offsets[a + 1] - offsets[a] for a in self.attrs))
        return AvcState(np.zeros((self.n_nodes, n_slots, self.n_channels)))

    def update(self, state: AvcState, batch: pa.RecordBatch, first_row: int) -> AvcState:
        return self.count(state, encode_rows(self.schema, batch, self.class_weight, self.weighted))

    def count(self, state: AvcState, rows: RowBlock) -> AvcState:
        """Count encoded rows (from a data pass, memory or the spill folder) at their frontier nodes."""
        descend(rows.S, rows.node, *self.routing)
        offsets = self.schema.slot_offsets()
        group_offsets = np.concatenate([[0], np.cumsum(offsets[self.attrs + 1] - offsets[self.attrs])])
        accumulate(rows.S, rows.y, rows.w, self.node_pos[rows.node], self.attrs, group_offsets, state.counts,
                   self.weighted)
        if self.keep is not None:
            mask = self.keep[rows.node]
            if mask.any():
                kept = rows.take(mask)
                if self.keep_into is not None:
                    self.keep_into.add(kept)
                else:
                    state.kept.append(kept)
        if self.spill is not None:
            self.spill(rows)
        return state

    def merge(self, a: AvcState, b: AvcState) -> AvcState:
        a.counts += b.counts
        a.kept.extend(b.kept)
        return a


ROOT_ROUTING = (np.array([-2], np.int32), np.array([-1], np.int32), np.zeros(1, np.int32), np.array([-1], np.int32))


def root_avc(source, schema: Schema, batch_size: int = 65536) -> np.ndarray:
    """One pass counting the root's AVC-group (a last row-count channel when rows are weighted)."""
    weighted = schema.weight is not None
    columns = schema.names + [schema.label.name] + ([schema.weight] if weighted else [])
    task = AvcPass(schema, ROOT_ROUTING, np.zeros(1, np.int64), 1, len(schema.label.classes) + weighted, None,
                   weighted, np.arange(len(schema.attributes)))
    return source.run_pass(task, columns, batch_size).counts[0]
