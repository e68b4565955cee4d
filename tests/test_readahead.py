"""Ordered read-ahead: row groups decoded by worker threads, batches in the serial order, memory bounded."""
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage import ParquetSource, SourceError
from storage.readahead import ordered_batches


def _pieces(lengths, log=None, fail_at=None, delay=0.0):
    """Pieces of batches numbered in order; ``log`` records decode/close events per piece."""
    pieces, start = [], 0
    for p, n in enumerate(lengths):
        def piece(p=p, first=start, n=n):
            try:
                for k in range(n):
                    if fail_at == (p, k):
                        raise OSError(f"piece {p} is unreadable")
                    if delay:
                        time.sleep(delay)
                    if log is not None:
                        log.append(("made", p))
                    yield pa.record_batch({"row": [first + k]})
            finally:
                if log is not None:
                    log.append(("closed", p))
        pieces.append(piece)
        start += n
    return pieces


def _rows(batches):
    return [b.column(0)[0].as_py() for b in batches]


@pytest.mark.parametrize("threads,ahead", [(1, 1), (2, 1), (2, 4), (4, 2), (8, 3)])
def test_batches_come_in_the_serial_order(threads, ahead):
    lengths = list(np.random.default_rng(threads * 10 + ahead).integers(0, 6, 30))  # empty pieces too
    assert _rows(ordered_batches(_pieces(lengths), threads, ahead)) == list(range(sum(lengths)))


def test_workers_wait_while_enough_is_decoded():
    """Against a slow consumer, decoded batches not yet taken stay within ahead + 1 plus one per worker."""
    log, taken, worst = [], [0], [0]
    threads, ahead = 3, 2
    for _ in ordered_batches(_pieces([4] * 12, log), threads, ahead):
        time.sleep(0.002)
        taken[0] += 1
        made = sum(1 for event, _ in list(log) if event == "made")
        worst[0] = max(worst[0], made - taken[0])
    assert 0 < worst[0] <= ahead + 1 + threads
    assert worst[0] >= 2  # and they did decode ahead of the consumer


def test_an_error_is_raised_where_the_serial_read_would_raise_it():
    got = []
    with pytest.raises(OSError, match="piece 3 is unreadable"):
        for b in ordered_batches(_pieces([2, 2, 2, 2, 2], fail_at=(3, 1)), 2, 2):
            got.append(b.column(0)[0].as_py())
    assert got == list(range(7))  # every batch before the bad one, in order


def test_closing_early_stops_and_joins_the_workers():
    log = []
    gen = ordered_batches(_pieces([50] * 8, log, delay=0.001), 3, 2)
    assert _rows([next(gen), next(gen)]) == [0, 1]
    gen.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("rainforest-read")]
    opened = {p for event, p in log if event == "made"}
    assert opened and all(("closed", p) in log for p in opened)  # every started piece was closed
    assert ("made", 7) not in log  # the last pieces were never read


def test_keyboard_interrupt_in_the_consumer_stops_the_workers():
    with pytest.raises(KeyboardInterrupt):
        for i, _ in enumerate(ordered_batches(_pieces([20] * 6, delay=0.001), 2, 2)):
            if i == 5:
                raise KeyboardInterrupt
    assert not [t for t in threading.enumerate() if t.name.startswith("rainforest-read")]


def _write_row_groups(folder, files, groups, rows):
    folder.mkdir()
    start = 0
    for f in range(files):
        n = groups * rows
        table = pa.table({"row": np.arange(start, start + n), "x": np.arange(start, start + n) * 0.5})
        pq.write_table(table, folder / f"part-{f:02d}.parquet", row_group_size=rows)
        start += n
    return start


def test_parquet_passes_read_row_groups_in_parallel_in_row_order(tmp_path, monkeypatch):
    total = _write_row_groups(tmp_path / "data", files=3, groups=4, rows=250)
    source = ParquetSource(tmp_path / "data")
    calls = []
    import storage.parquet as parquet_module
    real = parquet_module.ordered_batches
    monkeypatch.setattr(parquet_module, "ordered_batches", lambda p, t, a: calls.append(len(p)) or real(p, t, a))
    monkeypatch.setattr(parquet_module.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    rows = np.concatenate([b.column(0).to_numpy() for _, b in source.scan(["row", "x"], batch_size=100)])
    assert calls == [12]  # one piece per row group
    np.testing.assert_array_equal(rows, np.arange(total))
    firsts = [first for first, _ in source.scan(["row"], batch_size=100)]
    starts = [int(b.column(0)[0].as_py()) for _, b in source.scan(["row"], batch_size=100)]
    assert firsts == starts  # each batch's first_row is its rows' global index


def test_a_corrupt_file_among_many_is_named(tmp_path, monkeypatch):
    _write_row_groups(tmp_path / "data", files=4, groups=2, rows=100)
    bad = tmp_path / "data" / "part-02.parquet"
    data = bad.read_bytes()
    bad.write_bytes(data[:200] + b"\0" * 4000 + data[4200:])  # pages broken, footer intact
    import storage.parquet as parquet_module
    monkeypatch.setattr(parquet_module.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    with pytest.raises(SourceError, match="part-02.parquet"):
        for _ in ParquetSource(tmp_path / "data").scan(["row", "x"], batch_size=64):
            pass
    assert not [t for t in threading.enumerate() if t.name.startswith("rainforest-read")]
