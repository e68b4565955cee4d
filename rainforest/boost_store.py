"""The encoded rows of one AdaBoost fit, which every round reads instead of the source.

After the profiling pass, one pass encodes every row once (slots, class code, the row's own
weight where a weight column is given) into the store: in memory when it fits an eighth of the
budget (half the kept rows' quarter; a round's growth keeps its copy in the other half), else in
a spill folder (:class:`rainforest.spill.Spill`, one partition).  Each round's tree grows from
the store (:class:`StoreRound`, a source whose passes hand encoded blocks to the growth engine's
tasks), so a fit reads its source twice however many rounds it boosts.

Boosting weights are not stored: a row's weight in a round is ``exp(-log_norm + the sum of alpha_j
over the learners j that got it wrong)`` times its own weight, computed as the rows are read, in the
same floating-point steps as ``AdaBoostClassifier``'s weigher over raw rows, so the trees are those
of a round that reads the source, bit for bit.  What is stored per learner is one bit a row
(whether it got the row wrong), found by routing slot values through its tree
(:func:`rainforest.slot_values.predicted_classes`) during the next round's first read.
"""
from __future__ import annotations

import logging
import math
import os
import warnings
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from rainforest.storage import Source

from .row_encoding import encode_rows
from .rows import RowBlock, column_dtypes, label_dtype, slot_dtype
from .schema import Schema
from .slot_values import predicted_classes, slot_tables
from .spill import Spill, disk_shortfall, spilled_bytes
from .write_behind import write_ahead

log = logging.getLogger("rainforest")


@numba.njit(cache=True, parallel=True, nogil=True)
def boosted_log_weights(flags, alphas, first, start, out):
    """``out[i] = start + alphas[j]`` added in learner order over the learners ``j`` whose bit
    ``flags[j]`` (``np.packbits`` order) marks row ``first + i`` wrong.  A right row adds nothing
    where the weigher adds ``alpha * 0.0``: the same sum (a zero's sign aside, which ``exp`` ignores)."""
    for i in numba.prange(out.shape[0]):
        r = first + i
        byte, shift = r >> 3, 7 - (r & 7)
        lw = start
        for j in range(alphas.shape[0]):
            if (flags[j, byte] >> shift) & 1:
                lw += alphas[j]
        out[i] = lw


@numba.njit(cache=True, nogil=True)
def boost_weights(log_weights):
    """``exp`` of each log-weight: a round's row weights, by the C library's ``exp`` (through Numba).
    numpy's ``exp`` takes a SIMD path of its own on CPUs with AVX-512, whose last bits differ from
    the C library's now and then, so the same fit gave trees a few ulps apart on two machines
    (``tests/data/models/adaboost_adult_stumps.json``).  (Numba built with Intel's SVML would
    vectorize this loop with SVML's ``exp``; the default install has none.)"""
    out = np.empty_like(log_weights)
    for i in range(log_weights.shape[0]):
        out[i] = math.exp(log_weights[i])
    return out


@numba.njit(cache=True, nogil=True)
def set_flags(row, first, wrong):
    """Set the bits of ``row`` (``np.packbits`` order) of rows ``first + i`` where ``wrong[i]``."""
    for i in range(wrong.shape[0]):
        if wrong[i]:
            r = first + i
            row[r >> 3] |= np.uint8(1 << (7 - (r & 7)))


@dataclass
class WrongBits:
    """Per learner, one bit a row of the boosting store (``np.packbits`` order, rows by their position):
    whether it got the row wrong; with the learners' weights ``alphas``, a round's boosting weights.

    A round then scores only its newest learner, not every learner so far: :meth:`mark` its rows
    as they are read, and :meth:`log_weights` adds the ``alphas`` of the learners whose bits are
    set, in learner order: the weigher's floats, bit for bit (see :func:`boosted_log_weights`)."""

    flags: np.ndarray  # (learners, bytes); a memmap where the store spills
    alphas: list = field(default_factory=list)

    @classmethod
    def allocate(cls, n_learners: int, n_rows: int, path: str | None = None) -> "WrongBits":
        """Room for ``n_learners`` learners' bits over ``n_rows`` rows: in memory (pages touched only as
        bits are set), or in the file ``path``."""
        shape = (max(n_learners, 0), (n_rows + 7) // 8)
        if path is not None and shape[0] and shape[1]:
            return cls(np.memmap(path, np.uint8, "w+", shape=shape))
        return cls(np.zeros(shape, np.uint8))

    @staticmethod
    def nbytes_for(n_learners: int, n_rows: int) -> int:
        return max(n_learners, 0) * ((n_rows + 7) // 8)

    @property
    def nbytes(self) -> int:
        return self.flags.nbytes

    def mark(self, learner: int, first: int, wrong: np.ndarray) -> None:
        """Set learner ``learner``'s bits of rows ``first + i`` where ``wrong[i]``."""
        set_flags(np.asarray(self.flags[learner]), first, wrong)

    def log_weights(self, first: int, n: int, start: float) -> np.ndarray:
        """The log boosting weight of rows ``first .. first + n - 1``: ``start`` plus the ``alphas``
        of the learners that got each wrong."""
        out = np.empty(n)
        boosted_log_weights(np.asarray(self.flags), np.asarray(self.alphas, np.float64), first, start, out)
        return out


@dataclass
class EncodePass:
    """A :class:`rainforest.storage.PassTask` encoding every row that counts (weight not 0) and
    handing each block to ``sink`` in row order; the state is the number of rows kept."""

    schema: Schema
    sink: object

    def new_state(self) -> int:
        return 0

    def update(self, state: int, batch: pa.RecordBatch, first_row: int) -> int:
        rows = encode_rows(self.schema, batch, None).present()
        if len(rows):
            self.sink(rows)
        return state + len(rows)

    def merge(self, a: int, b: int) -> int:  # pragma: no cover - local sources fold in order
        raise TypeError("the boosting store is filled by a local, ordered pass")


@dataclass
class BoostStore:
    """The encoded rows of one boosting fit and the wrong-bits of its learners so far.

    Make one with :meth:`fill`; :meth:`remove` it when the fit ends (also after an error).
    """

    schema: Schema  # the profile's (its weight: the data's own weight column, or None)
    kept: list | None = None  # RowBlocks in row order, in memory
    spill: Spill | None = None  # or partition 0 of a spill folder
    n_rows: int = 0
    bits: WrongBits | None = None  # the learners' wrong-bits and weights
    pending: object = None  # the last learner, whose bits the next read sets
    reads: int = 0
    nbytes: int = 0  # in memory (kept rows and bits), or on disk
    tables: tuple = None  # slot_values' lookup tables of the schema's attributes

    @classmethod
    def fill(cls, source, schema: Schema, columns: list, batch_size: int, n_rounds: int, n_rows: int,
             budget_bytes: int, in_memory: bool, spill_dir: str | None) -> BoostStore | None:
        """One pass over ``source`` encoding its rows into a new store: in memory when ``in_memory``
        and the rows (and one bit per row for each of the ``n_rounds - 1`` learners whose errors
        weigh a later round) fit an eighth of ``budget_bytes`` (half the kept rows' quarter: a round's
        growth keeps its own copy, grouped by node, in the other half), else spilled under
        ``spill_dir``.
        None (with a warning, and no pass made) when the spill folder's disk is too small: each
        round then reads the source."""
        weighted = schema.weight is not None
        bits = WrongBits.nbytes_for(n_rounds - 1, n_rows)
        memory = n_rows * (len(schema.attributes) * slot_dtype(schema).itemsize
                           + label_dtype(schema.label).itemsize + (8 if weighted else 0)) + bits
        store = cls(schema, tables=slot_tables(schema.attributes))
        if not (in_memory and memory <= budget_bytes // 8):
            short = disk_shortfall(spill_dir, spilled_bytes(n_rows, schema, weighted, 1) + bits)  # rows at node 0
            if short:
                warnings.warn(f"{short}: each boosting round reads the source instead; give spill_dir a larger "
                              f"disk to read it twice", RuntimeWarning, stacklevel=3)
                return None
            store.spill = Spill(spill_dir, len(schema.attributes), column_dtypes(schema),
                                write_ahead=write_ahead(budget_bytes))
        try:
            if store.spill is None:
                store.kept = []
                sink = store.kept.append
            else:
                sink = store.spill.writer(np.zeros(1, np.int64))  # every row to partition 0
            store.n_rows = source.run_pass(EncodePass(schema, sink), columns, batch_size)
            if store.spill is None:
                store.bits = WrongBits.allocate(n_rounds - 1, store.n_rows)
                store.nbytes = sum(b.nbytes for b in store.kept) + store.bits.nbytes
                log.info("boosting: %d encoded rows kept in memory (%s bytes) for every round", store.n_rows,
                         f"{store.nbytes:,}")
            else:
                store.spill.commit()
                store.bits = WrongBits.allocate(n_rounds - 1, store.n_rows, os.path.join(store.spill.root, "wrong.bits"))
                store.nbytes = store.spill.bytes_written + store.bits.nbytes
                log.info("boosting: %d encoded rows spilled to %s (%s bytes) for every round", store.n_rows,
                         store.spill.root, f"{store.nbytes:,}")
        except BaseException:
            store.remove()
            raise
        return store

    @property
    def memory_bytes(self) -> int:
        """Bytes the store holds in memory."""
        return self.nbytes if self.spill is None else 0

    def add_learner(self, tree, alpha: float) -> None:
        """A new round's learner and its weight: the next read marks the rows it gets wrong."""
        self.bits.alphas.append(alpha)
        self.pending = tree

    def round_rows(self, log_norm: float, batch_size: int):
        """The stored rows, at the root, weighed for the round after the learners so far (the rows
        whose weight is 0, an underflow, left out); setting the last learner's bits on the way."""
        self.reads += 1
        n_flagged = len(self.bits.alphas)
        pending = self.pending if n_flagged else None
        for first, rows in self._blocks(batch_size):
            if pending is not None:
                self.bits.mark(n_flagged - 1, first,
                               predicted_classes(pending, self.schema.attributes, rows.S, self.tables) != rows.y)
            w = boost_weights(self.bits.log_weights(first, len(rows), -log_norm))  # as the weigher's
            if len(rows.w):
                w *= rows.w
            yield RowBlock(rows.S, rows.y, w, np.zeros(len(rows), np.int32)).present()
        self.pending = None

    def _blocks(self, batch_size: int):
        """``(first_row, rows)`` of the store in row order, ``rows.w`` the rows' own weights."""
        if self.spill is not None:
            yield from self.spill.in_row_order(batch_size)
            return
        first = 0
        for rows in self.kept:
            yield first, rows
            first += len(rows)

    def remove(self) -> None:
        """Release the rows: the spill folder is removed."""
        self.kept = None
        if self.spill is not None:
            self.bits = None  # unmapped before the folder goes
            self.spill.remove()


@dataclass
class StoreRound(Source):
    """One boosting round's rows, as a source: the store's, weighed for the round (the weight column
    ``weight``).  A pass hands encoded blocks to the growth engine's task (``task.count``), and is not
    a pass over the data (:meth:`copied`)."""

    store: BoostStore = None
    log_norm: float = 0.0
    arrow_schema: pa.Schema = None
    name: str = ""

    reads_ahead = False

    @property
    def schema(self) -> pa.Schema:
        return self.arrow_schema

    @property
    def description(self) -> str:
        return self.name

    def copied(self, columns) -> bool:
        return True

    def run_pass(self, task, columns, batch_size: int = 65536, progress=None):
        state = task.new_state()
        for rows in self.store.round_rows(self.log_norm, batch_size):
            state = task.count(state, rows)
            if progress is not None:
                progress(len(rows))
        return state
