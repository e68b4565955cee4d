"""A row's identity does not depend on how a source lists the files: the same trees and forests from
the Parquet source, ``dd.read_parquet``, a ``DaskSource`` and DuckDB over one hive-partitioned
folder of twelve partitions (``month=1`` ... ``month=12``, where text order would put ``month=10``
before ``month=2``)."""
import dask
import dask.dataframe as dd
import pyarrow.parquet as pq
import pytest

from rainforest import DecisionTreeClassifier, RandomForestClassifier
from rainforest.storage import DaskSource, DuckDBSource, ParquetSource
from rainforest.storage.parquet import expand_paths, natural_key

FEATURES = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]


@pytest.fixture(scope="module")
def by_month(tmp_path_factory):
    """Agrawal rows split into twelve hive partitions, each its own row count."""
    from rainforest.datasets import write_agrawal_parquet

    root = tmp_path_factory.mktemp("by_month")
    flat = root / "flat"
    write_agrawal_parquet(flat, 24_000, function=7, n_files=1, seed=3)
    table = pq.read_table(next(flat.glob("*.parquet")))
    start = 0
    for month in range(1, 13):
        n = 1500 + 100 * month
        (root / "data" / f"month={month}").mkdir(parents=True)
        pq.write_table(table.slice(start, n), root / "data" / f"month={month}" / "part-0.parquet")
        start += n
    return root / "data"


def test_files_are_listed_in_natural_order(by_month):
    months = [int(p.split("month=")[1].split("/")[0]) for p in expand_paths(str(by_month))]
    assert months == list(range(1, 13))
    assert sorted(["a10", "a9", "b1"], key=natural_key) == ["a9", "a10", "b1"]


@pytest.mark.parametrize("learner", ["tree", "forest"])
def test_every_source_gives_the_same_model(by_month, learner):
    def fit(X):
        est = (DecisionTreeClassifier(max_depth=8, sample_size=5000) if learner == "tree" else
               RandomForestClassifier(n_estimators=4, max_depth=6, sample_size=5000))
        return est.fit(X, target="class", features=FEATURES)

    def model(est):
        return est.tree_.to_json() if learner == "tree" else est.to_json()

    reference = model(fit(ParquetSource(str(by_month))))
    with dask.config.set(scheduler="synchronous"):
        assert model(fit(dd.read_parquet(str(by_month)))) == reference
        assert model(fit(DaskSource(str(by_month)))) == reference
    assert model(fit(DuckDBSource(parquet=str(by_month)))) == reference
