"""The columns a forest counts (its schema's attributes, then Forest-RC's combinations) encoded
from a batch, and the forest's RF-Hybrid store: every row of the data encoded once for all trees."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .combinations import Combinations
from .count_bins import CountedSlots, counted_slots
from .row_encoding import encode_rows, to_slots
from .rows import KeptRows, slot_dtype
from .schema import Schema


@dataclass
class Columns:
    """The columns a forest's passes count: the schema's attributes, then Forest-RC's combinations."""

    schema: Schema
    combos: Combinations | None
    class_weight: np.ndarray | None
    weighted: bool
    counted: CountedSlots | None = None  # what the AVC-groups count (None: every slot, exact mode's too)

    def __post_init__(self):
        self.attributes = list(self.schema.attributes)
        if self.combos is not None:
            self.attributes += self.combos.attributes(self.schema.names)
            self.combo_schema = Schema(self.combos.attributes(self.schema.names))
        self.column_schema = Schema(self.attributes)  # every counted column, combinations included
        self.n_slots = np.array([a.n_slots for a in self.attributes], np.int64)
        self.kinds = np.array([a.kind for a in self.attributes], np.int8)
        self.dtype = slot_dtype(self.column_schema)
        if self.counted is None:
            self.counted = counted_slots(self.column_schema, None)

    @property
    def counted_sizes(self) -> np.ndarray:
        """Each attribute's counted slots, its missing slot included (its size in an AVC-group)."""
        return self.counted.n_counted.astype(np.int64) + 1

    @property
    def width(self) -> int:
        return len(self.attributes)

    def encode(self, batch: pa.RecordBatch) -> tuple:
        """The slots (rows x columns, column-major), class codes and weights (empty if all one) of a batch."""
        rows = encode_rows(self.schema, batch, self.class_weight)
        if self.combos is None:
            return rows.S, rows.y, rows.w
        V = self.combos.values(self.schema.encode(batch))
        S = np.empty((len(rows.y), self.width), self.dtype, order="F")
        p = len(self.schema.attributes)
        S[:, :p] = rows.S
        SC = np.empty(V.shape, self.dtype, order="F")
        cs = self.combo_schema
        to_slots(np.asfortranarray(V), cs.kinds, self.n_slots[p:], *cs.slot_tables(), SC)
        S[:, p:] = SC
        return S, rows.y, rows.w

    @property
    def label_dtype(self) -> np.dtype:
        """How kept rows hold the label: an int32 class code, or a regressor's float64 target."""
        return np.dtype(np.float64 if self.schema.label.regression else np.int32)

    def row_bytes(self) -> int:
        """Bytes of one row kept in memory (slots, class code or target, weight)."""
        return self.width * self.dtype.itemsize + self.label_dtype.itemsize + (8 if self.weighted else 0)


def data_rows(n: int, columns: Columns) -> KeptRows:
    """Room for every row of the data (``n``, the profile's count), encoded, kept once for all trees
    (the forest's RF-Hybrid): the tree's :class:`rainforest.rows.KeptRows` with one group, the root,
    filled in row order."""
    return KeptRows([0], [n], 1, columns.width, columns.dtype, columns.label_dtype, columns.weighted)
