"""Pass states as they travel between processes (a Dask worker's, pickled): smaller, and the same."""
import copy
import pickle

import numpy as np
import pyarrow as pa
import pytest

from rainforest.avc import AvcState
from rainforest.counting import narrowed_counts


@pytest.mark.parametrize("high, kind", [(200, np.uint8), (60_000, np.uint16), (4_000_000_000, np.uint32)])
def test_whole_counts_travel_as_narrow_integers_and_come_back_bit_for_bit(high, kind):
    rng = np.random.default_rng(0)
    counts = rng.integers(0, high + 1, size=(64, 300, 3)).astype(np.float64)
    counts[0, 0, 0] = high
    state = AvcState(counts.copy())
    assert narrowed_counts(counts).dtype == kind
    sent = pickle.dumps(state, protocol=5)
    assert len(sent) < counts.nbytes * np.dtype(kind).itemsize / 8 + 1000  # the float64 bytes / 8, 4 or 2
    back = pickle.loads(sent)
    assert back.counts.dtype == np.float64
    assert back.counts.tobytes() == counts.tobytes()


@pytest.mark.parametrize("counts", [np.array([[0.5, 2.0]]), np.array([[2.0 ** 32, 1.0]]), np.array([[-1.0, 3.0]]),
                                    np.array([[np.nan, 1.0]]), np.array([[1e-300, 0.0]])],
                         ids=["fraction", "too large", "negative", "nan", "tiny"])
def test_counts_that_are_not_small_whole_numbers_travel_as_they_are(counts):
    """Fractional weights and a regressor's sums: float64, unchanged."""
    assert narrowed_counts(counts) is counts
    back = pickle.loads(pickle.dumps(AvcState(counts.copy())))
    assert back.counts.tobytes() == counts.tobytes()


def test_a_deep_copy_is_its_own_float_counts():
    state = AvcState(np.ones((2, 3, 2)))
    twin = copy.deepcopy(state)
    twin.counts += 1
    assert twin.counts.dtype == np.float64 and state.counts.sum() == 12 and twin.counts.sum() == 24


def _profile(table):
    from rainforest.profile import ProfileTask
    from rainforest.schema import NUMERIC

    task = ProfileTask({c: NUMERIC for c in table.column_names if c != "class"}, "class", None, "a table", False, 255)
    state = task.new_state()
    for i, batch in enumerate(table.to_batches(50_000)):
        state = task.update(state, batch, i * 50_000)
    return task.shrink(state)


def test_a_profile_travels_with_its_few_valued_sample_columns_coded():
    """Agrawal's integer columns (age, elevel, car, zipcode, hyears) travel as one-byte codes, its
    continuous ones as they are; the sample, its hashes and the schema come back the same."""
    from rainforest.datasets import agrawal_table
    from rainforest.profile import ProfileTask
    from rainforest.schema import NUMERIC

    profile = _profile(agrawal_table(300_000, function=7))
    sample, hashes = profile.held_sample().copy(), profile.sample_hash[:profile.n_sample].copy()
    coded = [isinstance(c, tuple) for c in profile.__getstate__()["sample"]]
    assert coded == [name in ("age", "elevel", "car", "zipcode", "hyears") for name in profile.sample_columns]
    sent = pickle.dumps(profile, protocol=5)
    assert len(sent) < 0.65 * (sample.nbytes + hashes.nbytes)  # 5 of 9 columns: 1 byte a value, not 8
    back = pickle.loads(sent)
    assert back.held_sample().tobytes() == sample.tobytes() and back.sample_hash.tobytes() == hashes.tobytes()
    task = ProfileTask({c: NUMERIC for c in profile.sample_columns}, "class", None, "a table", False, 255)
    cuts = [a.cuts.tobytes() for a in task.schema(profile).attributes]
    assert [a.cuts.tobytes() for a in task.schema(back).attributes] == cuts and len(cuts) == 9


def test_a_sample_column_whose_bits_its_known_values_miss_travels_as_it_is():
    """-0.0 where the known value is 0.0 (equal, not the same bits), and NaN: the column is not coded."""
    from rainforest.profile_data import coded_column, decoded_column

    known = np.array([0.0, 1.0, 2.0])
    for column in (np.array([1.0, -0.0, 2.0]), np.array([1.0, np.nan]), np.array([1.0, 3.0])):
        assert coded_column(column, known) is column
    column = np.array([2.0, 0.0, 1.0, 0.0])
    values, codes = coded_column(column, known)
    assert codes.dtype == np.uint8 and decoded_column((values, codes)).tobytes() == column.tobytes()
    assert coded_column(np.arange(300.0), np.arange(300.0)) is not None  # too many values: as it is
    assert isinstance(coded_column(np.arange(300.0), np.arange(300.0)), np.ndarray)


def test_an_exact_profile_codes_a_few_valued_column_whose_pending_parts_repeat_values():
    """Exact mode keeps each batch's distinct values as pending parts until they are merged; parts
    repeating the same 200 values (800 entries together) still code the column: it holds 200."""
    from rainforest.profile import ProfileTask
    from rainforest.schema import NUMERIC

    rng = np.random.default_rng(3)
    n = 40_000
    table = pa.table({"x": rng.integers(0, 200, n).astype(np.float64), "z": rng.random(n),
                      "class": rng.integers(0, 2, n)})
    task = ProfileTask({"x": NUMERIC, "z": NUMERIC}, "class", None, "a table", True, 255, key_cap=1 << 20)
    state = task.new_state()
    for i, batch in enumerate(table.to_batches(10_000)):
        state = task.update(state, batch, i * 10_000)
    profile = task.shrink(state)
    x = profile.columns["x"]
    assert sum(len(part) for part in x.pending) + len(x.distinct) > 256  # repeats across the parts
    sample = profile.held_sample().copy()
    coded = [isinstance(c, tuple) for c in profile.__getstate__()["sample"]]
    assert coded == [name == "x" for name in profile.sample_columns]
    assert pickle.loads(pickle.dumps(profile)).held_sample().tobytes() == sample.tobytes()
