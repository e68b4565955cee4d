"""The one model file every learner writes: versioned JSON, no pickle, written atomically.

A file holds ``format``, ``version``, the estimator's class name, its parameters, the passes of
the fit, then the learner's own parts. The file's extension chooses its encoding: ``.rfz`` is the
same document compressed (:data:`COMPACT_MAGIC`, the document's length, then the JSON text
compressed with zstd: a forest of deep trees is mostly digits, and shrinks about tenfold), any
other extension plain JSON text. :func:`load` reads both, recognising the compact form by its
first bytes, whatever the file is called. Each learner registers the function that reads its files
(:func:`register_reader`), so :func:`load` dispatches on the class name without knowing the learners.
"""
from __future__ import annotations

import importlib
import json
import math
import os
from typing import Callable

import numpy as np

from .atomic import write_atomic
from .errors import ModelError
from .tree import plain_value

MODEL_FORMAT = "rainforest.model"
MODEL_VERSION = 1
# the learners' own parts of a model file: their formats and versions
FOREST_FORMAT, FOREST_VERSION = "rainforest.forest", 1
BAYES_FORMAT, BAYES_VERSION = "rainforest.naive_bayes", 1
BOOSTING_FORMAT, BOOSTING_VERSION = "rainforest.adaboost", 1
#: the estimators a boosted model's rounds may hold
BOOSTING_BASES = ("DecisionTreeClassifier", "NaiveBayesClassifier")

#: estimator class name -> reader(doc, path) giving the fitted estimator
READERS: dict[str, Callable] = {}
#: estimator class name -> the class whose reader is registered (the model checks read its parameters)
CLASSES: dict[str, type] = {}
#: the modules whose import registers a reader: imported by :func:`load` on first use (the package
#: imports its learners lazily, and a program may call ``load`` before using any of them)
LEARNER_MODULES = ("rainforest.estimators", "rainforest.regressor", "rainforest.forest",
                   "rainforest.forest_regressor", "rainforest.bayes", "rainforest.boosting")

#: the first bytes of a compact model file; then the JSON text's length (8 bytes, little-endian)
#: and the text compressed with zstd
COMPACT_MAGIC = b"RFMODEL\x01"
COMPACT_SUFFIX = ".rfz"
#: a compact file whose document would be larger than this is refused before it is decompressed
MAX_DOCUMENT_BYTES = 1 << 34

#: parameters renamed since a file may have been written: old name -> name now
RENAMED_PARAMS = {"binning_sample": "sample_size", "work_dir": "spill_dir"}


def register_reader(estimator: str, reader: Callable) -> None:
    """Make :func:`load` read files of ``estimator`` (a class name) with ``reader(doc, path)``
    (a classmethod of the estimator's class, which is recorded too)."""
    READERS[estimator] = reader
    owner = getattr(reader, "__self__", None)
    if isinstance(owner, type):
        CLASSES[estimator] = owner


def write_model(path, estimator, n_passes, params: dict | None = None, **parts) -> None:
    """Write the one model file: format, version, the estimator's class, its parameters (default:
    ``get_params(deep=False)`` made JSON-able) and passes, then the learner's own ``parts``; atomically."""
    doc = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "estimator": type(estimator).__name__,
           "params": jsonable_params(estimator.get_params(deep=False)) if params is None else params,
           "n_passes": n_passes, **parts}
    text = json.dumps(doc, sort_keys=True, allow_nan=False)
    write_atomic(path, compact(text) if os.fspath(path).endswith(COMPACT_SUFFIX) else text)


def compact(text: str) -> bytes:
    """A model document's JSON text in the compact encoding (see the module's notes)."""
    import pyarrow as pa  # zstd through pyarrow, a core dependency

    raw = text.encode("utf-8")
    body = pa.Codec("zstd", compression_level=9).compress(raw, asbytes=True)
    return COMPACT_MAGIC + len(raw).to_bytes(8, "little") + body


def document_text(data: bytes, path: str) -> str:
    """The JSON text of a model file's bytes, plain or compact."""
    if not data.startswith(COMPACT_MAGIC):
        return data.decode("utf-8")
    import pyarrow as pa

    head = len(COMPACT_MAGIC) + 8
    if len(data) < head:
        raise ModelError(f"{path!r} is a truncated compact model file", path)
    size = int.from_bytes(data[len(COMPACT_MAGIC):head], "little")
    if size > MAX_DOCUMENT_BYTES:
        raise ModelError(f"{path!r} says its document has {size:,} bytes, more than the {MAX_DOCUMENT_BYTES:,} "
                         "a model may have", path)
    try:
        raw = pa.Codec("zstd").decompress(data[head:], decompressed_size=size, asbytes=True)
    except (pa.ArrowException, OSError, ValueError) as exc:  # pyarrow reports codec errors as OSError
        raise ModelError(f"{path!r} is not a valid compact model file ({exc})", path) from None
    return raw.decode("utf-8")


def load(path):
    """Load a model written by ``save``.

    Raises
    ------
    ModelError
        If the file is not a valid rainforest model (the message names the file and the field; a
        ``ValueError``): unknown format, version or estimator, or any part out of range or
        inconsistent (see :mod:`rainforest.model_check`).
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            doc = json.loads(document_text(f.read(), path))
    except FileNotFoundError:
        raise FileNotFoundError(f"no such model file: {path!r}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ModelError(f"{path!r} is not a rainforest model (invalid JSON: {exc})", path) from None
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise ModelError(f"{path!r} is not a rainforest model", path)
    if doc.get("version") != MODEL_VERSION:
        raise ModelError(f"{path!r} has model format version {doc.get('version')!r}; this build reads {MODEL_VERSION}",
                         path)
    for module in LEARNER_MODULES:  # each registers its reader when imported
        importlib.import_module(module)
    estimator = doc.get("estimator")
    reader = READERS.get(estimator) if isinstance(estimator, str) else None
    if reader is None:
        raise ModelError(f"{path!r} holds an unknown estimator {estimator!r}", path)
    return reader(doc, path)


# -- parameters as JSON -------------------------------------------------------------------------
def jsonable_params(params: dict) -> dict:
    """Parameters as JSON holds them: ``"inf"`` for an infinite ``ccp_alpha``, a class weight dict
    as pairs (its keys may be any class), NumPy scalars as Python ones."""
    out = dict(params)
    if "ccp_alpha" in out:  # inf (prune to the root) is legal, and JSON has no infinity
        out["ccp_alpha"] = json_number(out["ccp_alpha"])
    if isinstance(out.get("class_weight"), dict):
        out["class_weight"] = {"pairs": [[plain_value(k), float(v)] for k, v in out["class_weight"].items()]}
    if isinstance(out.get("categorical_features"), (list, tuple, np.ndarray)):
        out["categorical_features"] = [plain_value(c) for c in out["categorical_features"]]
    return out


def params_from_json(params: dict) -> dict:
    """The inverse of :func:`jsonable_params`; parameters renamed since the file was written get their
    names of now."""
    out = {RENAMED_PARAMS.get(k, k): v for k, v in params.items()}
    if out.get("ccp_alpha") == "inf":
        out["ccp_alpha"] = math.inf
    if isinstance(out.get("class_weight"), dict):
        out["class_weight"] = {k: v for k, v in out["class_weight"]["pairs"]}
    return out


def json_number(x):
    """A number as JSON can hold it: ``"inf"`` for infinity."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return x
    return "inf" if x == math.inf else x
