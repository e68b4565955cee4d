"""Encoding rows into slots, and the profiling pass's binning sample.

The slots a data pass counts are computed column by column from Arrow, in each column's own type
(:func:`rainforest.row_encoding.attribute_slots`); they must equal those of the float64 matrix that
routing uses (:meth:`Schema.encode` then :func:`rainforest.row_encoding.to_slots`), for every type.
"""
import pickle

import numpy as np
import pyarrow as pa
import pytest

from rainforest.profile import ProfileTask, few_distinct
from rainforest.rowhash import row_hash
from rainforest.row_encoding import encode_rows, to_slots, value_slots
from rainforest.rows import slot_dtype
from rainforest.schema import CATEGORICAL, CUTS_PER_CELL, LUT_CELLS, NUMERIC, slot_lookups
from rainforest.storage.base import travelling

INTEGER_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def _profiled_schema(table, kinds, exact, max_bins=16):
    task = ProfileTask(kinds, "y", None, "test", exact=exact, max_bins=0 if exact else max_bins, sample_rows=500)
    state = task.update(task.new_state(), table.to_batches()[0], 0)
    return task.schema(state)


def _matrix_slots(schema, batch):
    X = schema.encode(batch)
    S = np.empty(X.shape, slot_dtype(schema), order="F")
    to_slots(X, schema.kinds, np.array([a.n_slots for a in schema.attributes], np.int64), *schema.slot_tables(), S)
    return S


def _columns(typ, rng, n, nulls):
    """Values of ``typ`` over its range's low end (and negatives where signed), with a few nulls."""
    lo = -300 if pa.types.is_signed_integer(typ) or pa.types.is_floating(typ) else 0
    hi = {8: 100, 16: 3000, 32: 70000, 64: 70000}[typ.bit_width] if pa.types.is_integer(typ) else 5000
    lo = max(lo, -100) if typ.bit_width == 8 else lo
    values = rng.integers(lo, hi, n).astype(typ.to_pandas_dtype())
    if pa.types.is_floating(typ):
        values = values + rng.random(n).astype(values.dtype)
    mask = (rng.random(n) < 0.05) if nulls else None
    return pa.array(values, type=typ, mask=mask)


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "binned"])
@pytest.mark.parametrize("nulls", [False, True], ids=["plain", "nulls"])
@pytest.mark.parametrize("typ", INTEGER_TYPES + [pa.float32(), pa.float64()], ids=str)
def test_slots_from_arrow_equal_slots_of_the_float_matrix(typ, nulls, exact):
    rng = np.random.default_rng(typ.bit_width + 7 * nulls + 3 * exact)
    train = pa.table({"x": _columns(typ, rng, 2000, nulls), "c": pa.array(rng.choice(["a", "b", "c"], 2000)),
                      "y": pa.array(rng.integers(0, 2, 2000))})
    schema = _profiled_schema(train, {"x": NUMERIC, "c": CATEGORICAL}, exact)
    # new rows: values between, below and above the training values, unseen categories, nulls
    test = pa.table({"x": _columns(typ, rng, 5000, nulls), "c": pa.array(rng.choice(["a", "c", "zz", None], 5000)),
                     "y": pa.array(rng.integers(0, 2, 5000))})
    batch = test.to_batches()[0]
    rows = encode_rows(schema, batch, None)
    np.testing.assert_array_equal(rows.S, _matrix_slots(schema, batch))
    assert (rows.S[:, 1] == 3).sum() == sum(v in ("zz", None) for v in test.column("c").to_pylist())
    if pa.types.is_integer(typ) and not exact:  # the direct table covers the cuts' integer span
        assert schema.integer_tables()[0] is not None


def test_integers_too_large_for_a_table_are_searched():
    """int64 values past 2**52 (no exact float table) and uint64 (no signed index) take the search path."""
    rng = np.random.default_rng(1)
    big = (np.int64(1) << 60) + rng.integers(-10 ** 6, 10 ** 6, 3000) * 1024
    train = pa.table({"b": pa.array(big[:1000]), "u": pa.array(rng.integers(0, 500, 1000).astype(np.uint64)),
                      "y": pa.array(rng.integers(0, 2, 1000))})
    for exact in (True, False):
        schema = _profiled_schema(train, {"b": NUMERIC, "u": NUMERIC}, exact)
        assert schema.integer_tables()[0] is None
        batch = pa.table({"b": pa.array(big), "u": pa.array(rng.integers(0, 600, 3000).astype(np.uint64)),
                          "y": pa.array(rng.integers(0, 2, 3000))}).to_batches()[0]
        np.testing.assert_array_equal(encode_rows(schema, batch, None).S, _matrix_slots(schema, batch))


@pytest.mark.parametrize("n_cuts", [10, 5_000, 300_000])
def test_slot_search_over_the_grid_equals_searchsorted(n_cuts):
    """The lookup grid only narrows the search: past 64k cuts it holds a cell per 16 cuts, and over
    skewed cuts (most cells empty, a few crowded) every slot still equals ``searchsorted(cuts, x)``,
    cuts themselves, values between them, outside them and NaN (the missing slot) included."""
    rng = np.random.default_rng(n_cuts)
    cuts = np.unique(np.concatenate([rng.lognormal(0, 3, n_cuts), rng.uniform(-1, 1, n_cuts // 10)]))
    lo, scale, table, _ = slot_lookups(cuts, np.array([0, len(cuts)], np.int64))
    lo, scale = float(lo[0]), float(scale[0])
    assert len(table) - 1 == min(max(LUT_CELLS, len(cuts) // CUTS_PER_CELL), 4 * len(cuts))
    # cell g holds the slot of its left edge, as numpy's search of the edges gives it
    np.testing.assert_array_equal(table, np.searchsorted(cuts, lo + np.arange(len(table)) / scale, side="left"))
    x = np.concatenate([cuts, np.nextafter(cuts, np.inf), np.nextafter(cuts, -np.inf), rng.lognormal(0, 3, 50_000),
                        [-np.inf, np.inf, cuts[0] - 1, cuts[-1] + 1, np.nan]])
    out = np.empty(len(x), np.uint32)
    value_slots(x, cuts, table, lo, scale, len(cuts) + 1, out)
    expected = np.where(np.isnan(x), len(cuts) + 1, np.searchsorted(cuts, x, side="left"))
    np.testing.assert_array_equal(out, expected)


def test_few_distinct_values_are_numpys_unique_up_to_the_limit():
    """Binned mode's question "at most max_bins distinct values?" (a column with so few gets a cut
    between each two): the held values merged with a batch's are ``np.unique``'s (-0.0 equals 0.0,
    the first one seen held), or None past the limit, for repeated, signed-zero, infinite and
    continuous values and any limit."""
    rng = np.random.default_rng(7)
    pools = [lambda n: rng.normal(size=n), lambda n: rng.integers(-5, 5, n).astype(float),
             lambda n: rng.choice([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.5], n),
             lambda n: np.round(rng.normal(size=n) * 3) / 2]
    for trial in range(2000):
        limit = int(rng.integers(1, 300))
        known = np.unique(rng.choice([-0.0, 0.0, 1.0, 3.0, 7.5], rng.integers(0, 4)))[:limit]
        values = pools[trial % 4](int(rng.integers(0, 300)))
        got, expected = few_distinct(known, values, limit), np.unique(np.concatenate([known, values]))
        if len(expected) > limit:
            assert got is None
        else:
            np.testing.assert_array_equal(got, expected)
            first_zero = next((v for v in np.concatenate([known, values]) if v == 0), None)
            if first_zero is not None:  # the zero held is the first one seen, sign and all
                assert np.signbit(got[got == 0][0]) == np.signbit(first_zero)


@pytest.mark.parametrize("batch_rows", [97, 1000, 20_000])
def test_binning_sample_holds_the_smallest_hashes_however_rows_arrive(batch_rows):
    """The sample filled and pruned in place is the ``sample_rows`` rows of smallest hash, whatever the
    batch size, and also when partial profiles (a Dask job's partitions) are merged."""
    rng = np.random.default_rng(0)
    n, size, seed = 20_000, 700, 5
    table = pa.table({"a": pa.array(rng.integers(0, 10 ** 6, n)), "b": pa.array(rng.random(n)),
                      "y": pa.array(rng.integers(0, 2, n))})
    task = ProfileTask({"a": NUMERIC, "b": NUMERIC}, "y", None, "test", exact=False, max_bins=32, sample_rows=size,
                       seed=seed)
    parts = []
    for start in range(0, n, 5_000):  # four partitions, each folded batch by batch
        state = task.new_state()
        for b in table.slice(start, 5_000).to_batches(max_chunksize=batch_rows):
            state = task.update(state, b, start)
            start += b.num_rows
        parts.append(state)
    # what a Dask worker sends (storage.base.travelling): pruned and cut to the rows held (any pickle
    # of a profile is: Profile.__getstate__), smaller than the buffers it fills; merging those
    # gives the same sample as merging the states as they were
    copies = [pickle.loads(pickle.dumps(p)) for p in parts]
    shrunk = [pickle.dumps(travelling(task, p)) for p in copies]
    assert all(len(a) <= len(pickle.dumps(p)) < p.sample.nbytes + p.sample_hash.nbytes
               for a, p in zip(shrunk, parts))
    merged_shrunk = pickle.loads(shrunk[0])
    for a in shrunk[1:]:
        merged_shrunk = travelling(task, task.merge(merged_shrunk, pickle.loads(a)))
    merged = parts[0]
    for p in parts[1:]:
        merged = task.merge(merged, p)
    task._prune(merged_shrunk)
    assert merged_shrunk.n_sample == size
    whole = task.new_state()
    for b in table.to_batches(max_chunksize=batch_rows * 3):
        whole = task.update(whole, b, whole.n_rows)
    smallest = np.sort(np.argsort(row_hash(np.arange(n, dtype=np.uint64), seed), kind="stable")[:size])
    expected = np.column_stack([table.column("a").to_numpy()[smallest], table.column("b").to_numpy()[smallest]])
    for state in (merged, whole, merged_shrunk):
        task._prune(state)
        assert state.n_sample == size
        held = state.held_sample()
        np.testing.assert_array_equal(held[np.lexsort(held.T[::-1])], expected[np.lexsort(expected.T[::-1])])
    # the pass over the whole table keeps the rows in row order
    np.testing.assert_array_equal(whole.held_sample(), expected)


@pytest.mark.parametrize("batch_rows", [7_000, 50_000])
def test_exact_profile_holds_every_distinct_value_once_in_order(batch_rows):
    """Exact mode's cuts: each batch's distinct values (marked for integers in a small range, sorted
    otherwise), merged as sorted runs; equal to np.unique of the whole column for any batching."""
    rng = np.random.default_rng(batch_rows)
    n = 300_000
    small = rng.integers(-50, 50, n).astype(np.int32)
    wide = rng.integers(-(1 << 40), 1 << 40, n)  # int64 over too wide a range to mark
    floats = np.round(rng.normal(0, 1000, n), 1)  # ~20,000 distinct values, repeated
    many = rng.random(n)  # nearly all distinct: several merges of 65,536+ pending values
    nulls = rng.random(n) < 0.1
    table = pa.table({"small": pa.array(small, mask=nulls), "wide": pa.array(wide), "floats": pa.array(floats),
                      "many": pa.array(many, mask=~nulls & (rng.random(n) < 0.05)),
                      "y": pa.array(rng.integers(0, 2, n))})
    kinds = {c: NUMERIC for c in ("small", "wide", "floats", "many")}
    task = ProfileTask(kinds, "y", None, "test", exact=True, max_bins=0)
    state, start = task.new_state(), 0
    for b in table.to_batches(max_chunksize=batch_rows):
        state = task.update(state, b, start)
        start += b.num_rows
    schema = task.schema(state)
    for a in schema.attributes:
        values = table.column(a.name).to_numpy(zero_copy_only=False).astype(np.float64)
        np.testing.assert_array_equal(a.cuts, np.unique(values[~np.isnan(values)]))


def _numpy_quantile_edges(values, max_bins):
    """The bin edges' rule in numpy, as profile_query's SQL says it too."""
    from rainforest.profile_data import midpoints
    u, c = np.unique(values, return_counts=True)
    if len(u) <= max_bins:
        return midpoints(u)
    cum = np.cumsum(c)
    cut_after = np.unique(np.searchsorted(cum, cum[-1] * np.arange(1, max_bins) / max_bins, side="left"))
    return midpoints(u)[cut_after[cut_after < len(u) - 1]]


@pytest.mark.parametrize("max_bins", [2, 3, 16, 255, 1000])
def test_quantile_edges_kernel_follows_the_numpy_rule(max_bins):
    """The kernel's edges (one sort, linear scans) are the numpy rule's, value for value: continuous,
    few-valued, heavy-tied and extreme samples."""
    from rainforest.profile_data import quantile_edges
    rng = np.random.default_rng(max_bins)
    samples = [rng.normal(size=1000), rng.integers(0, 50, 1000).astype(float), np.round(rng.exponential(size=5000), 1),
               np.concatenate([np.zeros(900), rng.normal(size=100)]), np.empty(0), np.array([1.0]),
               np.repeat(rng.normal(size=400), rng.integers(1, 50, 400)), np.array([5e-324, 1e-323, -1.7e308, 1.7e308])]
    for x in samples:
        np.testing.assert_array_equal(quantile_edges(x, max_bins), _numpy_quantile_edges(x, max_bins))


def test_slot_values_stand_for_their_slots_in_every_kind_of_column():
    """A slot's value (rainforest.slot_values, which fitted trees route for kept rows): the value itself
    in an exact or keyed column, the category's code, NaN where missing; a bin's value (its upper edge)
    encodes into the same bin.  The lookup kernel against this definition, column kind by column kind."""
    from rainforest.slot_values import slot_tables, slot_values

    rng = np.random.default_rng(8)
    n = 3000
    wide = rng.normal(size=n)
    wide[::97] = np.nan
    few = rng.integers(0, 40, n).astype(float)
    few[::89] = np.nan
    cats = np.array(["a", "b", "c", None], dtype=object)[rng.integers(0, 4, n)]
    table = pa.table({"wide": wide, "few": few, "cat": pa.array(cats), "y": rng.integers(0, 2, n)})
    kinds = {"wide": NUMERIC, "few": NUMERIC, "cat": CATEGORICAL}
    for exact, key_cap in ((True, 500), (True, None), (False, None)):
        task = ProfileTask(kinds, "y", None, "test", exact=exact, max_bins=0 if exact else 16, sample_rows=1000,
                           key_cap=key_cap)
        schema = task.schema(task.update(task.new_state(), table.to_batches()[0], 0))
        assert (schema.attributes[0].keys is not None) == (key_cap is not None)
        batch = table.to_batches()[0]
        S = encode_rows(schema, batch, None).S
        X = slot_values(schema.attributes, S)
        assert np.array_equal(X, slot_values(schema.attributes, S, slot_tables(schema.attributes)), equal_nan=True)
        raw = schema.encode(batch)
        if exact:  # every column's value given back, bit for bit
            assert np.array_equal(X, raw, equal_nan=True)
        else:
            assert np.array_equal(X[:, 2], raw[:, 2], equal_nan=True)
            assert np.array_equal(np.isnan(X[:, :2]), np.isnan(raw[:, :2]))
            back = encode_rows(schema, pa.record_batch({"wide": X[:, 0], "few": X[:, 1], "cat": batch.column("cat"),
                                                        "y": batch.column("y")}), None).S
            assert np.array_equal(back, S)
            assert (X[:, 0][~np.isnan(X[:, 0])] >= raw[:, 0][~np.isnan(raw[:, 0])]).all()


@pytest.mark.parametrize("typ", INTEGER_TYPES)
def test_integer_class_codes_are_those_index_in_gives(typ):
    """Integer labels are coded without ``pyarrow.compute`` (a table over the classes' range, or a search
    of the sorted classes where they are sparse); the codes, the code of absent rows and the error for a
    value the profile never saw are those of the general path (``index_in``), which float labels take."""
    from rainforest.errors import DataError
    from rainforest.schema import Label
    signed8 = typ.bit_width == 8 and pa.types.is_signed_integer(typ)
    sets = [[-5, 0, 3, 7] if signed8 else [0, 3, 7, 100]] + ([[0, 3, 7, 100_000]] if typ.bit_width >= 32 else [])
    for classes in sets:  # a table's range; sparse classes, searched
        label = Label("y", classes)
        rng = np.random.default_rng(1)
        values = rng.choice(classes, 500)
        arr = pa.array(values, typ)
        as_floats = pa.array(values.astype(np.float64))  # a float column takes the general path
        general = Label("y", [float(c) for c in classes])
        assert np.array_equal(label.codes(arr), general.codes(as_floats))
        assert label.codes(arr).dtype == np.int32
        absent = rng.random(500) < 0.3
        unseen = values.copy()
        unseen[absent] = 1  # never profiled, but absent (weight 0): code 0
        assert np.array_equal(label.codes(pa.array(unseen, typ), absent), general.codes(as_floats, absent))
        for bad in (1, max(classes) + 1):  # inside the classes' range, and past it
            unseen[np.flatnonzero(~absent)[3]] = bad
            for lab, column in ((label, pa.array(unseen, typ)), (general, pa.array(unseen.astype(np.float64)))):
                with pytest.raises(DataError, match=rf"the target column 'y' has a value {bad}(\.0)? not seen "
                                                    r"when profiling"):
                    lab.codes(column, absent)
    assert Label("y", [0, 1]).codes(pa.array([], pa.int64())).tolist() == []
