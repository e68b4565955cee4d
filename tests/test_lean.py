"""Small data is not taxed for what it does not use: ``import rainforest`` loads no optional backend,
and a pass over rows in memory starts no reading thread."""
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rainforest.storage import ParquetSource, TableSource
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
