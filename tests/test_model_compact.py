"""The compact model file (``.rfz``): the same document, zstd-compressed; ``load`` reads both forms
and refuses a damaged compact file with ModelError."""
import json

import numpy as np
import pytest

from rainforest import DecisionTreeClassifier, ModelError, RandomForestClassifier, load
from rainforest.model_file import COMPACT_MAGIC, document_text


@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 6))
    y = (X[:, 0] * X[:, 1] + rng.normal(scale=0.3, size=4000) > 0).astype(int)
    return RandomForestClassifier(n_estimators=8, random_state=0).fit(X, y), X


def test_compact_file_is_the_same_model_and_smaller(forest, tmp_path):
    clf, X = forest
    clf.save(tmp_path / "m.json")
    clf.save(tmp_path / "m.rfz")
    plain, packed = (tmp_path / "m.json").read_bytes(), (tmp_path / "m.rfz").read_bytes()
    assert packed.startswith(COMPACT_MAGIC)
    assert json.loads(document_text(packed, "m.rfz")) == json.loads(plain)
    assert len(packed) * 4 < len(plain)
    again = load(tmp_path / "m.rfz")
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_the_form_is_recognised_by_content_not_name(forest, tmp_path):
    clf, X = forest
    clf.save(tmp_path / "m.rfz")
    (tmp_path / "renamed.json").write_bytes((tmp_path / "m.rfz").read_bytes())
    np.testing.assert_array_equal(load(tmp_path / "renamed.json").predict(X), clf.predict(X))


@pytest.mark.parametrize("damage", ["truncated", "corrupt body", "huge length", "short header"])
def test_damaged_compact_files_are_refused(tmp_path, damage):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3))
    DecisionTreeClassifier(max_depth=3).fit(X, X[:, 0] > 0).save(tmp_path / "t.rfz")
    data = bytearray((tmp_path / "t.rfz").read_bytes())
    head = len(COMPACT_MAGIC) + 8
    if damage == "truncated":
        data = data[:head + 10]
    elif damage == "corrupt body":
        data[head + 5:head + 25] = bytes(20)
    elif damage == "huge length":
        data[len(COMPACT_MAGIC):head] = (1 << 60).to_bytes(8, "little")
    else:
        data = data[:len(COMPACT_MAGIC) + 3]
    (tmp_path / "t.rfz").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="t.rfz"):
        load(tmp_path / "t.rfz")
