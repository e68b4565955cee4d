"""Growth gives freed memory back to the operating system between levels (rainforest.budget): what a
level frees (Arrow's batch buffers, glibc heap blocks of spill reads) is not held under the next
level's peak."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from conftest import dataset_path
from rainforest import DecisionTreeClassifier, budget, grow


def test_every_level_of_a_large_fit_gives_freed_memory_back(monkeypatch):
    """Every level of a fit of at least grow.GIVE_BACK_ROWS rows; none of a smaller one, whose levels
    free too little to pay for it (a 1,000-row fit takes about 2.5 ms)."""
    calls = []
    monkeypatch.setattr(grow, "give_back_free_memory", lambda: calls.append(1))
    table = pq.read_table(dataset_path("magic"))
    kw = dict(max_bins=None, max_depth=6, memory_budget="1500KB")
    small = DecisionTreeClassifier(**kw).fit(table, target="class")
    assert small.grow_stats_.spill_reads > 0 and calls == []
    monkeypatch.setattr(grow, "GIVE_BACK_ROWS", table.num_rows)
    clf = DecisionTreeClassifier(**kw).fit(table, target="class")
    assert len(calls) == len(clf.grow_stats_.passes_per_level) == clf.get_depth()


def test_giving_back_keeps_arrow_and_numpy_data_intact():
    """Releasing unused memory leaves live buffers alone: a table and an array read the same after."""
    table = pa.table({"x": pc.add(pa.array(np.arange(1_000_000, dtype=np.int64)), 1)})  # in Arrow's pool
    held = np.arange(2_000_000, dtype=np.float64)
    freed = [np.ones(3_000_000) for _ in range(4)]
    del freed
    budget.give_back_free_memory()
    assert pa.default_memory_pool().bytes_allocated() >= table.nbytes
    assert table.column("x").to_numpy()[-1] == 1_000_000 and held.sum() == np.arange(2_000_000).sum()
