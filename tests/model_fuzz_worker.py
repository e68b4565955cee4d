"""Worker of tests/test_model_fuzz.py: load and predict with each mutated model file it is given.

Run as ``python model_fuzz_worker.py DATA.parquet CASE_DIR FIRST LAST``: it warms up (imports,
compiled kernels), prints ``ready``, then for each case k in [FIRST, LAST) prints ``start k``
and, when the case ends, ``done k OUTCOME``. A crash or a hang shows as a ``start`` without its
``done``, which the test's watchdog reports.
"""
from __future__ import annotations

import os
import sys
import traceback

import numpy as np
import pyarrow.parquet as pq


def outcome(path: str, data) -> str:
    from rainforest import DataError, ModelError, load

    try:
        model = load(path)
        proba = model.predict_proba(data)
        predicted = model.predict(data)
    except ModelError:
        return "model_error"
    except DataError as exc:  # a valid model whose feature the rows lack (its name was changed)
        if "lacks the feature column" in str(exc):
            return "missing_column"
        return f"other DataError: {str(exc)[:300]!r}"
    except Exception as exc:  # what the test is looking for: anything else is a finding
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return f"other {type(exc).__name__}: {str(exc)[:300]!r} at {os.path.basename(where.filename)}:{where.lineno}"
    classes = list(model.classes_)
    if proba.shape != (data.num_rows, len(classes)):
        return f"bad shape {proba.shape}"
    if not (np.isfinite(proba).all() and (proba >= 0).all() and (proba <= 1).all()):
        return "probabilities out of [0, 1]"
    if not np.allclose(proba.sum(axis=1), 1.0):
        return "probabilities do not sum to 1"
    if not all(p in classes for p in predicted.tolist()):
        return "a prediction is not a class of the model"
    return "ok"


def main(data_path: str, case_dir: str, first: int, last: int) -> None:
    data = pq.read_table(data_path)
    for name in sorted(os.listdir(case_dir)):
        if name.startswith("original-"):  # warm up: compile or load every kernel once
            outcome(os.path.join(case_dir, name), data)
    print("ready", flush=True)
    for k in range(first, last):
        print(f"start {k}", flush=True)
        print(f"done {k} {outcome(os.path.join(case_dir, f'case-{k}.json'), data)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
