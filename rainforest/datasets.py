"""Synthetic data sets for tests and benchmarks.

The Agrawal, Imielinski and Swami (1993) generator of nine-attribute
"loan applicant" rows labelled by one of ten classification functions,
with the semantics of the MOA / Weka ``AgrawalGenerator``. The stream of
rows is infinite and deterministic: the row at global index ``i`` depends
only on ``(seed, function, i)``, never on how the rows are chunked into
batches or files, so any size can be written as partitioned Parquet in
bounded memory.

References
----------
R. Agrawal, T. Imielinski and A. Swami, "Database Mining: A Performance
Perspective", IEEE Transactions on Knowledge and Data Engineering, 5(6),
1993.
"""
from __future__ import annotations

import glob as globmod
import math
import numbers
import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rainforest.storage.base import Source

__all__ = [
    "AGRAWAL_COLUMNS",
    "AgrawalSource",
    "agrawal_schema",
    "agrawal_label",
    "agrawal_table",
    "iter_agrawal_batches",
    "write_agrawal_parquet",
]

#: Names of the generated columns, in order; ``"class"`` is the label.
AGRAWAL_COLUMNS = ("salary", "commission", "age", "elevel", "car", "zipcode",
                   "hvalue", "hyears", "loan", "class")

_FLOAT_COLUMNS = frozenset({"salary", "commission", "hvalue", "loan"})

#: Rows per generation block; block ``k`` holds global rows
#: ``[k * _BLOCK_ROWS, (k + 1) * _BLOCK_ROWS)`` and has its own random stream.
_BLOCK_ROWS = 100_000


def agrawal_schema() -> pa.Schema:
    """Return the Arrow schema of the Agrawal data.

    Returns
    -------
    schema : pyarrow.Schema
        ``salary``, ``commission``, ``hvalue`` and ``loan`` are ``float64``;
        ``age``, ``elevel``, ``car``, ``zipcode`` and ``hyears`` are
        ``int32``; ``class`` is ``int8`` (0 for group A, 1 otherwise).
    """
    fields = []
    for name in AGRAWAL_COLUMNS:
        if name == "class":
            fields.append(pa.field(name, pa.int8()))
        elif name in _FLOAT_COLUMNS:
            fields.append(pa.field(name, pa.float64()))
        else:
            fields.append(pa.field(name, pa.int32()))
    return pa.schema(fields)


# ---------------------------------------------------------------------------
# argument checks


def _check_function(function) -> int:
    if isinstance(function, (bool, np.bool_)) or not isinstance(function, numbers.Integral) \
            or not 1 <= int(function) <= 10:
        raise ValueError(f"function must be an integer from 1 to 10, got {function!r}")
    return int(function)


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_perturbation(perturbation) -> float:
    if isinstance(perturbation, (bool, np.bool_)) or not isinstance(perturbation, numbers.Real):
        raise ValueError(f"perturbation must be a number from 0 to 1, got {perturbation!r}")
    p = float(perturbation)
    if not (math.isfinite(p) and 0.0 <= p <= 1.0):
        raise ValueError(f"perturbation must be a number from 0 to 1, got {perturbation!r}")
    return p


# ---------------------------------------------------------------------------
# labelling functions


def _within(x, lo, hi):
    return (x >= lo) & (x <= hi)


def agrawal_label(function, salary, commission, age, elevel, car, zipcode,
                  hvalue, hyears, loan) -> np.ndarray:
    """Apply one of the Agrawal classification functions to attribute arrays.

    Parameters
    ----------
    function : int
        Which function, 1 to 10.
    salary, commission, age, elevel, car, zipcode, hvalue, hyears, loan : array-like
        Attribute values, all of the same length. ``car`` and ``zipcode``
        are accepted for symmetry with the columns but no function uses
        them directly (``zipcode`` acts only through ``hvalue``).

    Returns
    -------
    label : ndarray of int8
        0 where the row belongs to group A, 1 elsewhere.

    Raises
    ------
    ValueError
        If ``function`` is not an integer from 1 to 10.

    Examples
    --------
    >>> agrawal_label(1, [50e3], [0.], [30], [0], [1], [0], [9e5], [1], [0.])
    array([0], dtype=int8)
    """
    function = _check_function(function)
    salary = np.asarray(salary, dtype=np.float64)
    commission = np.asarray(commission, dtype=np.float64)
    age = np.asarray(age)
    elevel = np.asarray(elevel)
    hvalue = np.asarray(hvalue, dtype=np.float64)
    hyears = np.asarray(hyears)
    loan = np.asarray(loan, dtype=np.float64)

    young = age < 40
    middle = (age >= 40) & (age < 60)

    def by_age(a_young, a_middle, a_old):
        return np.where(young, a_young, np.where(middle, a_middle, a_old))

    if function == 1:
        group_a = (age < 40) | (age >= 60)
    elif function == 2:
        group_a = by_age(_within(salary, 50_000, 100_000),
                         _within(salary, 75_000, 125_000),
                         _within(salary, 25_000, 75_000))
    elif function == 3:
        group_a = by_age(elevel <= 1,
                         (elevel >= 1) & (elevel <= 3),
                         (elevel >= 2) & (elevel <= 4))
    elif function == 4:
        group_a = by_age(
            np.where(elevel <= 1, _within(salary, 25_000, 75_000), _within(salary, 50_000, 100_000)),
            np.where((elevel >= 1) & (elevel <= 3),
                     _within(salary, 50_000, 100_000), _within(salary, 75_000, 125_000)),
            np.where((elevel >= 2) & (elevel <= 4),
                     _within(salary, 50_000, 100_000), _within(salary, 25_000, 75_000)))
    elif function == 5:
        group_a = by_age(
            np.where(_within(salary, 50_000, 100_000),
                     _within(loan, 100_000, 300_000), _within(loan, 200_000, 400_000)),
            np.where(_within(salary, 75_000, 125_000),
                     _within(loan, 200_000, 400_000), _within(loan, 300_000, 500_000)),
            np.where(_within(salary, 25_000, 75_000),
                     _within(loan, 300_000, 500_000), _within(loan, 100_000, 300_000)))
    elif function == 6:
        total = salary + commission
        group_a = by_age(_within(total, 50_000, 100_000),
                         _within(total, 75_000, 125_000),
                         _within(total, 25_000, 75_000))
    elif function == 7:
        disposable = 2.0 * (salary + commission) / 3.0 - loan / 5.0 - 20_000.0
        group_a = disposable > 0
    elif function == 8:
        disposable = 2.0 * (salary + commission) / 3.0 - 5_000.0 * elevel - 20_000.0
        group_a = disposable > 0
    elif function == 9:
        disposable = (2.0 * (salary + commission) / 3.0 - 5_000.0 * elevel
                      - loan / 5.0 - 10_000.0)
        group_a = disposable > 0
    else:
        equity = np.where(hyears >= 20, hvalue * (hyears - 20) / 10.0, 0.0)
        disposable = (2.0 * (salary + commission) / 3.0 - 5_000.0 * elevel
                      + equity / 5.0 - 10_000.0)
        group_a = disposable > 0
    return np.where(group_a, 0, 1).astype(np.int8)


# ---------------------------------------------------------------------------
# generation


def _perturb(values, value_range, lo, hi, u, p):
    out = values + value_range * (2.0 * u - 1.0) * p
    return np.clip(out, lo, hi)


def _generate_block(seed: int, function: int, k: int, perturbation: float) -> dict:
    """All columns of block ``k`` (``_BLOCK_ROWS`` rows) as numpy arrays."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, function, k])))
    n = _BLOCK_ROWS
    u = rng.random((4, n))
    salary = 20_000.0 + 130_000.0 * u[0]
    commission = np.where(salary >= 75_000.0, 0.0, 10_000.0 + 65_000.0 * u[1])
    age = rng.integers(20, 81, n)
    elevel = rng.integers(0, 5, n)
    car = rng.integers(1, 21, n)
    zipcode = rng.integers(0, 9, n)
    hvalue = (9 - zipcode) * 100_000.0 * (0.5 + u[2])
    hyears = rng.integers(1, 31, n)
    loan = 500_000.0 * u[3]
    label = agrawal_label(function, salary, commission, age, elevel, car, zipcode,
                          hvalue, hyears, loan)
    if perturbation > 0.0:
        v = rng.random((6, n))
        p = perturbation
        salary = _perturb(salary, 130_000.0, 20_000.0, 150_000.0, v[0], p)
        commission = np.where(commission > 0.0,
                              _perturb(commission, 65_000.0, 10_000.0, 75_000.0, v[1], p),
                              commission)
        age = np.rint(_perturb(age, 60.0, 20.0, 80.0, v[2], p))
        span = (9 - zipcode) * 100_000.0
        hvalue = _perturb(hvalue, span, 0.5 * span, 1.5 * span, v[3], p)
        hyears = np.rint(_perturb(hyears, 29.0, 1.0, 30.0, v[4], p))
        loan = _perturb(loan, 500_000.0, 0.0, 500_000.0, v[5], p)
    return {
        "salary": salary,
        "commission": commission,
        "age": age.astype(np.int32),
        "elevel": elevel.astype(np.int32),
        "car": car.astype(np.int32),
        "zipcode": zipcode.astype(np.int32),
        "hvalue": hvalue,
        "hyears": hyears.astype(np.int32),
        "loan": loan,
        "class": label,
    }


def _iter_batches(n_rows, function, seed, perturbation, batch_rows, start) -> Iterator[pa.RecordBatch]:
    """Unchecked core of :func:`iter_agrawal_batches`; keeps one block cached."""
    schema = agrawal_schema()
    cache_k, cache = -1, None
    stop = start + n_rows
    pos = start
    while pos < stop:
        end = min(pos + batch_rows, stop)
        pieces = []
        i = pos
        while i < end:
            k = i // _BLOCK_ROWS
            if k != cache_k:
                cache_k, cache = k, _generate_block(seed, function, k, perturbation)
            lo = i - k * _BLOCK_ROWS
            hi = min(end - k * _BLOCK_ROWS, _BLOCK_ROWS)
            pieces.append({name: col[lo:hi] for name, col in cache.items()})
            i = k * _BLOCK_ROWS + hi
        if len(pieces) == 1:
            cols = pieces[0]
        else:
            cols = {name: np.concatenate([pc[name] for pc in pieces]) for name in AGRAWAL_COLUMNS}
        yield pa.RecordBatch.from_arrays([pa.array(cols[name]) for name in AGRAWAL_COLUMNS],
                                         schema=schema)
        pos = end


def iter_agrawal_batches(n_rows, function=1, seed=0, perturbation=0.05,
                         batch_rows=100_000, start=0) -> Iterator[pa.RecordBatch]:
    """Yield rows of the Agrawal stream as record batches, in order.

    Memory stays bounded by ``batch_rows`` plus one generation block of
    100,000 rows, whatever ``n_rows``.

    Parameters
    ----------
    n_rows : int
        Number of rows to yield (>= 0).
    function : int, default=1
        Classification function, 1 to 10.
    seed : int, default=0
        Non-negative seed of the stream.
    perturbation : float, default=0.05
        Fraction of each numeric attribute's range by which values are
        randomly shifted after labelling, in ``[0, 1]``; 0 disables it.
    batch_rows : int, default=100_000
        Rows per batch; the last batch may be shorter.
    start : int, default=0
        Global index of the first row.

    Yields
    ------
    batch : pyarrow.RecordBatch
        Batches with the schema :func:`agrawal_schema`.

    Raises
    ------
    ValueError
        If an argument is out of range; the message names it.
    """
    function = _check_function(function)
    n_rows = _check_int("n_rows", n_rows, 0)
    seed = _check_int("seed", seed, 0)
    perturbation = _check_perturbation(perturbation)
    batch_rows = _check_int("batch_rows", batch_rows, 1)
    start = _check_int("start", start, 0)
    return _iter_batches(n_rows, function, seed, perturbation, batch_rows, start)


def agrawal_table(n_rows, function=1, seed=0, perturbation=0.05, start=0) -> pa.Table:
    """Return rows ``[start, start + n_rows)`` of the Agrawal stream as a table.

    Parameters
    ----------
    n_rows : int
        Number of rows (>= 0).
    function : int, default=1
        Classification function, 1 to 10.
    seed : int, default=0
        Non-negative seed of the stream.
    perturbation : float, default=0.05
        Fraction of each numeric attribute's range by which values are
        randomly shifted after labelling, in ``[0, 1]``.
    start : int, default=0
        Global index of the first row.

    Returns
    -------
    table : pyarrow.Table
        Columns :data:`AGRAWAL_COLUMNS` with the schema :func:`agrawal_schema`.

    Raises
    ------
    ValueError
        If an argument is out of range; the message names it.

    Examples
    --------
    >>> t = agrawal_table(1000, function=7, seed=1)
    >>> t.num_rows, t.column_names[-1]
    (1000, 'class')
    """
    n_rows = _check_int("n_rows", n_rows, 0)
    batches = list(iter_agrawal_batches(n_rows, function=function, seed=seed,
                                        perturbation=perturbation, batch_rows=max(n_rows, 1),
                                        start=start))
    return pa.Table.from_batches(batches, schema=agrawal_schema())


@dataclass
class AgrawalSource(Source):
    """Rows ``[start, start + n_rows)`` of the Agrawal stream as a source, generated at every pass.

    A billion rows need no 32 GB of Parquet beside a fit's spill folder. Each pass generates the
    rows :func:`write_agrawal_parquet` writes, in its order: a fit equals one on those files.

    Parameters
    ----------
    n_rows : int
        Number of rows (>= 1).
    function, seed, perturbation, start
        As :func:`iter_agrawal_batches`.

    Examples
    --------
    >>> from rainforest import DecisionTreeClassifier
    >>> clf = DecisionTreeClassifier(max_depth=3).fit(AgrawalSource(10_000, function=7), target="class")
    >>> clf.n_passes_
    2
    """

    n_rows: int = 1
    function: int = 1
    seed: int = 0
    perturbation: float = 0.05
    start: int = 0

    def __post_init__(self):
        self.function = _check_function(self.function)
        self.n_rows = _check_int("n_rows", self.n_rows, 1)
        self.seed = _check_int("seed", self.seed, 0)
        self.perturbation = _check_perturbation(self.perturbation)
        self.start = _check_int("start", self.start, 0)

    @property
    def schema(self) -> pa.Schema:
        return agrawal_schema()

    @property
    def description(self) -> str:
        return f"Agrawal F{self.function} rows {self.start:,} to {self.start + self.n_rows - 1:,} (seed {self.seed})"

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        for batch in _iter_batches(self.n_rows, self.function, self.seed, self.perturbation, batch_size, self.start):
            yield batch.select(list(columns))


def write_agrawal_parquet(path, n_rows, function=1, n_files=10, seed=0, perturbation=0.05,
                          start=0, compression="snappy", row_group_size=1_000_000) -> list[str]:
    """Write rows of the Agrawal stream as a folder of Parquet files.

    Files ``part-00000.parquet``, ``part-00001.parquet``, ... hold
    consecutive rows, split as evenly as possible. Each file is written
    batch by batch (one batch per row group) to a hidden temporary name
    in the same folder and then renamed into place, so a reader never sees
    a partial file. Peak memory is about ``min(row_group_size, rows per
    file)`` rows plus one 100,000-row generation block, never the whole
    data.

    Parameters
    ----------
    path : str or path-like
        Folder to create (or reuse if it holds no ``part-*.parquet`` file).
    n_rows : int
        Total number of rows (>= 1).
    function : int, default=1
        Classification function, 1 to 10.
    n_files : int, default=10
        Number of files, from 1 to ``n_rows``.
    seed : int, default=0
        Non-negative seed of the stream.
    perturbation : float, default=0.05
        Fraction of each numeric attribute's range by which values are
        randomly shifted after labelling, in ``[0, 1]``.
    start : int, default=0
        Global index of the first row.
    compression : str, default="snappy"
        Parquet compression codec.
    row_group_size : int, default=1_000_000
        Maximum rows per row group.

    Returns
    -------
    paths : list of str
        The written files, in row order.

    Raises
    ------
    ValueError
        If an argument is out of range; the message names it.
    FileExistsError
        If ``path`` already holds ``part-*.parquet`` files, or is a file.
    """
    function = _check_function(function)
    n_rows = _check_int("n_rows", n_rows, 1)
    n_files = _check_int("n_files", n_files, 1)
    if n_files > n_rows:
        raise ValueError(f"n_files must be at most n_rows={n_rows}, got {n_files!r}")
    seed = _check_int("seed", seed, 0)
    perturbation = _check_perturbation(perturbation)
    start = _check_int("start", start, 0)
    row_group_size = _check_int("row_group_size", row_group_size, 1)

    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise FileExistsError(f"{path!r} exists and is not a folder")
    existing = globmod.glob(os.path.join(globmod.escape(path), "part-*.parquet"))
    if existing:
        raise FileExistsError(f"{path!r} already holds Parquet parts such as "
                              f"{os.path.basename(sorted(existing)[0])!r}")
    os.makedirs(path, exist_ok=True)

    schema = agrawal_schema()
    base, extra = divmod(n_rows, n_files)
    paths = []
    row = start
    for f in range(n_files):
        rows = base + (1 if f < extra else 0)
        name = f"part-{f:05d}.parquet"
        final = os.path.join(path, name)
        tmp = os.path.join(path, f".{name}.{os.getpid()}.tmp")
        try:
            with pq.ParquetWriter(tmp, schema, compression=compression) as writer:
                for batch in _iter_batches(rows, function, seed, perturbation,
                                           min(row_group_size, rows), row):
                    writer.write_batch(batch, row_group_size=row_group_size)
            os.replace(tmp, final)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        paths.append(final)
        row += rows
    return paths
