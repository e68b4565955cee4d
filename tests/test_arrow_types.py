"""Every Arrow type a Parquet file can hold is either used or refused with one DataError naming the
column and its type, in fit and in predict, by the tree and by naive Bayes."""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rainforest import DataError, DecisionTreeClassifier, NaiveBayesClassifier

N = 40
Y = np.array([0, 1] * (N // 2))
DAY = datetime.datetime(2024, 3, 1, 12, 30)


def _values(typ):
    """N values of ``typ``, whose order separates the two classes (the lower half is class 0)."""
    i = np.arange(N)
    rank = np.where(Y == 0, i // 2, N + i // 2)  # class 0 below class 1
    if pa.types.is_timestamp(typ):
        return pa.array([DAY + datetime.timedelta(seconds=int(r)) for r in rank], typ)
    if pa.types.is_date(typ):
        return pa.array([DAY.date() + datetime.timedelta(days=int(r)) for r in rank], typ)
    if pa.types.is_time(typ):
        return pa.array([datetime.time(1, int(r) // 60, int(r) % 60) for r in rank], typ)
    if pa.types.is_duration(typ):
        return pa.array([datetime.timedelta(seconds=int(r)) for r in rank], typ)
    if pa.types.is_decimal(typ):
        return pa.array([decimal.Decimal(int(r)) / 4 for r in rank], typ)
    if pa.types.is_floating(typ):
        return pa.array(rank.astype(np.float16 if typ == pa.float16() else np.float64), typ)
    if pa.types.is_dictionary(typ) or pa.types.is_string(typ) or pa.types.is_large_string(typ):
        arr = pa.array([f"c{int(r) // 2:03d}" for r in rank], pa.string())
        return arr.dictionary_encode() if pa.types.is_dictionary(typ) else arr.cast(typ)
    return pa.array(rank, typ)


USED = [pa.int8(), pa.uint64(), pa.float16(), pa.float32(), pa.decimal128(5, 2), pa.decimal128(38, 10),
        pa.decimal256(60, 2), pa.date32(), pa.date64(), pa.time32("s"), pa.time64("us"), pa.time64("ns"),
        pa.timestamp("s"), pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("ns"),
        pa.timestamp("ns", tz="UTC"), pa.timestamp("us", tz="Europe/Paris"), pa.duration("ns"),
        pa.large_string(), pa.dictionary(pa.int32(), pa.string())]


def _write(tmp_path, column, name="data.parquet"):
    path = tmp_path / name
    pq.write_table(pa.table({"x": column, "y": pa.array(Y)}), path)
    return path


@pytest.mark.parametrize("typ", USED, ids=str)
@pytest.mark.parametrize("learner", [DecisionTreeClassifier, NaiveBayesClassifier])
def test_every_usable_type_is_learned(tmp_path, typ, learner):
    path = _write(tmp_path, _values(typ))
    model = learner().fit(str(path), target="y")
    assert np.mean(model.predict(str(path)) == Y) >= 0.9


def test_timestamp_ns_after_1970_fits_and_predicts(tmp_path):
    # the nanoseconds since the epoch of a date after April 1970 exceed 2**53, float64's exact integers
    path = _write(tmp_path, _values(pa.timestamp("ns")))
    tree = DecisionTreeClassifier().fit(str(path), target="y")
    assert (tree.predict(str(path)) == Y).all()


REFUSED = [pa.binary(), pa.large_binary(), pa.binary(3), pa.map_(pa.string(), pa.int64()), pa.list_(pa.int64()),
           pa.struct([("a", pa.int64())]), pa.null()]


def _refused_values(typ):
    if pa.types.is_fixed_size_binary(typ):
        return pa.array([b"%03d" % i for i in range(N)], typ)
    if pa.types.is_map(typ):
        return pa.array([[("k", int(i))] for i in range(N)], typ)
    if pa.types.is_list(typ):
        return pa.array([[int(i)] for i in range(N)], typ)
    if pa.types.is_struct(typ):
        return pa.array([{"a": int(i)} for i in range(N)], typ)
    if pa.types.is_null(typ):
        return pa.nulls(N)
    return pa.array([b"v%d" % i for i in range(N)], typ)


@pytest.mark.parametrize("typ", REFUSED, ids=str)
@pytest.mark.parametrize("learner", [DecisionTreeClassifier, NaiveBayesClassifier])
def test_unusable_types_are_refused_naming_column_and_type(tmp_path, typ, learner):
    pq.write_table(pa.table({"ok": pa.array(Y.astype(float)), "x": _refused_values(typ), "y": pa.array(Y)}),
                   tmp_path / "d.parquet")
    with pytest.raises(DataError, match=r"'x'.*" + str(typ).split("<")[0].split("[")[0]):
        learner().fit(str(tmp_path / "d.parquet"), target="y")


@pytest.mark.parametrize("typ", [pa.binary(), pa.list_(pa.int64()), pa.string()], ids=str)
def test_predict_refuses_a_column_of_another_type(tmp_path, typ):
    tree = DecisionTreeClassifier().fit(str(_write(tmp_path, _values(pa.float64()))), target="y")
    other = _refused_values(typ) if typ != pa.string() else pa.array([str(i) for i in range(N)])
    pq.write_table(pa.table({"x": other}), tmp_path / "new.parquet")
    with pytest.raises(DataError, match=r"column 'x'.* has type"):
        tree.predict(str(tmp_path / "new.parquet"))


def test_predict_takes_an_all_null_column_as_missing_values(tmp_path):
    tree = DecisionTreeClassifier().fit(str(_write(tmp_path, _values(pa.float64()))), target="y")
    proba = tree.predict_proba(pa.table({"x": pa.nulls(N)}))
    assert proba.shape == (N, 2) and np.isfinite(proba).all()
