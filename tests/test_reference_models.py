"""Every learner's model on the real datasets equals the one saved before issue 10's restructuring.

The saved documents (``tests/data/models``) come from commit 1310887, before the packages, the
estimator layer and the growth engine were reorganised (see ``tests/reference_models.py``). A
change of shape must not change a result: the trees, forests, naive Bayes and boosting models
and their pass counts are compared as JSON, key for key.
"""
import json

import pytest

from reference_models import CASES, MODELS, comparable, fit_case


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_equals_reference(name, tmp_path):
    expected = json.loads((MODELS / f"{name}.json").read_text())
    got = comparable(fit_case(name, tmp_path))
    assert got.get("n_passes") == expected.get("n_passes")
    assert got == expected
