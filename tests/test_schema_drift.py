"""Schema drift across Parquet files and hive folder keys: decided the same way whatever the file
order, lossless widenings read, everything else one SourceError naming the column and the files."""
import itertools
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rainforest import DecisionTreeClassifier
from rainforest.storage import ParquetSource, SourceError
from rainforest.storage.parquet import common_type


def _write(folder, name, x, y=(0, 1, 0, 1)):
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": x, "y": pa.array(list(y), pa.int64())}), folder / name)


@pytest.mark.parametrize("first", ["a", "b"])
def test_numeric_strings_drifting_to_integers_are_an_error_in_any_order(tmp_path, first):
    strings, ints = ("a", "b") if first == "a" else ("b", "a")
    _write(tmp_path, f"{strings}.parquet", pa.array(["1", "2", "3", "4"]))
    _write(tmp_path, f"{ints}.parquet", pa.array([5, 6, 7, 8], pa.int64()))
    with pytest.raises(SourceError) as info:
        ParquetSource(str(tmp_path))
    message = str(info.value)
    assert "'x'" in message and "a.parquet" in message and "b.parquet" in message
    assert "string" in message and "int64" in message


@pytest.mark.parametrize("narrow, wide", [(pa.int32(), pa.int64()), (pa.float32(), pa.float64()),
                                          (pa.int16(), pa.float32()), (pa.uint32(), pa.int64()),
                                          (pa.string(), pa.large_string())])
def test_lossless_widening_reads_every_file_in_the_wide_type_in_any_order(tmp_path, narrow, wide):
    values = [1, 2, 3, 4] if not pa.types.is_string(narrow) else ["p", "q", "p", "q"]
    for order in ("ab", "ba"):
        folder = tmp_path / order
        _write(folder, "a.parquet", pa.array(values, narrow))
        _write(folder, "b.parquet", pa.array(values, wide) if order == "ab" else pa.array(values, narrow))
        if order == "ba":
            _write(folder, "a.parquet", pa.array(values, wide))
        source = ParquetSource(str(folder))
        assert source.schema.field("x").type == wide
        batches = [b for _, b in source.scan(["x", "y"], 3)]
        assert all(b.schema.field("x").type == wide for b in batches)
        assert sum(b.num_rows for b in batches) == 8
        DecisionTreeClassifier(max_depth=1).fit(str(folder), target="y")


@pytest.mark.parametrize("a, b", [(pa.int64(), pa.float64()), (pa.int64(), pa.uint64()), (pa.string(), pa.int64()),
                                  (pa.float64(), pa.float32()), (pa.timestamp("s"), pa.timestamp("s", "UTC")),
                                  (pa.bool_(), pa.int8())])
def test_lossy_drift_is_an_error_whatever_the_file_order(tmp_path, a, b):
    lossless = common_type({a, b})
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        assert lossless == pa.float64()  # float32 then float64 widens in either order
        return
    assert lossless is None
    for first, second in ((a, b), (b, a)):
        folder = tmp_path / f"{first}-{second}".replace(" ", "").replace("[", "").replace("]", "").replace(",", "")
        _write(folder, "1.parquet", pa.array([1, 0, 1, 0]).cast(first) if not pa.types.is_string(first)
               else pa.array(["1", "0", "1", "0"]))
        _write(folder, "2.parquet", pa.array([1, 0, 1, 0]).cast(second) if not pa.types.is_string(second)
               else pa.array(["1", "0", "1", "0"]))
        with pytest.raises(SourceError, match="'x'.*1.parquet.*2.parquet"):
            ParquetSource(str(folder))


def test_common_type_does_not_depend_on_order():
    types = [pa.int8(), pa.uint16(), pa.int32(), pa.float16(), pa.float32(), pa.null(),
             pa.dictionary(pa.int8(), pa.int16())]
    for k in range(1, 5):
        for subset in itertools.combinations(types, k):
            results = {str(common_type(set(perm))) for perm in itertools.permutations(subset)}
            assert len(results) == 1
    assert common_type({pa.int8(), pa.uint16()}) == pa.int32()
    assert common_type({pa.int32(), pa.float32()}) == pa.float64()
    assert common_type({pa.decimal128(5, 2), pa.decimal128(10, 0)}) == pa.decimal128(12, 2)
    assert common_type({pa.timestamp("s"), pa.timestamp("ns")}) == pa.timestamp("ns")


@pytest.mark.parametrize("key_values", [("1", "2"), ("p", "q")])
def test_hive_key_colliding_with_a_file_column_names_both(tmp_path, key_values):
    data = tmp_path / "data"
    for v in key_values:  # the file column "x" is a string; the key "x" an integer or a string
        _write(data / f"x={v}", "part.parquet", pa.array(["s", "t", "s", "t"]))
    with pytest.raises(SourceError) as info:
        ParquetSource(str(data))
    message = str(info.value)
    assert f"'x={key_values[0]}'" in message and "column 'x'" in message
    r = subprocess.run([sys.executable, "-m", "rainforest", "train", str(data), "--target", "y",
                        "--model", str(tmp_path / "m.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.startswith("rainforest: error:") and r.stderr.count("\n") == 1, r.stderr
    assert "'x'" in r.stderr


def test_hive_keys_without_collision_are_still_columns(tmp_path):
    for k in (1, 2):
        _write(tmp_path / f"k={k}", "part.parquet", pa.array([1.0, 2.0, 3.0, 4.0]))
    source = ParquetSource(str(tmp_path))
    assert source.schema.field("k").type == pa.int32()
    keys = np.concatenate([b.column(0).to_numpy() for _, b in source.scan(["k"], 10)])
    assert keys.tolist() == [1, 1, 1, 1, 2, 2, 2, 2]
    assert ParquetSource(str(tmp_path), partitioning=None).schema.names == ["x", "y"]
