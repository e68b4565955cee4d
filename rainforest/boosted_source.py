"""The source a boosting round reads: its base with the round's columns added (the rows' boosting
weights, computed from the learners so far as the rows stream by), and the pass tasks it runs.

Over a base that folds its passes away from this process (a Dask cluster), the weights are
computed where the rows live (:class:`WeighedTask`), and a round's tree may keep its weighted,
encoded rows there (the base's row store), as it keeps them in memory over a local base.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from rainforest.storage import Source
from rainforest.storage.worker_memo import remembered


@dataclass
class BoostedSource(Source):
    """``base`` with the columns ``weigh(batch, first_row)`` computes (the boosting weight, a flag) added;
    ``first_row`` is the batch's first row's position in the pass (the rows come in the base's order)."""

    base: Source = None
    weigh: Callable[[pa.RecordBatch, int], dict] = None
    needed: list = field(default_factory=list)  # base columns ``weigh`` reads
    added: dict = field(default_factory=dict)  # name -> Arrow type
    # where a distributed base's passes keep each batch's slots for the fit's later rounds (a fit id of
    # rainforest.storage.worker_memo, and its room a process; None: encoded anew at every round)
    slots_memo: str | None = None
    slots_room: int = 0

    @property
    def schema(self) -> pa.Schema:
        s = self.base.schema
        for name, typ in self.added.items():
            s = s.append(pa.field(name, typ))
        return s

    @property
    def description(self) -> str:
        return self.base.description

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        first = 0
        for batch in self.base._batches(self._read(columns), batch_size):
            yield _with_columns(batch, self.weigh(batch, first), self.added, columns)
            first += batch.num_rows

    @property
    def distributed(self) -> bool:
        """Whether growth must keep and spill no rows here: when the base folds the weighted rows away
        from this process (Dask).  A SQL base folds them here, whatever its transfer mode (the weights
        are computed in Python), so growth keeps them as from any local source."""
        return self.base.folds_elsewhere

    def copied(self, columns: Sequence[str]) -> bool:
        """Whether the base serves these rows from its local copy (then a round costs no pass over it)."""
        return self.base.copied(self._read(columns))

    def _read(self, columns: Sequence[str]) -> list:
        return list(dict.fromkeys([c for c in columns if c not in self.added] + self.needed))

    @property
    def keeps_partitions(self) -> bool:
        """Whether a round's tree may keep the weighted, encoded rows where the base's partitions are
        read (a Dask cluster's workers): the round's first growth pass computes the weights and
        encodes the rows there, and its later levels count them without reading the source."""
        return getattr(self.base, "keeps_partitions", False)

    def open_store(self, budget_bytes: int, row_bytes: int):
        return self.base.open_store(budget_bytes, row_bytes)

    def close_store(self, store) -> None:
        self.base.close_store(store)

    def run_pass(self, task, columns: Sequence[str], batch_size: int = 65536, progress=None):
        """One pass counted here; over a distributed base, the weights are computed where the rows live."""
        if not getattr(self.base, "distributed", False):
            return super().run_pass(task, columns, batch_size, progress)
        self.check_columns(columns)
        weighed = WeighedTask(task, self.weigh, self.added, list(columns), self.slots_memo, self.slots_room)
        # the pass is this source's (AdaBoost counts rounds on it), not the base's; one served from what the
        # base keeps (a round's encoded rows, or the fit's raw batches on the workers) counts none
        before = self.base.n_passes
        state = self.base.run_pass(weighed, self._read(columns), batch_size, progress)
        self.n_passes += self.base.n_passes - before
        self.base.n_passes = before
        return state


def _with_columns(batch: pa.RecordBatch, extra: dict, added: dict, columns) -> pa.RecordBatch:
    arrays = [extra[c] if c in added else batch.column(c) for c in columns]
    return pa.RecordBatch.from_arrays([pa.array(a) if isinstance(a, np.ndarray) else a for a in arrays],
                                      names=list(columns))


@dataclass
class WeighedTask:
    """``inner`` run on batches with ``weigh``'s columns added: BoostedSource's pass, shipped to a cluster."""

    inner: object
    weigh: Callable[[pa.RecordBatch, int], dict]
    added: dict
    columns: list
    # a fit id under which the worker keeps each batch's slots (and their room a process): a round then
    # weighs the rows from its learners' predictions on those slots, and encodes none (None: the raw rows)
    slots_memo: str | None = None
    slots_room: int = 0

    def new_state(self):
        return self.inner.new_state()

    def update(self, state, batch: pa.RecordBatch, first_row: int):
        return self.inner.update(state, self._weighed(batch, first_row), first_row)

    def merge(self, a, b):
        return self.inner.merge(a, b)

    def _weighed(self, batch: pa.RecordBatch, first_row: int) -> pa.RecordBatch:
        return _with_columns(batch, self.weigh(batch, first_row), self.added, self.columns)

    # the row store on a cluster (rainforest.storage.dask_store): the inner task's, on weighed batches
    @property
    def store(self):
        return getattr(self.inner, "store", None)

    @property
    def order_free(self) -> bool:
        return getattr(self.inner, "order_free", False)

    def encode(self, batch: pa.RecordBatch, first_row: int):
        if self.slots_memo is None or not hasattr(self.inner, "slots"):
            return self.inner.encode(self._weighed(batch, first_row), first_row)
        # the slots are the same at every round: kept on the worker by the first, found by the later ones
        slots = remembered(self.slots_memo, ("slots", first_row, batch.num_rows), lambda: self.inner.slots(batch),
                           self.slots_room)
        weighed = _with_columns(batch, self.weigh(batch, first_row, slots=slots), self.added, self.columns)
        return self.inner.encode(weighed, first_row, slots)

    def count_piece(self, state, piece):
        return self.inner.count_piece(state, piece)

    def hold(self, pieces: list):
        return self.inner.hold(pieces)

    def count_held(self, state, held):
        return self.inner.count_held(state, held)


@dataclass
class SplitTask:
    """Runs ``inner`` twice per pass: on the rows whose ``flag`` column is false, and on the others."""

    inner: object
    flag: str

    def new_state(self):
        return self.inner.new_state(), self.inner.new_state()

    def update(self, state, batch: pa.RecordBatch, first_row: int):
        mask = batch.column(self.flag).to_numpy(zero_copy_only=False).astype(bool)
        right, wrong = state
        if (~mask).any():
            right = self.inner.update(right, batch.filter(pa.array(~mask)), first_row)
        if mask.any():
            wrong = self.inner.update(wrong, batch.filter(pa.array(mask)), first_row)
        return right, wrong

    def merge(self, a, b):
        return self.inner.merge(a[0], b[0]), self.inner.merge(a[1], b[1])
