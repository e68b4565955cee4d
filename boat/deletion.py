"""Which rows of a node's files a deletion removes: one row equal to each deleted row.

Rows are matched by pandas' row hash (equal rows hash equal; the work folder's column types are
the deleted rows' too, cast on the way in).  The node's files stream past batch by batch
(:meth:`rainforest.boat.cleanup.NodeFiles.rewrite`), so a node of millions of rows is never held
whole: only the deleted rows and their hashes are.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa


def row_hashes(rows: pa.Table | pa.RecordBatch) -> np.ndarray:
    """A 64-bit hash of each row's values, the same for a row in any batch."""
    return pd.util.hash_pandas_object(rows.to_pandas(), index=False).to_numpy()


class RowsToDelete:
    """The multiset of ``gone``'s rows: :meth:`keep` takes, in the order rows are met, the first
    row equal to each (as many as it holds), and :meth:`missing_row` names one not met."""

    def __init__(self, gone: pa.Table):
        self.gone = gone
        self.hashes = row_hashes(gone)
        self.values, counts = np.unique(self.hashes, return_counts=True)
        self.left = dict(zip(self.values.tolist(), counts.tolist()))

    def keep(self, batch: pa.RecordBatch) -> np.ndarray:
        """Flags of the rows of ``batch`` that stay."""
        h = row_hashes(batch)
        keep = np.ones(len(h), bool)
        for i in np.flatnonzero(np.isin(h, self.values)).tolist():
            key = int(h[i])
            if self.left[key] > 0:
                self.left[key] -= 1
                keep[i] = False
        return keep

    def missing_row(self) -> dict | None:
        """A deleted row that the rows met did not hold (enough times), or None."""
        for key, n in self.left.items():
            if n > 0:
                i = int(np.flatnonzero(self.hashes == np.uint64(key))[0])
                return self.gone.slice(i, 1).to_pylist()[0]
        return None
