"""Dask sources: the tree of the Parquet source, on threads, a LocalCluster and real processes.

The real cluster is a ``dask scheduler`` and ``dask worker`` processes on loopback, started
by ``scripts/dask_cluster.py``; one of them is killed in the middle of a fit. The services
of ``docker-compose.yml`` are run as local processes with their own commands.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from dask.callbacks import Callback  # noqa: E402

from dask_faults import StallOnce  # noqa: E402
from rainforest import (AdaBoostClassifier, DecisionTreeClassifier, NaiveBayesClassifier,  # noqa: E402
                        RandomForestClassifier, load)
from rainforest.cli import main as cli_main  # noqa: E402
from rainforest.datasets import write_agrawal_parquet  # noqa: E402
from rainforest.inputs import to_source  # noqa: E402
from rainforest.storage import DaskSource, ParquetSource, SourceError  # noqa: E402
from rainforest.storage import dask_store, partition_cache, worker_memo  # noqa: E402

# dask's own Parquet reader calls a pandas method pandas deprecates; not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dask_cluster import ClusterError, LoopbackCluster  # noqa: E402

N_FILES = 6
PARAMS = dict(max_depth=6, max_bins=64, sample_size=5000)
# The workers unpickle tasks defined in this folder (dask_faults); rainforest itself comes from the
# install, with no PYTHONPATH (rainforest.storage cannot be shadowed by a worker's spill folder).
WORKER_ENV = {"PYTHONPATH": os.pathsep.join(p for p in [str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")] if p),
              "NUMBA_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "train"
    write_agrawal_parquet(path, 30_000, function=7, n_files=N_FILES, seed=5)
    return str(path)


@pytest.fixture(scope="module")
def reference(data):
    """The Parquet source's tree and pass count, per algorithm."""
    out = {}
    for algorithm in ("read", "hybrid"):
        source = ParquetSource(data)
        clf = DecisionTreeClassifier(algorithm=algorithm, **PARAMS).fit(source, target="class")
        assert clf.n_passes_ == source.n_passes
        out[algorithm] = (clf.tree_.to_json(), clf.n_passes_)
    assert out["read"][1] == 1 + PARAMS["max_depth"]  # one pass per level: several distributed rounds
    return out


def _fit(X, algorithm="read"):
    return DecisionTreeClassifier(algorithm=algorithm, **PARAMS).fit(X, target="class")


def _start(cluster: LoopbackCluster) -> LoopbackCluster:
    try:
        cluster.start()
    except (ClusterError, OSError) as exc:
        print(f"cannot start dask scheduler/worker processes: {exc}")
        pytest.skip(f"cannot start dask scheduler/worker processes: {exc}")
    return cluster


@pytest.fixture(scope="module")
def cluster():
    """A real ``dask scheduler`` and two ``dask worker`` processes (no nanny) on 127.0.0.1."""
    c = _start(LoopbackCluster(n_workers=2, nthreads=1, env=WORKER_ENV))
    yield c
    c.stop()


@pytest.fixture(scope="module")
def process_cluster():
    """A client of a ``LocalCluster`` of two worker processes (no PYTHONPATH), shared by the tests that
    fit on one and then check that no worker holds anything: starting one took 3-5 s a test.  Not the
    default client: the other tests' sources without one run on threads."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc, set_as_default=False) as client:
        yield client


class _Tasks(Callback):
    """Keys of the tasks Dask's local scheduler runs."""

    def __init__(self):
        super().__init__()
        self.keys = []

    def _pretask(self, key, dsk, state):
        self.keys.append(key)


# -- one tree, however the passes run --------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["read", "hybrid"])
def test_threaded_scheduler_builds_the_parquet_tree(data, reference, algorithm):
    tree, passes = reference[algorithm]
    # RF-Hybrid keeps no rows in the client (only AVC-groups come back): the partitions are kept where
    # they were computed (here, this process's row store), so it reads the source twice, as ParquetSource
    ddf = dd.read_parquet(data)
    assert ddf.npartitions == N_FILES
    source = to_source(ddf)
    assert isinstance(source, DaskSource)
    with _Tasks() as ran:
        clf = _fit(source, algorithm)
    assert clf.tree_.to_json() == tree and clf.grow_stats_.kept_rows == 0
    assert clf.n_passes_ == source.n_passes == passes  # lengths came from the footers: no extra pass
    assert _held_nowhere()
    folds = [k for k in ran.keys if isinstance(k, str) and k.startswith("rainforest-fold-")]
    assert len(folds) == (1 + PARAMS["max_depth"]) * N_FILES  # every read was one task per partition
    assert _fit(DaskSource(data), algorithm).tree_.to_json() == tree  # a path: each file a partition
    assert _fit(dd.read_parquet(data), algorithm).tree_.to_json() == tree  # a Dask DataFrame as such


def test_partition_lengths_counted_when_dask_does_not_know_them(data, reference):
    tree, passes = reference["read"]
    ddf = dd.read_parquet(data).map_partitions(lambda df: df[df["age"] >= 0])  # lengths unknown to Dask
    source = DaskSource(ddf)
    clf = _fit(source)
    assert clf.tree_.to_json() == tree
    assert source.n_passes == passes + 1 and clf.n_passes_ == passes + 1  # counting rows read them: a pass
    assert source.partition_lengths() == ParquetSource(data).fragment_rows()


def test_local_cluster_builds_the_parquet_tree(data, reference):
    tree, passes = reference["read"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as lc, distributed.Client(lc) as client:
        with distributed.get_task_stream(client) as stream:
            clf = _fit(DaskSource(dd.read_parquet(data), client=client))
        assert clf.tree_.to_json() == tree and clf.n_passes_ == passes
        workers = {t["worker"] for t in stream.data if str(t["key"]).startswith("rainforest-fold-")}
        assert len(workers) == 2
        # the default client is used without being named
        assert _fit(dd.read_parquet(data)).tree_.to_json() == tree


@pytest.mark.cluster
def test_scheduler_and_worker_processes_build_the_parquet_tree(data, reference, cluster):
    tree, passes = reference["read"]
    with DaskSource(data, scheduler=cluster.address) as source:
        clf = _fit(source)
        assert clf.tree_.to_json() == tree
        assert clf.n_passes_ == source.n_passes == passes
        hybrid = _fit(source, "hybrid")  # no rows travel back from the workers: the same passes as RF-Read
        assert hybrid.tree_.to_json() == reference["hybrid"][0] and hybrid.grow_stats_.kept_rows == 0
    with distributed.Client(cluster.address, set_as_default=False) as client:
        assert _fit(DaskSource(dd.read_parquet(data), client=client)).tree_.to_json() == tree
        pids = set(client.run(os.getpid).values())
    assert pids == {p.pid for p in cluster.workers}  # the work ran in the processes started here


@pytest.mark.cluster
def test_the_command_line_trains_predicts_and_evaluates_on_the_cluster(data, cluster, tmp_path, capsys):
    """train, predict and evaluate --scheduler: the cluster's workers read DATA; the model is the
    Parquet source's, predictions equal the in-process ones row for row."""
    model, pred = tmp_path / "model.json", tmp_path / "pred.parquet"
    assert cli_main(["train", data, "--target", "class", "--model", str(model), "--algorithm", "read",
                     "--max-depth", "6", "--max-bins", "64", "--scheduler", cluster.address]) == 0
    clf = load(model)
    local = DecisionTreeClassifier(max_depth=6, max_bins=64, algorithm="read").fit(data, target="class")
    assert clf.tree_.to_json() == local.tree_.to_json() and clf.n_passes_ == local.n_passes_
    assert cli_main(["predict", str(model), data, "--out", str(pred), "--scheduler", cluster.address]) == 0
    np.testing.assert_array_equal(pq.read_table(pred).column("prediction").to_numpy(), clf.predict(data))
    capsys.readouterr()
    assert cli_main(["evaluate", str(model), data, "--scheduler", cluster.address]) == 0
    out = capsys.readouterr().out
    assert f"accuracy:   {clf.score(data, target='class'):.6f}" in out


def _fit_while_a_worker_dies(source_class, data, marker, algorithm: str, inspect) -> tuple:
    """Fit on a fresh loopback cluster of two workers through ``source_class``, whose stalled task
    (dask_faults.StallOnce) writes its worker's pid to ``marker``; a thread SIGKILLs that worker
    (one of this cluster's, never another process). Returns the model, the killed worker's pid and
    status, and ``inspect(source)`` taken before the source closes."""
    killed = {}
    cluster = _start(LoopbackCluster(n_workers=2, nthreads=1, env=WORKER_ENV))

    def kill():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if marker.exists() and marker.read_text():
                index = [p.pid for p in cluster.workers].index(int(marker.read_text()))
                killed["pid"] = cluster.kill_worker(index)
                killed["status"] = cluster.workers[index].returncode
                return
            time.sleep(0.02)

    try:
        killer = threading.Thread(target=kill, daemon=True)
        killer.start()
        with source_class(data, scheduler=cluster.address) as source:
            clf = _fit(source, algorithm)
            seen = inspect(source)
        killer.join(timeout=5)
    finally:
        cluster.stop()
    return clf, killed, seen


@pytest.mark.cluster
@pytest.mark.parametrize("kill_in_pass", [3])
def test_a_worker_killed_in_the_middle_of_a_fit(data, reference, tmp_path, kill_in_pass):
    tree, passes = reference["read"]
    marker = tmp_path / "stalled.pid"
    from_row = sum(ParquetSource(data).fragment_rows()[:N_FILES // 2])  # a partition in the middle

    class StallingSource(DaskSource):
        def fold(self, task, columns, batch_size=65536, progress=None):
            if self.n_passes == kill_in_pass:
                task = StallOnce(task, str(marker), from_row)
            return super().fold(task, columns, batch_size, progress)

    clf, killed, survivors = _fit_while_a_worker_dies(StallingSource, data, marker, "read",
                                                      lambda source: set(source.client.run(os.getpid).values()))
    assert killed.get("status") == -signal.SIGKILL  # a worker really died, stalled inside pass 3
    assert len(survivors) == 1 and killed["pid"] not in survivors
    assert clf.tree_.to_json() == tree
    assert clf.n_passes_ == passes


# -- other learners and prediction --------------------------------------------------------------------
# -- the row store on the workers (storage/dask_store.py) --------------------------------------------
def _store_folders(dask_worker=None) -> list:
    """The row store's folders in a worker's local directory (or the temporary directory here)."""
    import glob as glob_module
    import tempfile as tempfile_module

    base = dask_worker.local_directory if dask_worker is not None else tempfile_module.gettempdir()
    return [f for kind in ("store", "batches") for f in glob_module.glob(os.path.join(base, f"rainforest-{kind}-*"))]


def _held_nowhere(client=None) -> bool:
    """No process holds store data: nothing in memory, no file, no folder (here and on every worker)."""
    held = [module.held() for module in (dask_store, partition_cache)]
    if client is not None:
        held += [h for module in (dask_store, partition_cache) for h in client.run(module.held).values()]
    folders = _store_folders() + ([f for fs in client.run(_store_folders).values() for f in fs] if client else [])
    return all(h == {} for h in held) and folders == []


def test_threaded_scheduler_keeps_the_encoded_partitions(data, reference):
    """Parquet files on Dask: the first growth pass encodes each partition once and keeps it; later
    levels count the kept partitions, so the source is read twice, and the tree is the Parquet
    source's. With a budget that holds one partition of six in memory, the others go to the local
    disk: still two passes, the same tree."""
    tree, passes = reference["hybrid"]
    source = DaskSource(data)
    with _Tasks() as ran:
        clf = _fit(source, "hybrid")
    assert clf.tree_.to_json() == tree and clf.n_passes_ == source.n_passes == 2 == passes
    assert clf.n_passes_per_level_ == [1] + [0] * (PARAMS["max_depth"] - 1)
    folds = [k for k in ran.keys if isinstance(k, str) and k.startswith("rainforest-fold-")]
    assert len(folds) == (1 + PARAMS["max_depth"]) * N_FILES  # every level still one task per partition
    assert _held_nowhere()
    # a quarter of 300 KB holds one partition's 5,000 rows of 14 encoded bytes (slots, class, node)
    tight = DecisionTreeClassifier(algorithm="hybrid", memory_budget="300KB", **PARAMS).fit(DaskSource(data),
                                                                                           target="class")
    assert tight.tree_.to_json() == tree and tight.n_passes_ == 2
    assert _held_nowhere()


def test_kept_partitions_never_exceed_the_workers_share_of_the_budget(data, reference, monkeypatch):
    """The store's own accounting, after every pass: a quarter of 1 MB (262,144 bytes) holds three
    partitions of 5,000 rows at 14 bytes (slots, class code, node) in memory, not a fourth; the
    other three stream to files on the local disk.  Two passes, the same tree; then nothing held."""
    seen = []
    run_pass = DaskSource.run_pass

    def watched(self, task, *args, **kwargs):
        state = run_pass(self, task, *args, **kwargs)
        held = dask_store.held()
        seen.append((sum(v for k, v in held.items() if k != "disk"), sum(held.get("disk", {}).values()),
                     len(_store_folders())))
        return state

    monkeypatch.setattr(DaskSource, "run_pass", watched)
    clf = DecisionTreeClassifier(memory_budget="1MB", **PARAMS).fit(DaskSource(data), target="class")
    assert clf.tree_.to_json() == reference["hybrid"][0] and clf.n_passes_ == 2
    partition = 5_000 * (9 + 1 + 4)
    assert max(m for m, _, _ in seen) == 3 * partition <= 2**20 // 4
    assert seen[1:] == [(3 * partition, 3 * partition, 1)] * (len(seen) - 1)  # after the first growth pass
    assert _held_nowhere()


@pytest.mark.parametrize("budget", ["1GB", "300KB"])  # the kept rows in memory, or in files on the disk
def test_kept_partitions_drop_the_rows_of_finished_leaves(tmp_path, budget, monkeypatch):
    """Rows that reached a node no longer growing leave the kept pieces at the pass that routed them
    there, and no later pass counts them: the same tree from fewer rows, and what is left of a piece
    is exactly its rows at nodes still alive.  (Agrawal F1: a leaf at depth 2 holds 30 % of the rows.)"""
    from rainforest.avc import AvcPass

    data = str(tmp_path / "f1")
    write_agrawal_parquet(data, 30_000, function=1, n_files=N_FILES, seed=5)
    tree = DecisionTreeClassifier(algorithm="hybrid", **PARAMS).fit(data, target="class").tree_.to_json()

    seen = []  # per counted piece or kept partition: rows before, rows after, whether every row left is alive
    count_piece, count_held = AvcPass.count_piece, AvcPass.count_held

    def watched(self, state, rows):
        before = len(rows)
        state = count_piece(self, state, rows)
        alive = self.alive is None or bool(self.alive[rows.node].all()) or len(rows) == before
        seen.append((before, len(rows), alive))
        return state

    def watched_held(self, state, held):  # a partition kept in memory, grouped by node (AvcPass.hold)
        before = held.size
        state = count_held(self, state, held)
        alive = bool(self.alive[held.nodes[held.ends > held.starts]].all())
        seen.append((before, held.size, alive))
        return state

    monkeypatch.setattr(AvcPass, "count_piece", watched)
    monkeypatch.setattr(AvcPass, "count_held", watched_held)
    clf = DecisionTreeClassifier(algorithm="hybrid", memory_budget=budget, **PARAMS).fit(DaskSource(data),
                                                                                       target="class")
    assert clf.tree_.to_json() == tree and clf.n_passes_ == 2
    assert any(after < before for before, after, _ in seen)  # leaves before the last level: rows dropped
    assert all(alive for _, _, alive in seen)
    kept_at_end = sum(after for _, after, _ in seen[-N_FILES:])
    assert kept_at_end < 30_000
    assert _held_nowhere()


@pytest.mark.cluster
@pytest.mark.parametrize("frame", [False, True])  # Parquet files each worker reads, or a Dask DataFrame
@pytest.mark.parametrize("budget", ["1GB", "300KB"])  # the kept rows in the workers' memory, or on their disks
def test_local_cluster_processes_keep_partitions_on_their_workers(data, reference, budget, frame, process_cluster):
    """Worker processes (no PYTHONPATH): each partition is encoded once, on a worker, and counted
    there at every later level, by one task per worker for all its partitions, from its memory or
    its local disk; after the fit no worker holds any of it."""
    tree = reference["hybrid"][0]
    client = process_cluster
    with distributed.get_task_stream(client) as stream:
        clf = DecisionTreeClassifier(algorithm="hybrid", memory_budget=budget, **PARAMS).fit(
            DaskSource(dd.read_parquet(data) if frame else data, client=client), target="class")
    assert clf.tree_.to_json() == tree and clf.n_passes_ == 2
    # Passes are ordered by when the scheduler recorded their tasks (the stream's order): a pass starts
    # once the one before it has finished.  Not by the tasks' start times: each worker shifts those by
    # its estimate of the scheduler's clock, which on a loaded CI machine put the profiling pass after
    # the first growth pass.
    tasks = [(n, *str(t["key"]).split("-")[1:], t["worker"]) for n, t in enumerate(stream.data)
             if str(t["key"]).startswith(("rainforest-fold-", "rainforest-folds-"))]
    passes = sorted({(min(t[0] for t in tasks if t[2] == uid), uid) for _, _, uid, _, _ in tasks})
    assert len(passes) == 1 + PARAMS["max_depth"] if budget == "1GB" else len(passes) > 1 + PARAMS["max_depth"]
    home = {}
    for k, (_, uid) in enumerate(passes[1:]):  # a task per worker thread, each for a range of partitions
        ran = [(tuple(map(int, i.split("."))), worker) for _, kind, u, i, worker in tasks if u == uid]
        # (a DataFrame's partitions are first computed one task each, wherever the scheduler says)
        assert len(ran) == (N_FILES if frame and k == 0 else 2)
        assert sorted(i for parts, _ in ran for i in parts) == list(range(N_FILES))
        for parts, worker in ran:
            for i in parts:
                assert home.setdefault(i, worker) == worker  # counted where the first growth pass kept it
    assert len(set(home.values())) == 2  # spread over both workers
    assert _held_nowhere(client)


@pytest.mark.cluster
def test_a_worker_killed_while_it_holds_kept_partitions(data, reference, tmp_path):
    """SIGKILL in pass 4 (the fourth level, counted from partitions kept on the workers): the dead
    worker's partitions are read and encoded again on the survivor, the tree is the same, and
    that pass counts as a pass over the source (2 + 1); nothing is held after the fit."""
    tree = reference["hybrid"][0]
    marker = tmp_path / "stalled.pid"

    class StallingSource(DaskSource):
        calls = 0

        def run_pass(self, task, columns, batch_size=65536, progress=None):
            StallingSource.calls += 1
            if StallingSource.calls == 4:
                task = StallOnce(task, str(marker), 0)
            return super().run_pass(task, columns, batch_size, progress)

    clf, killed, nothing_held = _fit_while_a_worker_dies(StallingSource, data, marker, "hybrid",
                                                         lambda source: _held_nowhere(source.client))
    assert nothing_held
    assert killed.get("status") == -signal.SIGKILL  # a worker really died, stalled inside pass 4
    assert clf.tree_.to_json() == tree
    assert clf.n_passes_ == 3


FOREST = dict(n_estimators=6, max_depth=5, random_state=3)


def _forest(X, **kw):
    return RandomForestClassifier(**FOREST, **kw).fit(X, target="class")


@pytest.fixture(scope="module")
def forest_local(data):
    return _forest(data)


@pytest.mark.parametrize("budget", ["1GB", "300KB"])  # the kept rows in memory, or in files on the disk
def test_a_forest_counts_the_encoded_partitions_kept_where_they_were_read(data, forest_local, budget, monkeypatch):
    """A forest on Dask: its first growth pass encodes each partition where it is read and keeps it
    (the tree's row store: memory, then the local disk), every later level counts what is kept, so
    the source is read twice, and the trees are the local forest's; then nothing is held.  Kept
    pieces are counted from the positions of their rows (each row's bootstrap draw), so a store that
    lost them would change the forest: a mutation that shifts those positions is caught."""
    for source in (DaskSource(data), dd.read_parquet(data)):
        clf = _forest(source, memory_budget=budget)
        assert [t.to_json() for t in clf.estimators_] == [t.to_json() for t in forest_local.estimators_]
        assert clf.n_passes_ == 2 and clf.n_passes_per_level_[0] == 1 and not any(clf.n_passes_per_level_[1:])
        assert _held_nowhere()
    from rainforest import forest_passes

    monkeypatch.setattr(forest_passes.ForestPass, "count_piece",
                        lambda self, state, piece: self.count(state, piece.rows.S, piece.rows.y, piece.rows.w,
                                                              piece.first_row + 1))
    shifted = _forest(DaskSource(data), memory_budget=budget)
    assert [t.to_json() for t in shifted.estimators_] != [t.to_json() for t in forest_local.estimators_]
    assert _held_nowhere()


@pytest.mark.cluster
def test_a_forest_on_worker_processes_keeps_its_partitions_there(data, forest_local, process_cluster):
    clf = _forest(DaskSource(data, client=process_cluster))
    assert [t.to_json() for t in clf.estimators_] == [t.to_json() for t in forest_local.estimators_]
    assert clf.n_passes_ == 2
    assert _held_nowhere(process_cluster)


def test_naive_bayes_and_boosting_fit_on_a_dask_dataframe(data):
    nb_local = NaiveBayesClassifier().fit(data, target="class")
    nb_dask = NaiveBayesClassifier().fit(dd.read_parquet(data), target="class")
    assert nb_dask.n_passes_ == nb_local.n_passes_ == 1
    # Gaussian moments are merged per partition (the parallel formula), so equal to rounding
    np.testing.assert_allclose(nb_dask.theta_, nb_local.theta_, rtol=1e-12)
    np.testing.assert_allclose(nb_dask.var_, nb_local.var_, rtol=1e-12)

    ab_local = AdaBoostClassifier(n_estimators=4).fit(data, target="class")
    ab_dask = AdaBoostClassifier(n_estimators=4).fit(dd.read_parquet(data), target="class")
    # one process grows every round from the rows it encoded once (rainforest/boost_store.py); a cluster's
    # rounds after the first from the raw batches its first read kept (storage/partition_cache.py)
    assert ab_local.n_passes_ == ab_dask.n_passes_ == 2 and len(ab_dask.estimators_) == 4
    for a, b in zip(ab_local.estimators_, ab_dask.estimators_, strict=True):  # boosting weights are fractions:
        assert np.array_equal(a.feature, b.feature) and np.array_equal(a.threshold, b.threshold)
    np.testing.assert_allclose(ab_dask.estimator_weights_, ab_local.estimator_weights_, rtol=1e-9)
    assert np.array_equal(ab_dask.predict(data), ab_local.predict(data))


def _adaboost_equals_local(data, source, local, moved_tasks=False):
    ab = AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=3), n_estimators=3).fit(source,
                                                                                              target="class")
    # the source read twice, as by one process: the cluster's rounds after the first weigh and encode the
    # raw batches the first round's read kept on the workers; the local fit's grow from its encoded rows
    assert local.n_passes_per_round_ == [1, 0, 0] and local.n_passes_ == 2
    if moved_tasks:  # worker processes: a round's task the scheduler moves to a worker not holding its
        # partition (work stealing: the tasks are sent there loosely) reads the source again, at most once a round
        assert ab.n_passes_per_round_[0] == 1 and all(p <= 1 for p in ab.n_passes_per_round_)
    else:
        assert ab.n_passes_per_round_ == [1, 0, 0] and ab.n_passes_ == 2
    for a, b in zip(local.estimators_, ab.estimators_, strict=True):  # boosting weights are fractions
        assert np.array_equal(a.feature, b.feature) and np.array_equal(a.threshold, b.threshold)
        np.testing.assert_allclose(b.value, a.value, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(ab.estimator_weights_, local.estimator_weights_, rtol=1e-9)
    assert np.array_equal(ab.predict(data), local.predict(data))
    return ab


@pytest.fixture(scope="module")
def adaboost_local(data):
    return AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=3), n_estimators=3).fit(data, target="class")


def test_adaboost_rounds_keep_their_weighted_rows_on_the_workers(data, adaboost_local):
    """AdaBoost of depth-3 trees on Dask: each round's first growth pass weighs and encodes the rows
    where the partitions are read and keeps them there, its later levels count them there (a pass a
    round; one process encodes the rows once for every round); the trees are the local ones.
    (The rounds' kept rows were once filled on the workers' copies of the task, and the trees
    differed.)"""
    for source in (DaskSource(data), dd.read_parquet(data)):
        _adaboost_equals_local(data, source, adaboost_local)
    assert _held_nowhere()


@pytest.mark.cluster
def test_adaboost_rounds_on_worker_processes(data, adaboost_local, cluster):
    with DaskSource(data, scheduler=cluster.address) as source:
        _adaboost_equals_local(data, source, adaboost_local, moved_tasks=True)
        assert _held_nowhere(source.client)
        assert not any(source.client.run(worker_memo.held).values())  # the learners' bits released too


def _bayes_rounds_read_once(data, source, moved_tasks=False):
    """Naive Bayes rounds on Dask: the first pass keeps each partition's raw batches where it read them
    (storage.partition_cache), every later round and the closing pass weigh and count those: the
    source is read once, as by one process over the files (its local copy), and the model is that one."""
    local = AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=4).fit(data, target="class")
    ab = AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=4).fit(source, target="class")
    rounds = len(local.estimators_)
    assert rounds == 4 and local.n_passes_per_round_ == [1, 0, 0, 0] and local.n_passes_ == 1
    if moved_tasks:  # a task moved off its partition's worker reads the source again (see _adaboost_equals_local)
        assert ab.n_passes_per_round_[0] == 1 and all(p <= 1 for p in ab.n_passes_per_round_ + [ab.n_passes_])
    else:
        assert ab.n_passes_per_round_ == [1, 0, 0, 0] and ab.n_passes_ == 1
    # the moments are merged per partition on Dask (the parallel formula): equal to rounding
    np.testing.assert_allclose(ab.estimator_weights_, local.estimator_weights_, rtol=1e-9)
    for a, b in zip(local.estimators_, ab.estimators_, strict=True):
        np.testing.assert_allclose(b.theta_, a.theta_, rtol=1e-9)
    assert np.array_equal(ab.predict(data), local.predict(data))


def test_naive_bayes_rounds_read_the_batches_kept_on_the_workers(data):
    for source in (DaskSource(data), dd.read_parquet(data)):
        _bayes_rounds_read_once(data, source)
    assert _held_nowhere()


@pytest.mark.cluster
def test_naive_bayes_rounds_on_worker_processes(data, cluster):
    with DaskSource(data, scheduler=cluster.address) as source:
        _bayes_rounds_read_once(data, source, moved_tasks=True)
        assert _held_nowhere(source.client)


def _no_room(path, schema):
    raise OSError(28, "No space left on device", path)


def test_adaboost_rounds_read_the_batches_kept_on_disk_or_the_source_again(data, adaboost_local, monkeypatch):
    """The raw batches AdaBoost's first round keeps where it read them (storage/partition_cache.py) go
    to the local disk past their share of the budget, and serve the later rounds from there: two
    passes, the local trees, no file left.  They are a cache: where the disk has no room for a
    partition, or with them released after the first round, a round reads the source again, and
    the trees are the same."""
    from rainforest import boosting

    room = []
    keep = DaskSource.keep_batches
    monkeypatch.setattr(DaskSource, "keep_batches", lambda self, fit_id, budget: room.append(budget) or keep(
        self, fit_id, 400_000))  # one partition of six (270 kB each) in memory
    files = []
    new_file = partition_cache._new_file
    monkeypatch.setattr(partition_cache, "_new_file", lambda *a: files.append(new_file(*a)) or files[-1])
    kept = _adaboost_equals_local(data, DaskSource(data), adaboost_local)
    assert room == [boosting.parse_bytes("1GB") // 4] and len(files) == N_FILES - 1
    assert _held_nowhere() and not any(os.path.exists(f) for f in files)

    # a disk that fills up keeps nothing there: those partitions are read again, the same trees
    real_written = partition_cache._written

    def full_disk(writer, path, fit_id, index, batch):
        if index % 2:
            raise_full = partition_cache.pa.ipc.new_stream
            monkeypatch.setattr(partition_cache.pa.ipc, "new_stream", _no_room)
            try:
                return real_written(writer, path, fit_id, index, batch)
            finally:
                monkeypatch.setattr(partition_cache.pa.ipc, "new_stream", raise_full)
        return real_written(writer, path, fit_id, index, batch)

    monkeypatch.setattr(partition_cache, "_written", full_disk)
    short = AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=3), n_estimators=3).fit(DaskSource(data),
                                                                                                 target="class")
    assert short.n_passes_per_round_ == [1, 1, 1]  # three partitions of six found no room: read each round
    assert [t.to_json() for t in short.estimators_] == [t.to_json() for t in kept.estimators_]
    assert _held_nowhere() and not any(os.path.exists(f) for f in files)
    monkeypatch.setattr(partition_cache, "_written", real_written)

    alpha = AdaBoostClassifier._alpha

    def release_then_alpha(self, err, k):  # at each round's end, the kept batches released
        held = partition_cache.held()
        for fit_id in (set(held) | set(held.get("disk", {}))) - {"disk"}:
            partition_cache.drop(fit_id)
        return alpha(self, err, k)

    monkeypatch.setattr(AdaBoostClassifier, "_alpha", release_then_alpha)
    ab = AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=3), n_estimators=3).fit(DaskSource(data),
                                                                                              target="class")
    assert ab.n_passes_per_round_ == [1, 1, 1] and ab.n_passes_ == 4
    assert [t.to_json() for t in ab.estimators_] == [t.to_json() for t in kept.estimators_]
    assert _held_nowhere()


def test_tree_rounds_on_dask_encode_each_batch_once(data, adaboost_local, monkeypatch):
    """A tree round on a cluster weighs the raw batches the workers keep, but their slots, the same at
    every round, are kept beside them by the first round (storage.worker_memo): later rounds score
    their trees on those slots and encode nothing again; the trees are the local ones, and those of
    rounds encoding every batch again; nothing is kept after the fit."""
    from rainforest import avc, boosted_source

    encoded = []
    slots = avc.AvcPass.slots
    monkeypatch.setattr(avc.AvcPass, "slots", lambda self, batch: encoded.append(batch.num_rows) or slots(self, batch))
    kept = _adaboost_equals_local(data, DaskSource(data), adaboost_local)
    assert sum(encoded) == N_FILES * 5_000  # each row once, by the first round
    assert worker_memo.held() == {} and _held_nowhere()
    encoded.clear()
    monkeypatch.setattr(boosted_source, "remembered", lambda fit_id, key, compute, room: compute())  # none kept
    again = _adaboost_equals_local(data, DaskSource(data), adaboost_local)
    assert sum(encoded) == 3 * N_FILES * 5_000
    assert [t.to_json() for t in again.estimators_] == [t.to_json() for t in kept.estimators_]


@pytest.mark.parametrize("learner", ["tree", "bayes"])
def test_rounds_weighed_on_dask_score_each_learner_once(data, learner, monkeypatch):
    """Rounds weighed where the partitions are read keep each learner's wrong-bits of a batch there
    (storage.worker_memo), so a learner scores each row once, not once per later round; the model is
    the one scoring every learner again (the memo's room 0), and nothing is kept after the fit."""
    from rainforest import boosting

    scored = []
    class_indices = AdaBoostClassifier._class_indices
    monkeypatch.setattr(AdaBoostClassifier, "_class_indices", staticmethod(
        lambda learners, batch: scored.append(len(learners) * batch.num_rows) or class_indices(learners, batch)))
    predicted = boosting.predicted_classes  # trees score the slots the workers keep (see the next test)
    monkeypatch.setattr(boosting, "predicted_classes",
                        lambda tree, attributes, S, tables: scored.append(len(S)) or predicted(tree, attributes, S, tables))
    base = DecisionTreeClassifier(max_depth=2) if learner == "tree" else NaiveBayesClassifier()

    def fit():
        scored.clear()
        model = AdaBoostClassifier(base, n_estimators=5).fit(DaskSource(data), target="class")
        return model, sum(scored)

    kept, rows_scored = fit()
    rounds, n_rows = len(kept.estimators_), N_FILES * 5_000
    assert rounds == 5 and worker_memo.held() == {}
    scorings = rounds if learner == "bayes" else rounds - 1  # naive Bayes: a closing pass scores the last one
    assert rows_scored == scorings * n_rows
    monkeypatch.setattr(boosting, "BITS_ROOM", 0)
    again, rows_scored_again = fit()
    assert rows_scored_again > rows_scored
    assert again.estimator_weights_.tolist() == kept.estimator_weights_.tolist()
    if learner == "tree":
        assert [t.to_json() for t in again.estimators_] == [t.to_json() for t in kept.estimators_]
    else:
        assert [e.model_dict() for e in again.estimators_] == [e.model_dict() for e in kept.estimators_]


@pytest.mark.cluster
def test_predict_on_a_dask_dataframe_is_lazy(data, cluster):
    clf = _fit(data)
    ddf = dd.read_parquet(data)
    with _Tasks() as ran:
        pred, proba = clf.predict(ddf), clf.predict_proba(ddf)
    assert ran.keys == []  # nothing read yet
    assert isinstance(pred, dd.Series) and isinstance(proba, dask.array.Array)
    assert pred.npartitions == N_FILES and proba.shape[1] == 2
    frame = pq.read_table(data).to_pandas()
    expected = clf.predict(frame)
    assert np.array_equal(expected, clf.predict(data))
    assert np.array_equal(pred.compute().to_numpy(), expected)
    assert np.array_equal(proba.compute(), clf.predict_proba(frame))
    assert list(ddf.assign(p=pred)["p"].compute()) == list(expected)  # aligned with the partitions
    with distributed.Client(cluster.address, set_as_default=False) as client:  # computed by worker processes
        assert np.array_equal(client.compute(pred).result().to_numpy(), expected)
    nb = NaiveBayesClassifier().fit(data, target="class")
    np.testing.assert_allclose(nb.predict_proba(ddf).compute(), nb.predict_proba(frame), rtol=1e-12)
    with pytest.raises(ValueError, match="'age'"):  # checked at once, not at compute()
        clf.predict(ddf.drop(columns=["age"]))


# -- bad input ----------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_a_clear_error_in_bounded_time(data, tmp_path, capsys):
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    t0 = time.monotonic()
    with pytest.raises(SourceError, match=f"Dask scheduler at '{address}'"):
        DaskSource(data, scheduler=address, connect_timeout=1)
    assert time.monotonic() - t0 < 15
    model = tmp_path / "model.json"
    t0 = time.monotonic()
    status = cli_main(["train", data, "--target", "class", "--model", str(model), "--scheduler", address])
    assert time.monotonic() - t0 < 25  # the default connect timeout is 10 s
    err = capsys.readouterr().err
    assert status == 2 and address in err and "cannot connect" in err
    assert not model.exists()
    with pytest.raises(SourceError, match="Dask DataFrame or a Parquet path"):
        DaskSource(42)


# -- docker-compose.yml ------------------------------------------------------------------------------------
def _compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _local_command(command: list, port: int, data_dir: str, env: dict) -> list:
    """A service's command for this machine: loopback addresses, a free port, the data volume in a folder."""
    out = []
    for i, arg in enumerate(command):
        arg = os.path.expandvars(arg.replace("${AGRAWAL_ROWS:-1000000}", env["AGRAWAL_ROWS"]))
        arg = arg.replace("tcp://scheduler:8786", f"tcp://127.0.0.1:{port}").replace("/data", data_dir)
        prev = command[i - 1] if i else ""
        if prev == "--host":
            arg = "127.0.0.1"
        elif prev == "--port":
            arg = str(port)
        elif prev == "--dashboard-address":
            arg = "127.0.0.1:0"
        elif arg.startswith("listen_addresses="):
            arg = "listen_addresses=127.0.0.1"
        out.append(arg)
    exe = Path(sys.executable)
    first = {"python": str(exe), "dask": str(exe.with_name("dask")), "rainforest": str(exe.with_name("rainforest"))}
    return [first.get(out[0], out[0])] + out[1:]


@pytest.mark.cluster
def test_docker_compose_services_do_their_jobs_as_local_processes(tmp_path):
    compose = _compose()
    services = compose["services"]
    assert {"scheduler", "worker-1", "worker-2", "postgres", "job"} <= set(services)
    volume = next(v.split(":")[0] for v in services["worker-1"]["volumes"] if v.endswith(":/data"))
    for name in ("worker-1", "worker-2", "job", "data"):  # one data volume, at the same path everywhere
        assert f"{volume}:/data" in services[name]["volumes"]
    assert volume in compose["volumes"]
    assert "tcp://scheduler:8786" in services["job"]["command"] and "--scheduler" in services["job"]["command"]
    assert services["postgres"]["image"].startswith("postgres")

    port, data_dir = _free_port(), str(tmp_path / "volume")
    os.makedirs(data_dir)
    # rainforest comes from the install (editable here, site-packages in the image), no PYTHONPATH.
    env = {**os.environ, "AGRAWAL_ROWS": "20000"}
    procs = []

    def service_env(name):
        return {**env, **{k: str(v) for k, v in (services[name].get("environment") or {}).items()}}

    def start(name):
        log = open(tmp_path / f"{name}.log", "wb")
        procs.append(subprocess.Popen(_local_command(services[name]["command"], port, data_dir, env), cwd=ROOT,
                                      env=service_env(name), stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))
        log.close()

    try:
        subprocess.run(_local_command(services["data"]["command"], port, data_dir, env), cwd=ROOT,
                       env=service_env("data"), check=True, timeout=120, capture_output=True)
        train = os.path.join(data_dir, "agrawal", "train")
        assert len(os.listdir(train)) == 8
        for name in ("scheduler", "worker-1", "worker-2"):
            start(name)
        with distributed.Client(f"tcp://127.0.0.1:{port}", timeout=30, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
        job = subprocess.run(_local_command(services["job"]["command"], port, data_dir, env), cwd=ROOT,
                             env=service_env("job"), timeout=180, capture_output=True, text=True)
        assert job.returncode == 0, job.stderr
        assert "on the Dask cluster at" in job.stdout
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    model = load(os.path.join(data_dir, "model.json"))
    local = DecisionTreeClassifier(max_depth=10).fit(train, target="class")
    assert model.tree_.to_json() == local.tree_.to_json()


def _as_postgres_user() -> list:
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("running as root without runuser: PostgreSQL refuses to run as root")
    return [runuser, "-u", "postgres", "--"]


@pytest.mark.postgres
def test_docker_compose_postgres_command_serves_sql(tmp_path):
    service = _compose()["services"]["postgres"]
    binaries = {b: shutil.which(b) for b in ("initdb", "postgres", "psql", "pg_isready")}
    if not all(binaries.values()):
        pytest.skip(f"PostgreSQL is not installed here (missing {[b for b, p in binaries.items() if not p]})")
    env = service["environment"]
    as_pg = _as_postgres_user()
    pgdata = Path(tempfile.mkdtemp(prefix="rf-pg-"))
    if as_pg:
        shutil.chown(pgdata, "postgres", "postgres")
    port = _free_port()
    proc = None
    try:
        subprocess.run(as_pg + [binaries["initdb"], "-D", str(pgdata / "db"), "-U", env["POSTGRES_USER"],
                                "--auth=trust"], check=True, capture_output=True, timeout=120)
        command = _local_command(service["command"], port, "", {"AGRAWAL_ROWS": ""})
        assert command[0] == "postgres"
        proc = subprocess.Popen(as_pg + [binaries["postgres"]] + command[1:] + [
            "-D", str(pgdata / "db"), "-p", str(port), "-k", str(pgdata)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while subprocess.run([binaries["pg_isready"], "-h", "127.0.0.1", "-p", str(port)],
                             capture_output=True).returncode != 0:
            assert proc.poll() is None and time.monotonic() < deadline, "postgres did not start"
            time.sleep(0.2)
        sql = [binaries["psql"], "-h", "127.0.0.1", "-p", str(port), "-U", env["POSTGRES_USER"], "-tA"]
        subprocess.run(sql + ["-d", "postgres", "-c", f"create database {env['POSTGRES_DB']}"], check=True,
                       capture_output=True)
        out = subprocess.run(sql + ["-d", env["POSTGRES_DB"], "-c", "select 6 * 7"], check=True,
                             capture_output=True, text=True)
        assert out.stdout.strip() == "42"
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown
            proc.wait(timeout=30)
        shutil.rmtree(pgdata, ignore_errors=True)
