"""Model files are untrusted input: mutated at random, they predict within bounds or fail with ModelError.

Saved models of every learner are mutated thousands of times (a value replaced by one of
another type or out of range, an entry dropped, a list cut short or lengthened, the text cut
off) and each mutant is loaded and used to predict in worker subprocesses under a watchdog. Every
case must end in either probabilities in [0, 1] that sum to one over the model's classes, or one
ModelError: no crash (a segfault kills the worker), no hang, no other exception. (A mutant
that renames a feature is a valid model the rows do not fit: the DataError naming the missing
column is its right answer.)
"""
from __future__ import annotations

import copy
import json
import math
import os
import queue
import random
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rainforest import (AdaBoostClassifier, DecisionTreeClassifier, NaiveBayesClassifier,
                        RandomForestClassifier)
from rainforest.boat import BoatClassifier

DATA = Path(__file__).resolve().parent / "data" / "adult_train.parquet"
WORKER = Path(__file__).resolve().parent / "model_fuzz_worker.py"
N_CASES = int(os.environ.get("RAINFOREST_FUZZ_CASES", 2000))  # more for a longer hunt
N_WORKERS = 2
READY_TIMEOUT_S = 120  # imports and the compiled kernels' cache, once per worker
CASE_TIMEOUT_S = 3  # a case predicts on 300 rows with a small model: far less than a second

LEARNERS = {
    "tree_binned": lambda: DecisionTreeClassifier(max_depth=4),
    "tree_exact_multiway": lambda: DecisionTreeClassifier(max_depth=3, max_bins=None, categorical_split="multiway"),
    "forest": lambda: RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0),
    "bayes_gaussian": lambda: NaiveBayesClassifier(),
    "bayes_binned": lambda: NaiveBayesClassifier(numeric="binned", max_bins=8),
    "adaboost_stumps": lambda: AdaBoostClassifier(n_estimators=3),
    "adaboost_bayes": lambda: AdaBoostClassifier(NaiveBayesClassifier(), n_estimators=2),
    "boat": lambda: BoatClassifier(max_depth=3, sample_size=500, n_bootstrap=3),
}

# replacement values: other types, out-of-range and boundary numbers, empty and deep containers
POOL = [None, True, False, 0, 1, -1, -2, 2, 3, 7, 100, 2**31, 2**31 - 1, -2**31, 2**63, -2**64, 10**30,
        0.5, -0.5, 1e308, -1e308, 1e-308, math.nan, math.inf, -math.inf, "", "x", "inf", "-inf", "numeric",
        "categorical", "gini", [], [0], [None], [[]], {}, {"a": 1}, [[[[[[[[[[1]]]]]]]]]]]


def _paths(doc) -> list:
    """Every position in the document, as a list of keys (the root is [])."""
    out, stack = [], [[]]
    while stack:
        p = stack.pop()
        out.append(p)
        node = _at(doc, p)
        if isinstance(node, dict):
            stack.extend(p + [k] for k in node)
        elif isinstance(node, list):
            stack.extend(p + [k] for k in range(len(node)))
    return out


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _descend(rng: random.Random, doc) -> list:
    """A random position, reached by walking down from the root (so small fields are hit as often
    as big arrays' elements)."""
    path, node = [], doc
    while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append(key)
        node = node[key]
    return path


def _mutate_value(rng: random.Random, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or rng.random() < 0.5:
        return copy.deepcopy(rng.choice(POOL))
    if isinstance(v, int):
        return rng.choice([v + 1, v - 1, -v, v * 2, v + 1000, -1, 0, v + rng.randint(-3, 3)])
    return rng.choice([v * -1, v * 1e300, 0.0, math.nan, v + 1.0, float(math.trunc(v)) if math.isfinite(v) else 0.0])


def mutate(rng: random.Random, doc) -> dict:
    """``doc`` with one to three random changes."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        path = _descend(rng, doc)
        if not path:
            continue
        parent, key = _at(doc, path[:-1]), path[-1]
        node = parent[key]
        op = rng.random()
        if op < 0.15:  # drop the entry
            del parent[key]
        elif op < 0.35 and isinstance(node, list) and node:
            r = rng.random()
            if r < 0.4:
                del node[rng.randrange(len(node)):]  # cut short
            elif r < 0.7:
                node.append(copy.deepcopy(rng.choice(node)))  # one more
            else:
                i, j = rng.randrange(len(node)), rng.randrange(len(node))
                node[i], node[j] = node[j], node[i]
        else:
            parent[key] = _mutate_value(rng, node)
    return doc


@pytest.fixture(scope="module")
def fuzz_cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    data = pq.read_table(DATA).slice(0, 2000)
    sample = root / "rows.parquet"
    pq.write_table(data.slice(0, 300), sample)
    originals = {}
    for name, make in LEARNERS.items():
        model = make().fit(data, target="class")
        path = root / "cases" / f"original-{name}.json"
        path.parent.mkdir(exist_ok=True)
        model.save(path)
        originals[name] = path.read_text()
    rng = random.Random(int(os.environ.get("RAINFOREST_FUZZ_SEED", 14)))
    names = sorted(originals)
    for k in range(N_CASES):
        name = names[k % len(names)]
        if rng.random() < 0.03:  # the text cut off anywhere
            text = originals[name][:rng.randrange(len(originals[name]))]
        else:
            text = json.dumps(mutate(rng, json.loads(originals[name])))  # NaN and Infinity too
        (root / "cases" / f"case-{k}.json").write_text(text)
    return sample, root / "cases", names


def _run_batch(sample, cases, first: int, last: int) -> dict:
    """Outcome of each case in [first, last): a worker runs them in turn; one that crashes or hangs
    is recorded and a fresh worker goes on after it."""
    outcomes = {}
    k = first
    while k < last:
        proc = subprocess.Popen([sys.executable, str(WORKER), str(sample), str(cases), str(k), str(last)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True).start()
        timeout, current = READY_TIMEOUT_S, None
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                proc.wait()
                outcomes[current if current is not None else k] = "hang" if current is not None else "no start"
                break
            if line is None:  # the worker ended
                proc.wait()
                if current is not None:
                    outcomes[current] = f"crash (exit status {proc.returncode})"
                break
            word, *rest = line.split(" ", 2)
            if word == "ready":
                timeout = CASE_TIMEOUT_S
            elif word == "start":
                current = int(rest[0])
            elif word == "done":
                outcomes[int(rest[0])] = rest[1].strip()
                current = None
        k = max(outcomes) + 1 if outcomes else last
        if "no start" in outcomes.values():
            break
    return outcomes


@pytest.mark.slow
def test_mutated_models_predict_within_bounds_or_fail_with_model_error(fuzz_cases):
    sample, cases, names = fuzz_cases
    bounds = [(N_CASES * w // N_WORKERS, N_CASES * (w + 1) // N_WORKERS) for w in range(N_WORKERS)]
    results: list = [None] * N_WORKERS
    threads = [threading.Thread(target=lambda w=w: results.__setitem__(w, _run_batch(sample, cases, *bounds[w])))
               for w in range(N_WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcomes = {k: v for r in results for k, v in r.items()}
    assert len(outcomes) == N_CASES, f"{N_CASES - len(outcomes)} cases never ran"
    # "missing_column": a valid model whose feature was renamed, which the rows lack (a DataError)
    bad = {k: v for k, v in sorted(outcomes.items()) if v not in ("ok", "model_error", "missing_column")}
    report = "\n".join(f"case-{k}.json ({names[k % len(names)]}): {v}" for k, v in list(bad.items())[:20])
    assert not bad, f"{len(bad)} of {N_CASES} mutated models ended otherwise (files in {cases}):\n{report}"
    # the fuzzing is not idle: both outcomes occur, for every learner
    for i, name in enumerate(names):
        mine = [v for k, v in outcomes.items() if k % len(names) == i]
        assert "ok" in mine and "model_error" in mine, name
