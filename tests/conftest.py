import importlib.util
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))

DATASETS = Path(__file__).resolve().parent / "data"  # the real UCI datasets, in the repository (data/README.md)


def dataset_path(name: str) -> str:
    path = DATASETS / f"{name}.parquet"
    if not path.exists():  # the data lives in the repository: a missing file is an error, not a skip
        raise FileNotFoundError(f"test dataset {path} is missing (see tests/data/README.md)")
    return str(path)


def numeric_xy(name: str, dtype=np.float32):
    """Features as a float32 matrix (what scikit-learn trains on) and the labels of a test dataset."""
    t = pq.read_table(dataset_path(name))
    cols = [c for c in t.column_names if c != "class"]
    X = np.column_stack([t.column(c).to_numpy().astype(dtype) for c in cols])
    return X, t.column("class").to_numpy(zero_copy_only=False), cols


@pytest.fixture
def datasets():
    return dataset_path


def load_script(name: str):
    """A module of scripts/ (not a package), imported by path once and shared: ``import name`` finds it too."""
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def postgres_missing() -> str | None:
    """Why no PostgreSQL server can be started here (what is missing), or None."""
    pg = load_script("postgres_server")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg (psycopg 3) is not installed: pip install 'psycopg[binary]'"
    try:
        pg.find_binaries()
        pg.run_as_postgres()
    except RuntimeError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def postgres_url():
    """URL of a PostgreSQL server on 127.0.0.1 started by scripts/postgres_server.py for the whole session.

    Skipped, with the reason, where PostgreSQL's binaries or psycopg are missing.
    """
    reason = postgres_missing()
    if reason:
        pytest.skip(reason)
    server = load_script("postgres_server").PostgresServer()
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
