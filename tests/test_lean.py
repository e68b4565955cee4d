"""Small data is not taxed for what it does not use: ``import rainforest`` loads no optional backend,
and a pass over rows in memory starts no reading thread."""
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rainforest.storage import ParquetSource, TableSource
from rainforest.storage.arrow_numpy import arrow_values, numpy_column
from rainforest.storage.selection import FoldRule, select_rows

OPTIONAL = ["dask", "distributed", "duckdb", "psycopg", "onnx", "onnxruntime", "pandas", "matplotlib",
            "pyarrow.dataset", "sklearn", "numba"]


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {OPTIONAL!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    return out.stdout.split()


def test_import_loads_no_optional_backend():
    assert loaded_after("import rainforest, rainforest.storage\nfrom rainforest.storage import DaskSource") == []


def test_a_learner_is_imported_on_first_use():
    assert loaded_after("from rainforest import DecisionTreeClassifier") == ["numba"]


def test_a_numeric_fit_does_not_load_pandas():
    """pyarrow's own numpy conversions import pandas (0.15 s of a fresh process); a fit, prediction and
    score on numeric arrays build their Arrow columns from the arrays' bytes instead."""
    code = ("import numpy as np\nfrom rainforest import DecisionTreeClassifier\n"
            "X = np.random.default_rng(0).normal(size=(500, 4)); y = (X[:, 0] > 0).astype(np.int64)\n"
            "m = DecisionTreeClassifier(max_depth=3).fit(X, y, sample_weight=np.ones(500))\n"
            "assert m.score(X, y) > 0.9 and m.predict_proba(X[:5]).shape == (5, 2)")
    assert "pandas" not in loaded_after(code)


def test_a_binned_fit_loads_neither_exact_mode_nor_pyarrow_compute():
    """A fresh process's first fit imports what it uses: exact mode's search (its modules define a
    dozen cached kernels) and ``pyarrow.compute`` (it builds every compute function's wrapper) load
    only for fits that call them (exact mode's tests use the first)."""
    unused = ["rainforest.exact_search", "rainforest.exact_gather", "rainforest.gather_kernels", "pyarrow.compute"]
    code = ("import sys, numpy as np\nfrom rainforest import DecisionTreeClassifier\n"
            "X = np.random.default_rng(0).normal(size=(500, 4)); y = (X[:, 0] > 0).astype(np.int64)\n"
            "m = DecisionTreeClassifier(max_depth=3).fit(X, y); assert m.score(X, y) > 0.9; m.predict_proba(X)\n"
            f"print(*[m for m in {unused!r} if m in sys.modules])\n"
            "DecisionTreeClassifier(max_depth=3).fit(X, y.astype(str))\n"
            f"print(*[m for m in {unused!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.splitlines() == ["", "pyarrow.compute"]  # string labels are coded by pyarrow.compute


def test_a_fit_on_arrays_loads_no_file_database_or_cluster_source():
    """The sources that read files, databases or a cluster are imported on first use, also by name
    (``from rainforest.storage import ParquetSource``)."""
    sources = ["parquet", "dask", "sql", "postgres", "duckdb_source"]
    code = ("import sys, numpy as np\nfrom rainforest import DecisionTreeClassifier\n"
            "X = np.random.default_rng(0).normal(size=(500, 4)); y = (X[:, 0] > 0).astype(np.int64)\n"
            "m = DecisionTreeClassifier(max_depth=3).fit(X, y); m.predict(X)\n"
            f"print(*[s for s in {sources!r} if 'rainforest.storage.' + s in sys.modules])\n"
            "from rainforest.storage import ParquetSource, SqlSource\n"
            "print(ParquetSource.__module__, SqlSource.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    first, second = out.stdout.splitlines()
    assert first == "" and second == "rainforest.storage.parquet rainforest.storage.sql"
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        import rainforest.storage
        rainforest.storage.Nothing


def test_a_fit_does_not_import_scipy_linear_algebra():
    """Numba's BLAS probe imports ``scipy.linalg`` (0.17 s of a fresh process) when its first kernel
    loads; ``rainforest.threads`` answers it from whether SciPy is installed, with the same answer."""
    code = ("import importlib.util, numpy as np\nfrom rainforest import DecisionTreeClassifier\n"
            "X = np.random.default_rng(0).normal(size=(500, 4)); y = (X[:, 0] > 0).astype(np.int64)\n"
            "assert DecisionTreeClassifier(max_depth=3).fit(X, y).score(X, y) > 0.9\n"
            "import sys; from numba.np import arraymath\n"
            "assert 'scipy.linalg' not in sys.modules\n"
            "assert arraymath._HAVE_BLAS == (importlib.util.find_spec('scipy') is not None)\n"
            "import numba.np.linalg; assert numba.np.linalg.ensure_blas.__name__ == 'ensure_blas'")
    loaded_after(code)


def test_arrow_columns_share_numpy_bytes():
    for dtype in ("int8", "uint16", "int32", "int64", "float32", "float64"):
        values = np.arange(10).astype(dtype)[::3]  # strided: copied once into a contiguous buffer
        column = numpy_column(values)
        assert column.type == pa.from_numpy_dtype(values.dtype) and column.to_pylist() == values.tolist()
        sliced = column.slice(1)
        view = arrow_values(sliced)
        assert view.dtype == values.dtype and view.tolist() == values[1:].tolist() and not view.flags.writeable
    floats = np.array([1.0, np.nan])
    assert numpy_column(floats).null_count == 0 and numpy_column(floats, nan_as_null=True).null_count == 1
    assert np.isnan(arrow_values(pa.array([1.0, None]))[1])  # nulls: pyarrow's conversion, NaN
    assert numpy_column(np.array([True, False])).type == pa.bool_()
    assert arrow_values(pa.chunked_array([pa.array([1, 2]), pa.array([3])])).tolist() == [1, 2, 3]
    with pytest.raises(pa.ArrowInvalid):  # not read as rows x columns of one flat buffer
        numpy_column(np.ones((3, 2)))


class ThreadsSeen:
    """A pass task recording the threads alive while batches are folded."""

    def __init__(self):
        self.names = set()

    def new_state(self):
        return 0

    def update(self, state, batch, first_row):
        self.names |= {t.name for t in threading.enumerate()}
        return state + batch.num_rows

    def merge(self, a, b):
        return a + b


def test_in_memory_passes_start_no_reading_thread(tmp_path):
    table = pa.table({"x": np.arange(1000.0)})
    task = ThreadsSeen()
    assert TableSource(table=table).run_pass(task, ["x"], batch_size=100) == 1000
    assert "rainforest-prefetch" not in task.names
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=100)
    files = ThreadsSeen()  # a file is read ahead while the batch before is folded
    assert ParquetSource(str(tmp_path / "t.parquet")).run_pass(files, ["x"], batch_size=100) == 1000
    assert "rainforest-prefetch" in files.names
    folds = ThreadsSeen()  # a selection reads ahead where its base does
    assert select_rows(TableSource(table=table), FoldRule(5, keep=(0,))).run_pass(folds, ["x"]) == 200
    assert "rainforest-prefetch" not in folds.names
