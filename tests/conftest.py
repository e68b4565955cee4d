import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def dataset_path(name: str) -> str:
    path = DATASETS / f"{name}.parquet"
    if not path.exists():  # CI has shared/ beside the clone; a missing file is an error, not a skip
        raise FileNotFoundError(f"shared dataset {path} is missing (expected ../shared/datasets beside the repo)")
    return str(path)


def numeric_xy(name: str, dtype=np.float32):
    """Features as a float32 matrix (what scikit-learn trains on) and the labels of a shared dataset."""
    t = pq.read_table(dataset_path(name))
    cols = [c for c in t.column_names if c != "class"]
    X = np.column_stack([t.column(c).to_numpy().astype(dtype) for c in cols])
    return X, t.column("class").to_numpy(zero_copy_only=False), cols


@pytest.fixture
def datasets():
    return dataset_path
