"""The spill's write-behind thread (rainforest/write_behind.py): order, back-pressure, errors, stop."""
import io
import threading

import numpy as np
import pytest

from rainforest.write_behind import WriteBehind


class GatedFile(io.BytesIO):
    """A file whose writes wait for ``gate`` (the disk catching up)."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()

    def write(self, b):
        self.gate.wait(30)
        return super().write(b)


def test_pieces_are_written_in_order_and_the_thread_ends_with_them():
    rng = np.random.default_rng(0)
    pieces = [rng.integers(0, 255, size=int(n), dtype=np.uint8) for n in rng.integers(1, 5000, size=200)]
    a, b = io.BytesIO(), io.BytesIO()
    behind = WriteBehind(limit=10_000)
    before = set(threading.enumerate())
    for i, p in enumerate(pieces):
        behind.write(a if i % 3 else b, [p, p[::-1].copy()])
    behind.flush()
    # no thread outlives the writing (a spill that is never removed leaves none behind)
    assert not [t for t in threading.enumerate() if t not in before and t.name == "rainforest-write-behind"]
    assert a.getvalue() == b"".join(p.tobytes() + p[::-1].tobytes() for i, p in enumerate(pieces) if i % 3)
    assert b.getvalue() == b"".join(p.tobytes() + p[::-1].tobytes() for i, p in enumerate(pieces) if not i % 3)
    behind.close()


def test_a_writer_waits_once_limit_bytes_are_pending():
    f = GatedFile()
    behind = WriteBehind(limit=15)
    behind.write(f, [b"x" * 10])  # taken at once: nothing pending before it
    second = threading.Thread(target=behind.write, args=(f, [b"y" * 10]))
    second.start()
    second.join(0.5)
    assert second.is_alive(), "a piece passing the limit was taken while the first was unwritten"
    f.gate.set()
    second.join(30)
    assert not second.is_alive()
    behind.flush()
    assert f.getvalue() == b"x" * 10 + b"y" * 10
    behind.close()


def test_an_error_in_the_thread_is_raised_by_the_next_call():
    class Full(io.BytesIO):
        name = "/spill/part-0.rows"

        def write(self, b):
            raise OSError(28, "No space left on device")

    behind = WriteBehind()
    behind.write(Full(), [b"abc"])
    with pytest.raises(OSError, match="No space left on device: writing /spill/part-0.rows"):
        behind.flush()
    with pytest.raises(OSError, match="No space left"):  # and every later one: nothing more is written
        behind.write(io.BytesIO(), [b"def"])
    behind.close()
    fresh = io.BytesIO()  # until close() acknowledges it (BOAT's node files go on after a failed update)
    behind.write(fresh, [b"ghi"])
    behind.flush()
    assert fresh.getvalue() == b"ghi"


def test_close_drops_what_is_not_written_and_ends_the_thread():
    f = GatedFile()
    behind = WriteBehind(limit=1 << 20)
    before = set(threading.enumerate())
    for _ in range(5):
        behind.write(f, [b"z" * 100])
    (thread,) = [t for t in threading.enumerate() if t not in before and t.name == "rainforest-write-behind"]
    closer = threading.Thread(target=behind.close)
    closer.start()
    closer.join(0.3)  # close() has dropped the pieces waiting and waits for the write under way
    f.gate.set()
    closer.join(30)
    assert not closer.is_alive() and not thread.is_alive()
    assert f.getvalue() == b"z" * 100


def test_a_disk_filling_up_under_the_spill_is_one_error_naming_the_file_and_leaves_no_folder(tmp_path, monkeypatch):
    from rainforest import DecisionTreeClassifier, spill
    from rainforest.datasets import agrawal_table

    table = agrawal_table(60_000, function=7, seed=4)
    real_open = open

    class Filling:  # a rows file whose disk fills up after 100 kB
        def __init__(self, f):
            self.f, self.name, self.written = f, f.name, 0

        def write(self, b):
            self.written += memoryview(b).nbytes
            if self.written > 100_000:
                raise OSError(28, "No space left on device")
            return self.f.write(b)

        def __getattr__(self, attr):
            return getattr(self.f, attr)

    def filling_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        return Filling(f) if str(path).endswith(".rows") and "w" in mode else f

    monkeypatch.setattr(spill, "open", filling_open, raising=False)
    clf = DecisionTreeClassifier(max_depth=6, memory_budget="1MB", spill_dir=str(tmp_path))
    with pytest.raises(OSError, match=r"No space left on device: writing .*part-0\.rows"):
        clf.fit(table, target="class")
    assert list(tmp_path.iterdir()) == []  # the spill folder went with the error
    monkeypatch.undo()
    fitted = DecisionTreeClassifier(max_depth=6, memory_budget="1MB", spill_dir=str(tmp_path)).fit(table, target="class")
    assert fitted.grow_stats_.spill_bytes > 100_000  # the spill this test fills up is written where there is room


def test_what_a_spill_hands_over_follows_the_budget(monkeypatch):
    from rainforest import DecisionTreeClassifier, write_behind
    from rainforest.datasets import agrawal_table

    limits = []
    init = WriteBehind.__init__

    def noted(self, limit=write_behind.WRITE_AHEAD):
        limits.append(limit)
        init(self, limit)

    monkeypatch.setattr(WriteBehind, "__init__", noted)
    table = agrawal_table(60_000, function=7, seed=4)
    small = DecisionTreeClassifier(max_depth=6, memory_budget="1MB").fit(table, target="class")
    assert small.grow_stats_.spill_bytes > 0 and limits == [1 << 20]  # 1 MB // 16 is under the 1 MB floor
    assert write_behind.write_ahead(64 * 10**6) == 4 * 10**6  # a sixteenth of the budget
    assert write_behind.write_ahead(10**9) == 62_500_000 and write_behind.write_ahead(10**12) == write_behind.WRITE_AHEAD


def test_a_copy_keeps_the_limit_and_nothing_pending():
    """A fitted BOAT model pickles with its node files (scikit-learn's check_estimators_pickle): the
    copy of their writer keeps its limit, starts with no thread, and writes."""
    import pickle
    f = GatedFile()
    behind = WriteBehind(limit=1234)
    behind.write(f, [b"pending"])
    copy = pickle.loads(pickle.dumps(behind))
    assert copy.limit == 1234 and copy._thread is None and copy._pending == 0
    out = io.BytesIO()
    copy.write(out, [b"abc"])
    copy.flush()
    assert out.getvalue() == b"abc"
    f.gate.set()
    behind.flush()
    assert f.getvalue() == b"pending"
