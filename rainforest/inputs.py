"""Turn what users pass to ``fit`` / ``predict`` (paths, sources, arrays, DataFrames) into a Source."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rainforest.storage import Source, TableSource, as_table
from rainforest.storage.dask_frame import is_dask_dataframe

from .errors import DataError
from .schema import CATEGORICAL, arrow_kind

WEIGHT_COLUMN = "__sample_weight__"


def is_path(X) -> bool:
    return isinstance(X, (str, os.PathLike)) or (
        isinstance(X, (list, tuple)) and len(X) > 0 and all(isinstance(x, (str, os.PathLike)) for x in X))


def is_streamed(X) -> bool:
    """Whether ``X`` is read in passes (a path, a Source, a Dask DataFrame), not held in memory."""
    return isinstance(X, Source) or is_path(X) or is_dask_dataframe(X)


def is_sql_source(X) -> bool:
    """Whether ``X`` is a DuckDB or PostgreSQL source (``storage.sql`` is loaded only for a Source)."""
    if not isinstance(X, Source):
        return False
    from rainforest.storage import SqlSource

    return isinstance(X, SqlSource)


def to_source(X) -> Source:
    """A Source for a path (Parquet), a Source, a Dask DataFrame, or an in-memory table-like object."""
    if isinstance(X, Source):
        return X
    if is_dask_dataframe(X):  # partitions passed over where they live (storage.dask)
        from rainforest.storage import DaskSource

        return DaskSource(X)
    if is_path(X):
        from rainforest.storage import ParquetSource

        return ParquetSource(X)
    table, _, _ = as_table(X)
    return TableSource(table=table)


@dataclass
class TrainingData:
    source: Source
    target: str
    features: list[str]
    weight: str | None
    has_names: bool  # the user's columns had names (not a bare array)


def in_memory_rows(X) -> int | None:
    """Rows of an input held in memory (an in-memory source, an array, a DataFrame or an Arrow
    table), else None: counting the rows of a path or a database costs a read."""
    if isinstance(X, TableSource):
        return X.table.num_rows
    if is_path(X) or isinstance(X, Source) or is_dask_dataframe(X):
        return None
    shape = getattr(X, "shape", None) or (getattr(X, "num_rows", None),)
    return shape[0] if isinstance(shape[0], (int, np.integer)) else None


def training_data(X, y, target, sample_weight, features) -> TrainingData:
    """Resolve ``fit``'s arguments; every mistake is a DataError naming the argument or column."""
    if y is not None and target is not None:
        raise DataError("give either y or target=, not both")
    if is_streamed(X):
        if y is not None:
            raise DataError("a path or a Source carries its label: pass target='column', not y")
        if target is None:
            raise DataError("fitting on a path or a Source needs target='the label column'")
        source = to_source(X)
        if sample_weight is not None and not isinstance(sample_weight, str):
            raise DataError("with a path or a Source, sample_weight must be the name of a weight column")
        weight, has_names = sample_weight, True
    else:
        if y is None and target is None:
            raise DataError("fit(X, y) needs y, or target='column' when X holds the label")
        if isinstance(sample_weight, str):
            weight = sample_weight
            table, _, has_names = as_table(X, y, target=target or _y_name(y, X))
        else:
            weight = WEIGHT_COLUMN if sample_weight is not None else None
            table, _, has_names = as_table(X, y, target=target or _y_name(y, X), sample_weight=sample_weight,
                                           weight_column=WEIGHT_COLUMN)
        target = target or _y_name(y, X)
        source = TableSource(table=table, name="the training data")
    names = source.schema.names
    if target not in names:
        raise DataError(f"target column {target!r} not found in {source.description}; "
                        f"available columns: {', '.join(names)}")
    if weight is not None:
        _check_weight_column(source, weight, target)
    if features is None:
        features = [c for c in names if c not in (target, weight)]
    else:
        features = list(features)
        for c in features:
            if c not in names:
                raise DataError(f"feature column {c!r} not found in {source.description}")
            if c in (target, weight):
                raise DataError(f"column {c!r} is the target or the weight and cannot also be a feature")
    if not features:
        raise DataError(f"{source.description} has no feature columns besides the target {target!r}")
    return TrainingData(source, target, features, weight, has_names)


def _check_weight_column(source: Source, weight: str, target: str) -> None:
    """A weight column exists, is not the target, and holds numbers (integers, floats, decimals)."""
    shown = "sample_weight" if weight == WEIGHT_COLUMN else f"weight column {weight!r}"
    if weight not in source.schema.names:
        raise DataError(f"{shown} not found in {source.description}")
    if weight == target:
        raise DataError(f"the {shown} is the target column; weigh the rows by another column")
    typ = source.schema.field(weight).type
    value_type = typ.value_type if pa.types.is_dictionary(typ) else typ
    if not (pa.types.is_integer(value_type) or pa.types.is_floating(value_type) or pa.types.is_decimal(value_type)):
        raise DataError(f"the {shown} of {source.description} has type {typ}; weights must be numbers")


def _y_name(y, X) -> str:
    name = getattr(y, "name", None)
    if isinstance(X, (pa.Table, pa.RecordBatch)):
        taken = set(X.column_names)
    else:  # a DataFrame's column Index (whose truth value is ambiguous), a dict's keys, or nothing
        cols = getattr(X, "columns", None)
        taken = set(cols) if cols is not None else set(X) if isinstance(X, dict) else set()
    if isinstance(name, str) and name and name not in taken:
        return name
    return "y" if "y" not in taken else "__target__"


def attribute_kinds(source: Source, features, categorical_features) -> dict:
    """Kinds from the Arrow types, with ``categorical_features`` forced categorical."""
    schema = source.schema
    kinds = {c: arrow_kind(c, schema.field(c).type, source.description) for c in features}
    if categorical_features not in (None, "auto"):
        for c in categorical_features:
            if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
                if not 0 <= c < len(features):
                    raise DataError(f"categorical_features index {c} is out of range for {len(features)} features")
                c = features[c]
            if c not in kinds:
                raise DataError(f"categorical_features names {c!r}, which is not a feature column")
            typ = schema.field(c).type
            if pa.types.is_floating(typ):
                raise DataError(f"column {c!r} is floating point and cannot be categorical; cast it to int or string")
            kinds[c] = CATEGORICAL
    return kinds


def accuracy(predict, X, y=None, target=None) -> float:
    """Share of rows of ``X`` whose ``predict`` equals the label: ``y``, or the column ``target``
    of a path or Source (read in a pass of its own; null labels are an error)."""
    if y is not None:
        return float(np.mean(predict(X) == np.asarray(y)))
    if target is None:
        raise DataError("score needs y, or target= with a path or a Source")
    source = to_source(X)
    source.check_columns([target])
    return float(np.mean(predict(source) == target_values(source, target)))


def target_values(X, target: str) -> np.ndarray:
    """The column ``target`` of a path or Source, read in a pass of its own (null values are an error)."""
    source = to_source(X)
    source.check_columns([target])
    labels = [b.column(0) for _, b in source.scan([target])]
    nulls = sum(col.null_count for col in labels)
    if nulls:
        raise DataError(f"the target column {target!r} of {source.description} has {nulls} null values")
    return np.concatenate([col.to_numpy(zero_copy_only=False) for col in labels])


def feature_tables(X, names: list, *, strict_names: bool, batch_size: int = 65536):
    """``X`` as Arrow tables holding exactly the model's feature columns ``names``, in order.

    A path or Source is streamed batch by batch; in-memory input gives one table. Unnamed
    columns (a bare array) are taken by position. Named columns must include ``names``. Only
    when ``strict_names`` is false (the model was fitted on unnamed columns) may other names
    stand for them by position.
    """
    if is_streamed(X):
        source = to_source(X)
        source.check_columns(names)
        for _, batch in source.scan(names, batch_size):
            yield pa.Table.from_batches([batch])
        return
    table, cols, has_names = as_table(X)
    missing = [c for c in names if c not in cols]
    if has_names and missing and (strict_names or len(cols) != len(names)):
        raise DataError(f"X lacks the feature column {missing[0]!r} the model was trained with")
    if missing:
        if len(cols) != len(names):
            raise DataError(f"X has {len(cols)} features, but the model was trained with {len(names)}")
        table = table.rename_columns(names)
    yield table.select(names)
