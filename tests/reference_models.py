"""The reference models: every learner fitted on the real datasets of ``tests/data/``.

``tests/data/models/*.json`` were written by this script from commit 1310887, the last commit
before issue 10 restructured the house (packages, estimator layer, growth engine). The test
``tests/test_reference_models.py`` fits every case again and asserts the saved model document is
equal (the tree, forest, naive Bayes or boosting model, and ``n_passes``), so a restructuring
that changes a result fails. Only ``params`` is left out of the comparison, since issue 10
renames and unifies parameters; ``version`` likewise.

Regenerate only when a result is meant to change, and say so in the commit::

    python tests/reference_models.py tests/data/models
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
MODELS = DATA / "models"


def _tree(**kw):
    from rainforest import DecisionTreeClassifier
    return DecisionTreeClassifier(**kw)


def _forest(**kw):
    from rainforest import RandomForestClassifier
    return RandomForestClassifier(**kw)


def _bayes(**kw):
    from rainforest import NaiveBayesClassifier
    return NaiveBayesClassifier(**kw)


def _boost(base, **kw):
    from rainforest import AdaBoostClassifier
    return AdaBoostClassifier(base, **kw)


def _boat(**kw):
    from rainforest.boat import BoatClassifier  # 1310887 had it as the top-level `boat`
    return BoatClassifier(**kw)


# name -> (dataset, estimator factory); every case is small enough for the fast lane in total
CASES = {
    "tree_adult_binned": ("adult_train", lambda: _tree(max_depth=8)),
    "tree_adult_exact": ("adult_train", lambda: _tree(max_depth=6, max_bins=None)),
    "tree_adult_multiway_gain_ratio": ("adult_train", lambda: _tree(max_depth=4, criterion="gain_ratio",
                                                                     categorical_split="multiway")),
    "tree_bank_balanced_ccp": ("bank_marketing", lambda: _tree(max_depth=8, class_weight="balanced",
                                                               ccp_alpha=0.002)),
    "tree_connect4_entropy": ("connect_4", lambda: _tree(max_depth=7, criterion="entropy")),
    "tree_kddcup_binned": ("kddcup99_10pct", lambda: _tree(max_depth=6)),
    "tree_letter_exact": ("letter", lambda: _tree(max_depth=8, max_bins=None)),
    "tree_magic_exact_full": ("magic", lambda: _tree(max_bins=None, min_samples_leaf=5)),
    "tree_magic_write_small_budget": ("magic", lambda: _tree(max_depth=8, max_bins=None, memory_budget="2MB",
                                                             algorithm="write", batch_size=4096)),
    "tree_magic_read_small_budget": ("magic", lambda: _tree(max_depth=6, memory_budget="2MB", algorithm="read",
                                                            batch_size=4096)),
    "tree_kddcup_write_spill": ("kddcup99_10pct", lambda: _tree(max_depth=8, memory_budget="3MB", algorithm="write",
                                                                batch_size=8192)),
    "tree_kddcup_exact_vertical": ("kddcup99_10pct", lambda: _tree(max_depth=6, max_bins=None, memory_budget="6MB",
                                                                   algorithm="write", batch_size=8192)),
    "tree_mushroom_binned": ("mushroom", lambda: _tree()),
    "tree_shuttle_binned": ("shuttle", lambda: _tree(max_depth=10)),
    "forest_adult": ("adult_train", lambda: _forest(n_estimators=6, max_depth=6, random_state=0)),
    "forest_magic_oob": ("magic", lambda: _forest(n_estimators=6, max_depth=8, oob_score=True, random_state=1)),
    "forest_letter_rc": ("letter", lambda: _forest(n_estimators=4, max_depth=6, combination="linear",
                                                   random_state=2)),
    "forest_shuttle_small_budget": ("shuttle", lambda: _forest(n_estimators=4, max_depth=5, memory_budget="4MB",
                                                               batch_size=8192, random_state=3)),
    "forest_kddcup_multipass": ("kddcup99_10pct", lambda: _forest(n_estimators=4, max_depth=6, memory_budget="3MB",
                                                                  batch_size=8192, random_state=3)),
    "bayes_adult_gaussian": ("adult_train", lambda: _bayes()),
    "bayes_magic_binned": ("magic", lambda: _bayes(numeric="binned")),
    "bayes_letter_gaussian": ("letter", lambda: _bayes()),
    "adaboost_adult_stumps": ("adult_train", lambda: _boost(_tree(max_depth=1), n_estimators=6)),
    "adaboost_magic_trees": ("magic", lambda: _boost(_tree(max_depth=3), n_estimators=4, learning_rate=0.5)),
    "adaboost_mushroom_bayes": ("mushroom", lambda: _boost(_bayes(), n_estimators=3)),
    "boat_magic": ("magic", lambda: _boat(max_depth=6, sample_size=5000)),
    "boat_adult": ("adult_train", lambda: _boat(max_depth=5, sample_size=5000)),
}

LEFT_OUT = ("params", "version")


def comparable(doc: dict) -> dict:
    """A saved model document without the keys a restructuring may change (see module docstring)."""
    return {k: v for k, v in doc.items() if k not in LEFT_OUT}


def fit_case(name: str, tmp: Path) -> dict:
    """Fit one case on its dataset and return the saved document."""
    dataset, make = CASES[name]
    est = make().fit(str(DATA / f"{dataset}.parquet"), target="class")
    path = tmp / f"{name}.json"
    est.save(path)
    return json.loads(path.read_text())


def main(out: str) -> None:
    import tempfile
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in CASES:
            doc = fit_case(name, Path(tmp))
            (out_dir / f"{name}.json").write_text(json.dumps(comparable(doc), sort_keys=True) + "\n")
            print(name, doc.get("n_passes"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(MODELS))
