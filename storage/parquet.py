"""Parquet files, folders, globs and hive-partitioned trees (pyarrow.dataset)."""
from __future__ import annotations

import glob as globmod
import os
import re
from itertools import chain
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from .base import Source, SourceError, runs_up_to
from .lazy import lazy_module

ds = lazy_module("pyarrow.dataset")  # imports pandas: only when a Parquet source is read


class MissingPathError(SourceError, FileNotFoundError):
    """A path given as data does not exist."""


def natural_key(path: str) -> list:
    """The sort key of a file path in the one file order every source shares: runs of digits
    compare as numbers (``month=2`` before ``month=10``), as Dask orders the files of
    ``dd.read_parquet``. A row's identity (its place in this order) chooses the binning sample and
    the forest's bootstrap, so the order decides which tree is grown."""
    return [(1, int(part), "") if part.isdigit() else (0, 0, part) for part in re.split(r"(\d+)", path)]


def expand_paths(path) -> list[str]:
    """Files behind ``path``: a file, a folder (recursively), a glob, or a list of those; the files
    of a folder or a glob in :func:`natural_key` order."""
    if isinstance(path, (list, tuple)):
        if not path:
            raise SourceError("an empty list of Parquet paths was given")
        out: list[str] = []
        for p in path:
            out.extend(expand_paths(p))
        return out
    path = os.fspath(path)
    if any(ch in path for ch in "*?["):
        files = sorted((f for f in globmod.glob(path, recursive=True) if os.path.isfile(f)), key=natural_key)
        if not files:
            raise MissingPathError(f"no file matches the pattern {path!r}")
        return files
    if os.path.isdir(path):
        files = []
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            files.extend(os.path.join(root, n) for n in names
                         if not n.startswith((".", "_")) and not n.endswith((".crc", ".tmp")))
        files.sort(key=natural_key)
        if not files:
            raise SourceError(f"the folder {path!r} holds no data files")
        return files
    if os.path.isfile(path):
        return [path]
    raise MissingPathError(f"no such file or folder: {path!r}")


@dataclass
class ParquetSource(Source):
    """Rows in Parquet files, read in bounded record batches.

    Parameters
    ----------
    path : str, path-like or list of them
        A file, a folder (read recursively, files in natural order: ``month=2`` before
        ``month=10``, as Dask reads them), a glob
        pattern (``"data/*.parquet"``, ``"data/**/*.parquet"``) or a list.
    partitioning : str or None, default="hive"
        How folder names become columns (``year=2024/``); ``None`` for none.

    Notes
    -----
    The row order, and so each row's stable identity (its global index), is
    the natural file order and the row order inside each file.
    """

    path: object = None
    partitioning: str | None = "hive"
    files: list[str] = field(default=None, init=False, repr=False)
    _dataset: ds.Dataset = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.files = expand_paths(self.path)
        base = os.fspath(self.path) if isinstance(self.path, (str, os.PathLike)) and os.path.isdir(
            os.fspath(self.path)) else None
        file_schema = unified_schema(self.files, [_read_schema(f) for f in self.files])
        if self.partitioning == "hive":
            _check_partition_keys(self.files, base, file_schema)
        try:
            # the partition keys' types as pyarrow infers them, then every file read in the unified schema
            found = ds.dataset(self.files, format="parquet", partitioning=self.partitioning, partition_base_dir=base)
            keys = [f for f in found.schema if f.name not in file_schema.names]
            self._dataset = ds.dataset(self.files, format="parquet", partitioning=self.partitioning,
                                       partition_base_dir=base, schema=pa.schema(list(file_schema) + keys))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            raise SourceError(f"cannot read Parquet data {self.description}: {first_line(exc)}") from None

    @property
    def schema(self) -> pa.Schema:
        return self._dataset.schema

    @property
    def description(self) -> str:
        if isinstance(self.path, (list, tuple)):
            return f"Parquet files {self.files[0]!r} and {len(self.files) - 1} more"
        return f"Parquet data {os.fspath(self.path)!r}"

    def count_rows(self) -> int:
        return sum(f.metadata.num_rows for f in self._dataset.get_fragments())

    def fragment_rows(self) -> list[int]:
        """Rows of each file, in row order (from the Parquet footers; no data is read)."""
        return [f.metadata.num_rows for f in self._dataset.get_fragments()]

    def _batches(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        return chain.from_iterable(self._batch_groups(columns, batch_size))

    def _batch_groups(self, columns: Sequence[str], batch_size: int) -> Iterator[list[pa.RecordBatch]]:
        for fragment in self._dataset.get_fragments():
            yield from self._fragment_groups(fragment, columns, batch_size)

    def fragment_batches(self, index: int, columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        """The batches of the ``index``-th file alone (distributed sources read one file per task)."""
        for i, fragment in enumerate(self._dataset.get_fragments()):
            if i == index:
                return chain.from_iterable(self._fragment_groups(fragment, list(columns), batch_size))
        raise SourceError(f"{self.description} has no file number {index}")

    def _fragment_groups(self, fragment, columns: Sequence[str], batch_size: int) -> Iterator[list[pa.RecordBatch]]:
        """The file's batches: where every row group fits a batch's room, a list per run of row groups
        read whole (:func:`rainforest.storage.base.runs_up_to`: small ones together), sliced to ``batch_size``; else one
        per batch of ``iter_batches`` (which may span row groups)."""
        # ParquetFile.iter_batches, not Fragment.to_batches: the latter can hang forever
        # (apache/arrow#45214); hive partition values are added as constant columns.
        schema = self._dataset.schema
        keys = ds.get_partition_keys(fragment.partition_expression) if self.partitioning else {}
        try:
            reader = pq.ParquetFile(fragment.path)
            # the file's Arrow schema once: ParquetFile converts the footer's at each call (asked once per row
            # group and column, it took two thirds of a pass over a file of 1,000 row groups)
            file_schema = reader.schema_arrow
            in_file = set(file_schema.names)
            wanted = [c for c in columns if c not in keys]
            absent = [c for c in wanted if c not in in_file]
            if absent:
                raise SourceError(f"Parquet file {fragment.path!r} has no column {absent[0]!r}")
            groups = range(reader.metadata.num_row_groups)
            rows = [reader.metadata.row_group(g).num_rows for g in groups]
            room = BATCH_VALUE_BYTES * len(columns) * batch_size
            bits = value_bits(file_schema, wanted)
            if bits is not None and all(decoded_bytes(bits, n) <= room for n in rows):
                # whole, then sliced: a quarter less CPU than iter_batches' page-wise decode
                # consecutive row groups up to a batch's rows read together: small ones (a streaming writer's,
                # BOAT's node files' parts of ~5,000 rows) would each be a batch, and every batch costs each
                # kernel a call (a BOAT finish over 10M rows in such groups: 1.5 s of 12 s encoding 2,106 batches)
                for r, k in runs_up_to(rows, batch_size):
                    run = list(groups[r:k])
                    table = reader.read_row_groups(run, columns=wanted, use_threads=True)
                    if table.num_rows and len(run) > 1:
                        table = table.combine_chunks()
                    yield [_conform(b, columns, keys, schema, fragment.path) for b in table.to_batches(batch_size)]
            else:
                for batch in reader.iter_batches(batch_size=batch_size, columns=wanted, use_threads=True):
                    yield [_conform(batch, columns, keys, schema, fragment.path)]
            reader.close()
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
            raise SourceError(f"cannot read Parquet file {fragment.path!r}: {first_line(exc)}") from None


def _read_schema(path: str) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceError(f"cannot read Parquet file {path!r}: {first_line(exc)}") from None


def unified_schema(files: Sequence[str], schemas: Sequence[pa.Schema]) -> pa.Schema:
    """One schema for all files: a column's type is the one every file's type widens to without loss
    (:func:`common_type`), the same whatever the file order; a SourceError naming the column and two
    files of different types where there is none.  Columns in order of first appearance."""
    seen: dict[str, list] = {}
    for path, schema in zip(files, schemas):
        for f in schema:
            seen.setdefault(f.name, []).append((f.type, path))
    fields = []
    for name, typed in seen.items():
        typ = common_type({t for t, _ in typed})
        if typ is None:
            (a, file_a), (b, file_b) = typed[0], next(tp for tp in typed if tp[0] != typed[0][0])
            raise SourceError(f"column {name!r} has type {a} in Parquet file {file_a!r} but {b} in {file_b!r}; "
                              f"types may differ across files only where one widens to the other without loss "
                              f"(int32 to int64, float32 to float64); cast the column in one of the files")
        fields.append(pa.field(name, typ))
    return pa.schema(fields)


def common_type(types: set) -> pa.DataType | None:
    """The type that every type in ``types`` converts to without loss, or None: integers to a wider
    integer, integers of up to 16 (32) bits and floats to float32 (float64), string to large_string,
    decimals to the decimal holding both their integer digits and their scale, timestamps of one
    zone to the finest unit, a dictionary to its values' type; a null-typed column takes any type."""
    types = {t for t in types if not pa.types.is_null(t)}
    if len(types) <= 1:
        return next(iter(types), pa.null())
    types = {t.value_type if pa.types.is_dictionary(t) else t for t in types}
    if len(types) == 1:
        return types.pop()
    if all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in types):
        return pa.large_string()
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in types):
        return _common_number(types)
    if all(pa.types.is_decimal(t) for t in types):
        scale = max(t.scale for t in types)
        precision = max(t.precision - t.scale for t in types) + scale
        return pa.decimal128(precision, scale) if precision <= 38 else (
            pa.decimal256(precision, scale) if precision <= 76 else None)
    if all(pa.types.is_timestamp(t) for t in types) and len({t.tz for t in types}) == 1:
        unit = max((t.unit for t in types), key=["s", "ms", "us", "ns"].index)
        return pa.timestamp(unit, next(iter(types)).tz)
    return None


def _common_number(types: set) -> pa.DataType | None:
    signed = [t.bit_width for t in types if pa.types.is_signed_integer(t)]
    unsigned = [t.bit_width for t in types if pa.types.is_unsigned_integer(t)]
    floats = [t.bit_width for t in types if pa.types.is_floating(t)]
    # the bits an integer type needs to hold every integer type here (an unsigned one in a signed
    # type needs twice its width)
    int_bits = max(signed + [2 * b for b in unsigned]) if signed else max(unsigned, default=0)
    if not floats:
        if int_bits > 64:
            return None
        return (pa.int8, pa.int16, pa.int32, pa.int64)[int_bits.bit_length() - 4]() if signed else \
            (pa.uint8, pa.uint16, pa.uint32, pa.uint64)[int_bits.bit_length() - 4]()
    raw = max(signed + unsigned, default=0)  # a float's mantissa must hold every integer
    needed = max(floats + ([32] if 0 < raw <= 16 else [64] if 16 < raw <= 32 else []))
    if raw > 32:
        return None
    return {16: pa.float16(), 32: pa.float32(), 64: pa.float64()}[needed]


def _check_partition_keys(files: Sequence[str], base: str | None, file_schema: pa.Schema) -> None:
    """A hive folder key (``name=value``) may not share its name with a column of the files."""
    for path in files:
        folders = os.path.dirname(os.path.relpath(path, base) if base else path)
        for part in folders.split(os.sep):
            key = part.split("=", 1)[0] if "=" in part else None
            if key is not None and key in file_schema.names:
                raise SourceError(f"the folder key {part!r} of {path!r} names the column {key!r}, which the "
                                  f"Parquet files hold too; rename the folder or the column, or read the files "
                                  f"with partitioning=None")


#: the room a batch row is budgeted per value by its caller (``estimators._batch_size``: the
#: encoded float64 values and their copies); a row group whose decoded values fit a batch's room
#: is read whole
BATCH_VALUE_BYTES = 32


def value_bits(schema: pa.Schema, columns: Sequence[str]) -> list[int] | None:
    """The bits of one value of each of ``columns`` once decoded to Arrow (a dictionary column's index
    and value: at most a value a row), or None where a column's values have no fixed width (strings:
    their decoded size is not in the footer)."""
    bits = []
    for name in columns:
        typ = schema.field(name).type
        widths = [typ.index_type, typ.value_type] if pa.types.is_dictionary(typ) else [typ]
        try:
            bits.append(sum(t.bit_width for t in widths))
        except ValueError:
            return None
    return bits


def decoded_bytes(bits: Sequence[int], rows: int) -> int:
    """At most the size of ``rows`` rows of columns of :func:`value_bits` ``bits`` once decoded: their
    values and validity bits."""
    return sum(b * rows // 8 + rows // 8 for b in bits)


def _conform(batch: pa.RecordBatch, columns, keys: dict, schema: pa.Schema, path: str) -> pa.RecordBatch:
    """The batch with its columns in the requested order and the dataset's types."""
    arrays = []
    for c in columns:
        typ = schema.field(c).type
        if c in keys:
            arrays.append(pa.array([keys[c]] * batch.num_rows, type=typ))
            continue
        arr = batch.column(c)
        if arr.type != typ:
            try:
                arr = arr.cast(typ)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise SourceError(f"column {c!r} of Parquet file {path!r} has type {arr.type}, "
                                  f"other files have {typ}") from None
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, names=list(columns))


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (drivers append long context after it)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
