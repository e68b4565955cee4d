"""How many Numba threads a call uses: n_jobs, but one for small inputs held in memory."""
import numba
import numpy as np
import pytest

import rainforest.threads as threads
from rainforest import DecisionTreeClassifier


@pytest.fixture
def small_rule(monkeypatch):
    monkeypatch.setattr(threads, "SMALL_ROWS", 50_000)  # conftest turns the rule off for other tests


def test_thread_count_follows_n_jobs_and_the_rows(small_rule):
    cores = numba.config.NUMBA_NUM_THREADS
    assert threads.thread_count(-1) == cores
    assert threads.thread_count(1) == 1
    assert threads.thread_count(-1, rows=10**6) == cores
    assert threads.thread_count(-1, rows=49_999) == 1
    assert threads.thread_count(cores + 5) == cores
    with pytest.raises(ValueError, match="n_jobs"):
        threads.thread_count(0)


def test_a_small_fit_runs_on_one_thread_and_gives_the_same_tree(small_rule, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    seen = []
    real = threads.numba.set_num_threads
    monkeypatch.setattr(threads.numba, "set_num_threads", lambda n: (seen.append(n), real(n)))
    small = DecisionTreeClassifier(max_depth=4, n_jobs=-1).fit(X, y)
    if numba.config.NUMBA_NUM_THREADS > 1:
        assert seen[0] == 1  # the fit ran on one thread
    monkeypatch.setattr(threads, "SMALL_ROWS", 0)
    every = DecisionTreeClassifier(max_depth=4, n_jobs=-1).fit(X, y)
    assert small.tree_.to_json() == every.tree_.to_json()


@pytest.mark.parametrize("n_jobs", [1, 2, -1])
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_run_ranges_covers_every_index_once(n_jobs, n):
    from rainforest.threads import numba_threads, run_ranges
    hits = np.zeros(n, np.int64)

    def work(lo, hi):
        hits[lo:hi] += 1

    with numba_threads(n_jobs):
        run_ranges(n, work)
    assert (hits == 1).all()


def test_run_ranges_raises_what_a_range_raises():
    from rainforest.threads import numba_threads, run_ranges

    def work(lo, hi):
        if lo <= 500 < hi:
            raise ValueError("range with 500")

    with numba_threads(2), pytest.raises(ValueError, match="range with 500"):
        run_ranges(1000, work)
