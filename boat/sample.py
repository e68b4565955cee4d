"""BOAT's first pass: the exact profile and, in the same pass, a uniform sample of whole rows.

The sample is hash-based, not a reservoir: a row is in it when its :func:`rainforest.rowhash.row_hash`
(of its global row number and the seed) is among the ``size`` smallest, the scheme the profile
already uses for its binning sample.  So the sample is uniform, does not depend on batch sizes
or file layout, and two partial samples merge (keep the smallest hashes of both).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from rainforest.profile import Profile, ProfileTask
from rainforest.rowhash import row_hash


@dataclass
class RowSample:
    """Candidate rows (an Arrow table per batch) with their hashes and global row numbers."""

    parts: list = field(default_factory=list)
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def table(self) -> pa.Table | None:
        return pa.concat_tables(self.parts) if self.parts else None


@dataclass
class SampledProfile:
    profile: Profile
    sample: RowSample


@dataclass
class SampledProfileTask:
    """A :class:`rainforest.storage.PassTask`: :class:`rainforest.profile.ProfileTask` plus a row sample of
    ``size`` rows over ``columns``."""

    profile: ProfileTask
    columns: list
    size: int
    seed: int = 0

    def new_state(self) -> SampledProfile:
        return SampledProfile(self.profile.new_state(), RowSample())

    def update(self, state: SampledProfile, batch: pa.RecordBatch, first_row: int) -> SampledProfile:
        state.profile = self.profile.update(state.profile, batch, first_row)
        rows = np.arange(first_row, first_row + batch.num_rows, dtype=np.int64)
        h = row_hash(rows, self.seed)
        s = state.sample
        if len(s.hashes) >= self.size:  # only rows that can still enter are copied
            keep = np.flatnonzero(h < np.partition(s.hashes, self.size - 1)[self.size - 1])
            if len(keep) == 0:
                return state
            h, rows = h[keep], rows[keep]
            part = pa.Table.from_batches([batch.select(self.columns)]).take(pa.array(keep))
        else:
            part = pa.Table.from_batches([batch.select(self.columns)])
        self._add(s, part, h, rows)
        return state

    def _add(self, s: RowSample, part: pa.Table, h: np.ndarray, rows: np.ndarray) -> None:
        s.parts.append(part)
        s.hashes = np.concatenate([s.hashes, h])
        s.rows = np.concatenate([s.rows, rows])
        if len(s.hashes) > 2 * self.size:
            self._prune(s)

    def _prune(self, s: RowSample) -> None:
        """Keep the ``size`` smallest hashes, in row order (one table)."""
        table = s.table()
        if len(s.hashes) > self.size:
            keep = np.argpartition(s.hashes, self.size - 1)[:self.size]
        else:
            keep = np.arange(len(s.hashes))
        keep = keep[np.argsort(s.rows[keep], kind="stable")]
        s.parts = [table.take(pa.array(keep))] if table is not None else []
        s.hashes, s.rows = s.hashes[keep], s.rows[keep]

    def merge(self, a: SampledProfile, b: SampledProfile) -> SampledProfile:
        a.profile = self.profile.merge(a.profile, b.profile)
        if b.sample.parts:
            self._add(a.sample, b.sample.table(), b.sample.hashes, b.sample.rows)
        return a

    def sample_table(self, state: SampledProfile) -> pa.Table:
        """The final sample: at most ``size`` rows, in row order."""
        self._prune(state.sample)
        table = state.sample.table()
        return table if table is not None else pa.table({c: [] for c in self.columns})
