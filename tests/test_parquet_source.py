"""ParquetSource: files, folders, globs, lists and hive partitions, read in a stable order."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rainforest import DecisionTreeClassifier
from storage import ParquetSource, SourceError


def _rows(source, columns):
    return pa.Table.from_batches([b for _, b in source.scan(columns, batch_size=3)]).to_pydict()


def test_hive_partitions_become_columns(tmp_path):
    for region, offset in (("east", 0), ("west", 10)):
        (tmp_path / f"region={region}").mkdir()
        pq.write_table(pa.table({"x": np.arange(5.0) + offset, "y": [0, 1, 0, 1, 0]}),
                       tmp_path / f"region={region}" / "part.parquet")
    source = ParquetSource(tmp_path)
    rows = _rows(source, ["region", "x"])
    assert rows["region"] == ["east"] * 5 + ["west"] * 5
    assert rows["x"] == list(np.arange(5.0)) + list(np.arange(5.0) + 10)
    # the partition column is an ordinary (categorical) feature
    clf = DecisionTreeClassifier(max_depth=1).fit(tmp_path, target="y", features=["region"])
    assert clf.tree_.feature_kinds == ["categorical"] and clf.tree_.categories[0] == ["east", "west"]


def test_file_folder_glob_and_list_read_the_same_rows(tmp_path):
    for k in range(3):
        pq.write_table(pa.table({"x": [float(k), k + 0.5]}), tmp_path / f"p{k}.parquet")
    files = [str(tmp_path / f"p{k}.parquet") for k in range(3)]
    expected = {"x": [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]}
    assert _rows(ParquetSource(tmp_path), ["x"]) == expected
    assert _rows(ParquetSource(str(tmp_path / "p*.parquet")), ["x"]) == expected
    assert _rows(ParquetSource(files[::-1][::-1]), ["x"]) == expected
    assert _rows(ParquetSource(files[0]), ["x"]) == {"x": [0.0, 0.5]}
    assert ParquetSource(tmp_path).count_rows() == 6


def test_a_file_lacking_a_column_is_named(tmp_path):
    pq.write_table(pa.table({"x": [1.0], "y": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"y": [0]}), tmp_path / "b.parquet")
    with pytest.raises(SourceError, match="b.parquet"):
        _rows(ParquetSource(tmp_path), ["x", "y"])


def test_columns_are_cast_to_the_dataset_type(tmp_path):
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": pa.array([3, 4], pa.int32())}), tmp_path / "b.parquet")
    assert _rows(ParquetSource(tmp_path), ["x"]) == {"x": [1, 2, 3, 4]}


def test_a_pass_left_early_stops_its_reader_thread(tmp_path):
    import threading
    for k in range(4):
        pq.write_table(pa.table({"x": np.arange(1000.0)}), tmp_path / f"p{k}.parquet")
    source = ParquetSource(tmp_path)
    scan = source.scan(["x"], batch_size=10)
    next(scan)
    scan.close()
    assert not [t for t in threading.enumerate() if t.name == "rainforest-prefetch" and t.is_alive()]
    # prefetching does not change what a pass yields
    a = [b.column(0).to_pylist() for _, b in source.scan(["x"], batch_size=300)]
    b = [b.column(0).to_pylist() for _, b in source.scan(["x"], batch_size=300, prefetch=False)]
    assert a == b and source.n_passes == 3
