"""The runnable examples of docs/examples/ run as written: each is a script a newcomer can copy;
each asserts what it shows, so a wrong result fails it here."""
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "docs" / "examples").glob("*.py"))


def test_the_examples_are_found():
    assert {p.stem for p in EXAMPLES} >= {"parquet_tree", "duckdb_tree", "dask_tree", "forest", "naive_bayes"}


# The Dask example starts a LocalCluster of worker processes.
@pytest.mark.parametrize("example", [pytest.param(p, marks=pytest.mark.cluster) if p.stem == "dask_tree" else p
                                     for p in EXAMPLES], ids=lambda p: p.stem)
def test_example_runs(example, tmp_path):
    r = subprocess.run([sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{example.name} failed:\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip(), f"{example.name} printed nothing"
    assert list(tmp_path.iterdir()) == []  # examples clean up after themselves
