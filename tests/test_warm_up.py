"""The first fit's compile time: the split search compiled in a second process by the specializations
a fit uses (rainforest.warm_up), and the numeric-only search that leaves the categorical code out."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np

from rainforest import warm_up
from rainforest.criteria import CRITERIA, _pair_searches, best_splits

PROBE = textwrap.dedent("""
    import json, sys
    import numpy as np
    from rainforest import DecisionTreeClassifier, warm_up
    from rainforest import criteria
    categorical = sys.argv[1] == "1"
    kernels = {"sums": criteria._node_sums, "pairs": criteria._pair_searches, "winners": criteria._node_winners}
    warm_up.compile_search(categorical)
    before = {k: sorted(map(str, d.signatures)) for k, d in kernels.items()}
    rng = np.random.default_rng(0)
    X = {"a": rng.random(3000), "b": rng.integers(0, 9, 3000).astype(float)}
    if categorical:
        X["c"] = np.array(list("xyz"))[rng.integers(0, 3, 3000)]
    y = (X["a"] > 0.4).astype(int)
    import pyarrow as pa
    table = pa.table({**X, "y": y})
    for max_bins, weight in ((255, None), (None, None), (255, rng.random(3000) + 0.5)):
        DecisionTreeClassifier(max_depth=4, max_bins=max_bins).fit(table, target="y", sample_weight=weight)
    after = {k: sorted(map(str, d.signatures)) for k, d in kernels.items()}
    print(json.dumps({"before": before, "after": after}))
""")


def _probe(categorical: bool) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, "1" if categorical else "0"], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_warm_up_compiles_the_specializations_fits_use():
    """After compile_search, fits (binned, exact, weighted) add no specialization of the search's
    kernels: the child process's work is the very work a fit would do."""
    for categorical in (False, True):
        seen = _probe(categorical)
        assert seen["after"] == seen["before"], categorical
        assert all(seen["before"][k] for k in seen["before"])


ROUTING_PROBE = textwrap.dedent("""
    import json
    import numpy as np
    import pyarrow as pa
    from rainforest import DecisionTreeClassifier, partition, rows, tree, warm_up
    kernels = {"blocks": partition.cut_blocks, "route": rows._route_blocks, "place": rows._place_children,
               "copy": rows._copy_blocks, "predict": tree.route_rows}
    warm_up.compile_routing(n_attributes=3, n_classes=2)
    warm_up.compile_prediction()
    before = {k: sorted(map(str, d.signatures)) for k, d in kernels.items()}
    rng = np.random.default_rng(0)
    table = pa.table({"a": rng.random(3000), "b": rng.integers(0, 9, 3000), "c": rng.normal(size=3000).astype(np.float32),
                      "y": rng.integers(0, 2, 3000)})
    clf = DecisionTreeClassifier(max_depth=5).fit(table, target="y")
    clf.predict(table)
    after = {k: sorted(map(str, d.signatures)) for k, d in kernels.items()}
    print(json.dumps({"before": before, "after": after, "kept": int(clf.grow_stats_.kept_rows)}))
""")


def test_warm_up_compiles_the_routing_and_prediction_a_binned_fit_uses():
    """``rainforest demo`` compiles the kept rows' regroup (compile_routing) before its first fit and
    the child compiles prediction (compile_prediction): a binned, unweighted fit and its predictions
    then add no specialization of those kernels, so neither is compiled twice."""
    out = subprocess.run([sys.executable, "-c", ROUTING_PROBE], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["kept"] > 0  # the fit kept its rows in memory, so it regrouped them
    assert seen["after"] == seen["before"]
    assert all(len(v) == 1 for v in seen["before"].values())


def test_numeric_search_without_categorical_code_finds_the_same_splits():
    """A search over numeric attributes only (max_exhaustive dropped to None, the specialization
    without categorical code) chooses what the search with a categorical attribute beside them
    does when that attribute cannot split (one category holds every row)."""
    rng = np.random.default_rng(5)
    k, n_classes, n = 6, 3, 4000
    sizes = [9, 13, 4]  # two numeric attributes' slots and a categorical one's, missing slots included
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    node = rng.integers(0, k, n)
    y = rng.integers(0, n_classes, n)
    slots = [rng.integers(0, sizes[0], n), rng.integers(0, sizes[1], n), np.zeros(n, np.int64)]
    block = np.zeros((k, offsets[-1], n_classes))
    for a, s in enumerate(slots):
        np.add.at(block, (node, offsets[a] + s, y), 1.0)
    block = block.reshape(k * offsets[-1], n_classes)
    starts = np.arange(k + 1, dtype=np.int64) * offsets[-1]
    node_offsets = np.tile(offsets, (k, 1))
    for crit in CRITERIA.values():
        a = best_splits(block, starts, node_offsets, np.array([0, 0, 0], np.int8), n_classes, False, crit, False, 1.0,
                        0.0, 12, 13)
        b = best_splits(block, starts, node_offsets, np.array([0, 0, 1], np.int8), n_classes, False, crit, False, 1.0,
                        0.0, 12, 13)
        assert (a[0] >= 0).all()
        for x, z in zip(a[:6], b[:6]):
            np.testing.assert_array_equal(x, z)
    max_exhaustive = [str(sig[10]) for sig in _pair_searches.signatures]
    assert "none" in max_exhaustive and "int64" in max_exhaustive


def test_start_and_stop_reap_the_child():
    child = warm_up.start(categorical=False)
    assert child is not None
    warm_up.stop(child)
    assert child.returncode is not None
    warm_up.stop(None)  # nothing started: nothing to do
