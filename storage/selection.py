"""Row selections and row weights derived from each row's stable identity, never materialized.

Cross-validation folds, holdout splits, bootstrap samples and over/undersampling all choose
rows (and how often they count) at random.  Here the choice is a function of the row: of the
hash of its stable identity (the global row number of the source's ordered stream,
:func:`rainforest.storage.rowhash.row_hash`), and, for stratified splits, of its class and its rank
among its class's rows in that order.  A :class:`RowSelection` wraps any :class:`Source`:
its passes stream the base's batches, compute the rule's value for every row, drop the rows
whose value is 0 (``drop_zero``) and may add the value as a column (a weight, a fold number).
Nothing is copied and memory does not grow with the rows.

Decisions:

* **Row identities after selection.**  The kept rows are numbered ``0, 1, ...`` in order, as
  if the selection had been written out as a table of its own.  So a fit on a selection is the
  fit on the materialized subset, the binning sample and a forest's bootstrap included (they
  hash row numbers), whatever the base's batch size or layout.
* **Passes are sequential.**  A selection streams the base's rows to this process in order
  (its stratified rules keep per-class counters across batches): a SQL base streams rows
  instead of pushing the aggregation down, and a Dask base brings its partitions over one at a
  time.  Each pass over a selection counts as a pass on the selection *and* on its base.
* **Stratified folds are exact, not only in expectation.**  Hashing each row's identity to a
  fold balances the classes over the folds only in expectation (a class of ``n`` rows puts
  ``n/k +- sqrt(n/k)`` rows in a fold).  :class:`FoldRule` (``balanced=True``, the default)
  instead cuts each class's rows, in the stable row order, into blocks of ``k`` consecutive
  rows and deals each block to the ``k`` folds in an order drawn from the hash of
  ``(seed, class, block)``: per class the folds differ by at most one row, at no extra pass.
  ``balanced=False`` is the plain identity hash (no class or order dependence).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Iterator, Sequence

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .base import Source, SourceError
from .poisson import bootstrap_counts
from .rowhash import HASH_SPAN, hash_row, row_hash, seed_keys

ROW_WEIGHT = "__row_weight__"
FOLD = "__fold__"


# -- the wrapper ------------------------------------------------------------------------------
@dataclass(eq=False)
class RowSelection(Source):
    """``base`` seen through a row rule: rows whose value is 0 dropped, the value as a column.

    Parameters
    ----------
    base : Source
        The rows.
    rule : object
        Has ``needed`` (base columns it reads) and ``start()``, which returns, once per pass, a
        function ``(batch, row_ids) -> values`` (one float per row; ``row_ids`` are the base's
        stable row identities).  Rules may keep state across the batches of one pass.
    column : str or None, default=None
        Add the values as this float64 column (a weight, a fold number); None adds nothing.
    drop_zero : bool, default=True
        Drop the rows whose value is 0 (they are renumbered: see the module notes).
    base_weight : str or None, default=None
        A base weight column that ``column`` is multiplied with.
    """

    base: Source = None
    rule: object = None
    column: str | None = None
    drop_zero: bool = True
    base_weight: str | None = None

    def __post_init__(self):
        if not isinstance(self.base, Source):
            raise SourceError(f"a row selection needs a Source, got {type(self.base).__name__}")
        self.base.check_columns(list(self.rule.needed) + ([self.base_weight] if self.base_weight else []))
        if self.column is not None and self.column in self.base.schema.names:
            raise SourceError(f"{self.base.description} already has a column named {self.column!r}")

    @property
    def schema(self) -> pa.Schema:
        s = self.base.schema
        return s.append(pa.field(self.column, pa.float64())) if self.column is not None else s

    @property
    def description(self) -> str:
        return f"{self.base.description} ({describe(self.rule)})"

    @property
    def reads_ahead(self) -> bool:  # read ahead only where the base's reading costs
        return self.base.reads_ahead

    def scan(self, columns, batch_size=65536, prefetch=True):
        self.base.n_passes += 1
        return super().scan(columns, batch_size, prefetch)

    def run_pass(self, task, columns, batch_size=65536, progress=None):
        self.base.n_passes += 1
        return super().run_pass(task, columns, batch_size, progress)

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        extra = list(self.rule.needed) + ([self.base_weight] if self.base_weight else [])
        read = list(dict.fromkeys([c for c in columns if c != self.column] + extra))
        values_of = self.rule.start()
        row = 0
        for batch in self.base._batches(read, batch_size):
            n = batch.num_rows
            if n == 0:
                continue
            v = np.asarray(values_of(batch, np.arange(row, row + n, dtype=np.int64)), np.float64)
            row += n
            if self.base_weight is not None and self.column is not None:
                v = v * self._base_weights(batch, row - n)
            if self.drop_zero:
                keep = v != 0
                if not keep.all():
                    batch, v = batch.filter(pa.array(keep)), v[keep]
            arrays = [pa.array(v) if c == self.column else batch.column(c) for c in columns]
            yield pa.RecordBatch.from_arrays(arrays, names=list(columns))


    def _base_weights(self, batch: pa.RecordBatch, first_row: int) -> np.ndarray:
        w = batch.column(self.base_weight).to_numpy(zero_copy_only=False).astype(np.float64)
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            raise SourceError(f"the weight column {self.base_weight!r} of {self.base.description} has a bad value "
                              f"{w[bad][0]!r} at row {first_row + int(np.argmax(bad))} (weights must be finite and >= 0)")
        return w


def select_rows(source: Source, rule) -> RowSelection:
    """The rows of ``source`` where ``rule`` gives a non-zero value (renumbered 0, 1, ...)."""
    return RowSelection(base=source, rule=rule)


def weight_rows(source: Source, rule, *, column: str = ROW_WEIGHT, drop_zero: bool = True,
                base_weight: str | None = None) -> RowSelection:
    """``source`` with ``rule``'s values as the weight column ``column`` (times ``base_weight``);
    rows of weight 0 are dropped unless ``drop_zero=False``."""
    return RowSelection(base=source, rule=rule, column=column, drop_zero=drop_zero, base_weight=base_weight)


def describe(rule) -> str:
    return getattr(rule, "description", type(rule).__name__)


# -- rules --------------------------------------------------------------------------------------


def uniform(rows: np.ndarray, seed: int) -> np.ndarray:
    """A uniform value in [0, 1) per row identity, from its hash (53 bits, exact in float64)."""
    return (row_hash(rows, seed) >> np.uint64(10)).astype(np.float64) / float(1 << 53)


@numba.njit(cache=True, nogil=True)
def _deal(codes, seen, order, block, keys1, keys2, out):
    """``out[i]``: the place of row ``i`` in a random order of its class's current block.

    The rows of class ``c`` are cut, in order, into blocks of ``block``; a block's order is a
    Fisher-Yates shuffle driven by hashes of (block, position) under the class's keys, drawn when
    the block's first row arrives.  ``seen[c]`` (rows of class ``c`` so far) and ``order[c]``
    carry over from batch to batch."""
    for i in range(codes.shape[0]):
        c = codes[i]
        j = seen[c]
        p = j % block
        if p == 0:
            b = j // block
            for q in range(block):
                order[c, q] = q
            for q in range(block - 1, 0, -1):
                r = hash_row(b * block + q, keys1[c], keys2[c]) % (q + 1)
                t = order[c, q]
                order[c, q] = order[c, r]
                order[c, r] = t
        out[i] = order[c, p]
        seen[c] = j + 1


@dataclass
class _Dealer:
    """One pass's state of a block-dealing rule: class codes by first appearance, counters, orders."""

    target: str | None
    block: int
    seed: int
    classes: dict = field(default_factory=dict)
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    order: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    keys: np.ndarray = field(default_factory=lambda: np.zeros((2, 0), np.int64))

    def places(self, batch: pa.RecordBatch) -> np.ndarray:
        codes = self._codes(batch)
        out = np.empty(len(codes), np.int64)
        _deal(codes, self.seen, self.order, self.block, self.keys[0], self.keys[1], out)
        return out

    def _codes(self, batch: pa.RecordBatch) -> np.ndarray:
        if self.target is None:
            self._grow(1)
            return np.zeros(batch.num_rows, np.int64)
        col = batch.column(self.target)
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        if col.null_count:
            raise SourceError(f"the column {self.target!r} that the folds are stratified by has null values")
        values = pc.unique(col)
        for v in values.to_pylist():
            self.classes.setdefault(v, len(self.classes))
        self._grow(len(self.classes))
        lookup = np.array([self.classes[v] for v in values.to_pylist()], np.int64)
        return lookup[pc.index_in(col, value_set=values).to_numpy(zero_copy_only=False).astype(np.int64)]

    def _grow(self, k: int) -> None:
        have = len(self.seen)
        if k <= have:
            return
        self.seen = np.concatenate([self.seen, np.zeros(k - have, np.int64)])
        self.order = np.vstack([self.order.reshape(have, self.block), np.zeros((k - have, self.block), np.int64)])
        # each class its own hash: keys from the hash of the class's code under the seed
        new = [seed_keys(int(h) & 0xFFFFFFFF) for h in row_hash(np.arange(have, k), self.seed)]
        self.keys = np.hstack([self.keys, np.array(new, np.int64).T.reshape(2, -1)])


@dataclass(frozen=True)
class FoldRule:
    """The fold (0 .. ``n_folds - 1``) of every row, or whether it is in ``keep``.

    Parameters
    ----------
    n_folds : int
        Number of folds (>= 2).
    seed : int, default=0
        Which of many independent assignments.
    stratify : str or None, default=None
        The label column: folds balanced per class.
    balanced : bool, default=True
        Deal blocks of ``n_folds`` rows (per class with ``stratify``) to the folds: fold sizes
        differ by at most one row (per class).  False: a row's fold is its identity's hash alone
        (balanced in expectation).
    keep : tuple of int or None, default=None
        None: the value is the fold number.  Else the value is 1 for rows of these folds, 0 otherwise.
    """

    n_folds: int
    seed: int = 0
    stratify: str | None = None
    balanced: bool = True
    keep: tuple | None = None

    def __post_init__(self):
        if not (isinstance(self.n_folds, (int, np.integer)) and self.n_folds >= 2):
            raise ValueError(f"the number of folds must be an integer >= 2, got {self.n_folds!r}")

    @property
    def needed(self) -> list:
        return [self.stratify] if self.stratify else []

    @property
    def description(self) -> str:
        what = "folds" if self.keep is None else f"fold{'s' if len(self.keep) > 1 else ''} " \
            f"{', '.join(map(str, self.keep))}"
        return f"{what} of {self.n_folds}{', stratified by ' + repr(self.stratify) if self.stratify else ''}"

    def start(self) -> Callable:
        dealer = _Dealer(self.stratify, int(self.n_folds), int(self.seed)) if self.balanced else None
        keep = None if self.keep is None else np.asarray(self.keep, np.int64)

        def values(batch, rows):
            if dealer is not None:
                fold = dealer.places(batch)
            else:
                fold = np.minimum(row_hash(rows, self.seed) // np.uint64(HASH_SPAN // self.n_folds),
                                  np.uint64(self.n_folds - 1)).astype(np.int64)
            return fold.astype(np.float64) if keep is None else np.isin(fold, keep).astype(np.float64)

        return values

    def select(self, keep) -> "FoldRule":
        """The same folds, as the selection of the folds ``keep``."""
        return FoldRule(self.n_folds, self.seed, self.stratify, self.balanced, tuple(int(k) for k in keep))


@dataclass(frozen=True)
class SplitRule:
    """A holdout split: 1 for rows of the ``part`` (``"train"`` or ``"test"``), else 0.

    ``test_size`` is written as a fraction ``m / B`` (denominator at most 1000); with
    ``balanced=True`` each class's rows (in order, per class with ``stratify``) are dealt in
    blocks of ``B``, ``m`` of each block to the test part, so per class the test part is within one
    row of ``test_size`` times the class, plus the last partial block.  ``balanced=False``: a row
    is a test row when the uniform value of its identity's hash is below ``test_size``.
    """

    test_size: float
    seed: int = 0
    stratify: str | None = None
    balanced: bool = True
    part: str = "train"

    def __post_init__(self):
        if not (isinstance(self.test_size, (float, int)) and 0 < self.test_size < 1):
            raise ValueError(f"test_size must be a fraction in (0, 1), got {self.test_size!r}")
        if self.part not in ("train", "test"):
            raise ValueError(f"part must be 'train' or 'test', got {self.part!r}")

    @property
    def needed(self) -> list:
        return [self.stratify] if self.stratify else []

    @property
    def description(self) -> str:
        return f"the {self.part} part of a {self.test_size:g} holdout split"

    def start(self) -> Callable:
        frac = Fraction(self.test_size).limit_denominator(1000)
        dealer = _Dealer(self.stratify, frac.denominator, int(self.seed)) if self.balanced else None
        want_test = self.part == "test"

        def values(batch, rows):
            if dealer is not None:
                test = dealer.places(batch) < frac.numerator
            else:
                test = uniform(rows, self.seed) < self.test_size
            return (test == want_test).astype(np.float64)

        return values


@dataclass(frozen=True)
class ClassRateRule:
    """Over/undersampling: a row of class ``c`` counts ``rates[c]`` times on average.

    The weight is ``floor(r) + (u < r - floor(r))`` with ``u`` the uniform value of the row
    identity's hash: an integer, with mean exactly ``r`` (so 0.2 keeps a fifth of a class, 3.5
    counts each row 3 or 4 times).  Classes not in ``rates`` count once.
    """

    target: str
    rates: tuple  # ((class, rate), ...)
    seed: int = 0

    def __post_init__(self):
        for c, r in self.rates:
            if not (isinstance(r, (int, float, np.integer, np.floating)) and np.isfinite(r) and r >= 0):
                raise ValueError(f"the sampling rate of class {c!r} must be a finite number >= 0, got {r!r}")

    @property
    def needed(self) -> list:
        return [self.target]

    @property
    def description(self) -> str:
        return "rows resampled per class: " + ", ".join(f"{c!r} x{r:g}" for c, r in self.rates)

    def start(self) -> Callable:
        table = dict(self.rates)

        def values(batch, rows):
            col = batch.column(self.target)
            if pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            if col.null_count:
                raise SourceError(f"the column {self.target!r} that rows are resampled by has null values")
            uniq = pc.unique(col)
            rate = np.array([float(table.get(v, 1.0)) for v in uniq.to_pylist()])
            r = rate[pc.index_in(col, value_set=uniq).to_numpy(zero_copy_only=False).astype(np.int64)]
            whole = np.floor(r)
            return whole + (uniform(rows, self.seed) < r - whole)

        return values


@dataclass(frozen=True)
class BootstrapRule:
    """A row's multiplicity in the Poisson(1) bootstrap keyed by ``seed`` (the forest's own draw,
    :func:`rainforest.storage.poisson.bootstrap_counts`); ``out_of_bag=True`` gives 1 for the rows drawn
    0 times and 0 for the others."""

    seed: int = 0
    out_of_bag: bool = False

    needed = ()

    @property
    def description(self) -> str:
        return f"{'out-of-bag rows of ' if self.out_of_bag else ''}bootstrap sample {self.seed}"

    def start(self) -> Callable:
        def values(batch, rows):
            m = bootstrap_counts(rows, self.seed).astype(np.float64)
            return (m == 0).astype(np.float64) if self.out_of_bag else m

        return values
