"""ParquetSource: files, folders, globs, lists and hive partitions, read in a stable order."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rainforest import DecisionTreeClassifier
from rainforest.storage import ParquetSource, SourceError


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


def _file_with_row_groups(path, n=3500, group_rows=1000):
    rng = np.random.default_rng(3)
    table = pa.table({"x": rng.normal(size=n), "i": pa.array(rng.integers(-50, 50, n), pa.int32()),
                      "s": [f"v{k % 7}" for k in range(n)]})
    pq.write_table(table, path, row_group_size=group_rows)
    return table


@pytest.mark.parametrize("columns", [["x", "i"], ["i", "x", "s"]])
@pytest.mark.parametrize("batch_size", [64, 300, 1000, 5000])
def test_row_groups_read_whole_give_the_rows_of_a_page_wise_read(tmp_path, columns, batch_size):
    """Where every row group fits a batch's room, runs of them up to a batch's rows are decoded whole
    and sliced (row groups smaller than a batch read together, so a batch crosses them; a larger one
    alone); else the batches are those of ParquetFile.iter_batches. The rows are the same."""
    table = _file_with_row_groups(tmp_path / "a.parquet")
    source = ParquetSource(tmp_path / "a.parquet")
    ours = [b for _, b in source.scan(columns, batch_size=batch_size)]
    assert pa.Table.from_batches(ours).equals(table.select(columns))
    whole = "s" not in columns and batch_size >= 300
    if whole:  # runs of row groups of 1,000, 1,000, 1,000 and 500 rows
        runs = [3500] if batch_size == 5000 else [1000, 1000, 1000, 500]
        want = [n for g in runs for n in [batch_size] * (g // batch_size) + [g % batch_size] if n]
    else:
        want = [b.num_rows for b in pq.ParquetFile(tmp_path / "a.parquet").iter_batches(batch_size=batch_size)]
    assert [b.num_rows for b in ours] == want


def test_a_row_group_is_the_read_unit_where_it_fits_a_batch_room(tmp_path):
    from rainforest.storage.parquet import BATCH_VALUE_BYTES
    _file_with_row_groups(tmp_path / "a.parquet")
    source = ParquetSource(tmp_path / "a.parquet")
    # 1,000 rows of a float64 and an int32 column decode to about 12 kB: a batch of 300 rows of two
    # values has room for 300 * 2 * 32 bytes = 19.2 kB, one of 64 rows for 4 kB
    assert 64 * 2 * BATCH_VALUE_BYTES < 12_250 <= 300 * 2 * BATCH_VALUE_BYTES
    whole = list(source._batch_groups(["x", "i"], 300))
    assert [[b.num_rows for b in g] for g in whole] == [[300, 300, 300, 100]] * 3 + [[300, 200]]
    paged = list(source._batch_groups(["x", "i"], 64))
    assert all(len(g) == 1 for g in paged) and sum(g[0].num_rows for g in paged) == 3500
    # a string column's decoded size is not in the footer: read page-wise whatever the batch
    assert all(len(g) == 1 for g in source._batch_groups(["x", "s"], 5000))
    # row groups smaller than a batch are read together: 1,000 + 1,000 rows, then 1,000 + 500
    together = list(source._batch_groups(["x", "i"], 2000))
    assert [[b.num_rows for b in g] for g in together] == [[2000], [1500]]


def test_a_scan_builds_a_files_arrow_schema_once_whatever_its_row_groups(tmp_path, monkeypatch):
    """``ParquetFile.schema_arrow`` converts the footer's schema at every call: asked once per row
    group and column, it took two thirds of a pass over a file of 1,000 row groups."""
    _file_with_row_groups(tmp_path / "a.parquet", n=5000, group_rows=100)
    source = ParquetSource(tmp_path / "a.parquet")
    calls = []
    built = pq.ParquetFile.schema_arrow
    monkeypatch.setattr(pq.ParquetFile, "schema_arrow", property(lambda self: calls.append(1) or built.fget(self)))
    batches = [b for _, b in source.scan(["x", "i"], 1000, prefetch=False)]
    assert [b.num_rows for b in batches] == [1000] * 5  # fifty row groups, read ten at a time
    assert len(calls) == 1  # once a file, for the column check and the sizes (101 before: the check, then 50 x 2)


def test_decoded_size_of_dictionary_columns(tmp_path):
    """A dictionary column of strings (a pandas categorical) has no decoded size in the footer; an
    integer column written dictionary-encoded reads back plain, at its own width."""
    from rainforest.storage.parquet import decoded_bytes, value_bits
    table = pa.table({"s": pa.array(["a", "b"] * 500).dictionary_encode(),
                      "k": pa.array([3, 70000] * 500, pa.int64()).dictionary_encode()})
    pq.write_table(table, tmp_path / "d.parquet")
    reader = pq.ParquetFile(tmp_path / "d.parquet")
    assert pa.types.is_dictionary(reader.schema_arrow.field("s").type)
    rows = reader.metadata.row_group(0).num_rows
    assert decoded_bytes(value_bits(reader.schema_arrow, ["k"]), rows) == 1000 * 8 + 125  # values and validity bits
    assert value_bits(reader.schema_arrow, ["k", "s"]) is None


def test_a_pass_reads_one_group_ahead_at_most():
    """The reader thread starts a group only once the pass has taken the one before: a pass holds
    at most the group it works on and the one being read."""
    import time

    from rainforest.storage.base import _prefetched
    started = []

    def groups():
        for g in range(6):
            started.append(g)
            yield [(g, j) for j in range(3)]

    seen = []
    for g, j in _prefetched(groups()):
        time.sleep(0.01)  # time enough for a reader that runs ahead to do so
        assert max(started) <= g + 1
        seen.append((g, j))
    assert seen == [(g, j) for g in range(6) for j in range(3)]


def test_a_read_error_reaches_the_pass_after_the_groups_before_it():
    from rainforest.storage.base import _prefetched

    def groups():
        yield [1, 2]
        raise OSError("disk gone")

    got = []
    with pytest.raises(OSError, match="disk gone"):
        for item in _prefetched(groups()):
            got.append(item)
    assert got == [1, 2]
