"""Every learner's model on the real datasets equals the one saved before issue 10's restructuring.

The saved documents (``tests/data/models``) come from commit 1310887, before the packages, the
estimator layer and the growth engine were reorganised (see ``tests/reference_models.py``). A
change of shape must not change a result: the trees, forests, naive Bayes and boosting models
and their pass counts are compared as JSON, key for key (pass counts that later work lowered on
purpose are listed in ``FEWER_PASSES``, with the reason).
"""
import json

import pytest

from reference_models import CASES, MODELS, comparable, fit_case


#: Pass counts that later work lowered on purpose, with the reason; the model itself stays equal.
FEWER_PASSES = {
    # issue 24: the first growth pass writes the encoded rows that do not fit memory to the spill
    # folder, and every later level reads them there instead of the data (it took 5 passes)
    "tree_kddcup_write_spill": 2,
    # issue 24: the forest's encoded rows that do not fit memory are spilled by its first growth pass,
    # and the other levels (several reads each) count them there (it took 9 passes)
    "forest_kddcup_multipass": 2,
    # issue 24: the out-of-bag estimates are read from the encoded rows the forest kept in memory, not
    # from a pass over the data (it took 3 passes)
    "forest_magic_oob": 2,
    # issue 24: a boosting fit encodes its rows once, after the profile, and every round grows its tree
    # from those (rainforest/boost_store.py), so the rounds after the first read no data (they took
    # one pass each: 7 and 5 passes); (n_passes, n_passes_per_round)
    "adaboost_adult_stumps": (2, [1, 0, 0, 0, 0, 0]),
    "adaboost_magic_trees": (2, [1, 0, 0, 0]),
    # issue 24: naive Bayes rounds read a local copy of the rows the first pass read from the files
    # (rainforest.storage.row_copy.CopiedSource); every round, and the closing pass, took one pass: 4
    "adaboost_mushroom_bayes": (1, [1, 0, 0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_equals_reference(name, tmp_path):
    expected = json.loads((MODELS / f"{name}.json").read_text())
    got = comparable(fit_case(name, tmp_path))
    if name in FEWER_PASSES:
        fewer, per_round = FEWER_PASSES[name] if isinstance(FEWER_PASSES[name], tuple) else (FEWER_PASSES[name], None)
        assert expected["n_passes"] > fewer
        expected["n_passes"] = fewer
        if per_round is not None:
            rounds = expected["boosting"]["n_passes_per_round"]
            assert len(rounds) == len(per_round) and sum(rounds) > sum(per_round)
            expected["boosting"]["n_passes_per_round"] = per_round
    assert got.get("n_passes") == expected.get("n_passes")
    assert got == expected
