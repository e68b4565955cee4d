"""The ``rainforest`` command line, run as a real subprocess on small Parquet data."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow.parquet as pq
import pytest

import rainforest
from rainforest import DecisionTreeClassifier
from rainforest import cli, cli_train
from rainforest.datasets import agrawal_table, write_agrawal_parquet

TRAIN_OPTIONS = ["--max-depth", "6", "--criterion", "entropy", "--min-samples-leaf", "5", "--max-bins", "64",
                 "--categorical", "car", "elevel", "--memory-budget", "64MB"]
TRAIN_PARAMS = dict(max_depth=6, criterion="entropy", min_samples_leaf=5, max_bins=64,
                    categorical_features=["car", "elevel"], memory_budget="64MB")


def run_cli(*args, cwd, env=None, timeout=180):
    return subprocess.run([sys.executable, "-m", "rainforest", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def field(stdout: str, label: str) -> str:
    """The text after ``label:`` on its line (first match)."""
    m = re.search(rf"^\s*{re.escape(label)}:\s*(.+)$", stdout, re.MULTILINE)
    assert m, f"no {label!r} line in:\n{stdout}"
    return m.group(1).strip()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    train, test = root / "train", root / "test"
    write_agrawal_parquet(train, 8000, function=2, n_files=2, seed=3)
    write_agrawal_parquet(test, 2000, function=2, n_files=1, seed=3, start=8000)
    # a file lacking the feature column "age"
    noage = root / "noage.parquet"
    pq.write_table(agrawal_table(500, function=2, seed=3).drop(["age"]), noage)
    return root


@pytest.fixture(scope="module")
def trained(data):
    """The model trained by the CLI, and the same model trained in process."""
    model = data / "model.json"
    r = run_cli("train", data / "train", "--target", "class", "--model", model, *TRAIN_OPTIONS, cwd=data)
    assert r.returncode == 0, r.stderr
    clf = DecisionTreeClassifier(**TRAIN_PARAMS).fit(str(data / "train"), target="class")
    return model, clf, r.stdout


def test_demo_trains_and_reports(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    r = run_cli("demo", "--rows", 20000, "--max-depth", 8, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    accuracy = float(field(r.stdout, "test accuracy").split()[0])
    assert 0.9 < accuracy <= 1.0
    passes = int(field(r.stdout, "passes").split()[0])
    assert 2 <= passes <= 1 + 8 + 2  # profiling + one per level (a little slack for budget splits)
    assert field(r.stdout, "fit time").endswith("s")
    assert float(field(r.stdout, "peak memory").split()[0]) > 0
    assert "16,000 rows in 8 files" in r.stdout and "4,000 rows in 2 files" in r.stdout
    assert "|--- " in r.stdout  # the top of the tree
    # the temporary data folder is gone
    assert not [p for p in os.listdir(tmp_path) if p.startswith("rainforest-demo-")]


def test_demo_keep(tmp_path):
    keep = tmp_path / "kept"
    r = run_cli("demo", "--rows", 1000, "--max-depth", 3, "--function", 5, "--keep", keep, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    train = pq.read_table(keep / "train")
    test = pq.read_table(keep / "test")
    assert (train.num_rows, test.num_rows) == (800, 200)
    assert len(os.listdir(keep / "train")) == 8 and len(os.listdir(keep / "test")) == 2
    expected = agrawal_table(200, function=5, seed=0, start=800)
    assert test.equals(expected)  # the held-out rows follow the training rows in the stream


def test_demo_removes_its_folder_on_interrupt(tmp_path, monkeypatch, capsys):
    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(DecisionTreeClassifier, "fit", interrupted)
    assert cli.main(["demo", "--rows", "1000"]) == 130
    assert os.listdir(tmp_path) == []
    assert capsys.readouterr().err == "rainforest: interrupted\n"


def test_train_matches_in_process(trained):
    model, clf, stdout = trained
    assert model.exists()
    loaded = rainforest.load(model)
    assert loaded.tree_.node_count == clf.tree_.node_count
    np.testing.assert_array_equal(loaded.tree_.feature, clf.tree_.feature)
    test = str(model.parent / "test")
    np.testing.assert_array_equal(loaded.predict(test), clf.predict(test))
    assert loaded.get_params()["criterion"] == "entropy" and loaded.get_params()["max_depth"] == 6
    assert int(field(stdout, "nodes")) == clf.tree_.node_count
    assert int(field(stdout, "depth")) == clf.tree_.max_depth
    assert int(field(stdout, "passes")) == clf.n_passes_
    assert "8,000 rows" in stdout


def test_train_exact_and_weights(data, tmp_path):
    model = tmp_path / "exact.json"
    r = run_cli("train", data / "train" / "part-00000.parquet", "--target", "class", "--model", model,
                "--exact", "--max-depth", 4, "--class-weight", "balanced", "--features", "age", "salary",
                "--n-jobs", 1, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    clf = DecisionTreeClassifier(max_bins=None, max_depth=4, class_weight="balanced", n_jobs=1).fit(
        str(data / "train" / "part-00000.parquet"), target="class", features=["age", "salary"])
    loaded = rainforest.load(model)
    assert loaded.tree_.feature_names == ["age", "salary"]
    np.testing.assert_array_equal(loaded.tree_.threshold, clf.tree_.threshold)
    np.testing.assert_allclose(loaded.tree_.value, clf.tree_.value)


def test_train_with_rf_read(data, tmp_path):
    model = tmp_path / "read.json"
    r = run_cli("train", data / "train", "--target", "class", "--model", model, "--max-depth", 5,
                "--algorithm", "read", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    loaded = rainforest.load(model)
    assert loaded.get_params()["algorithm"] == "read" and int(field(r.stdout, "passes")) == 1 + 5
    hybrid = DecisionTreeClassifier(max_depth=5).fit(str(data / "train"), target="class")
    assert loaded.tree_.to_json() == hybrid.tree_.to_json() and hybrid.n_passes_ < 6


def test_train_with_rf_write_cleans_its_spill_dir(data, tmp_path):
    model, spill = tmp_path / "write.json", tmp_path / "spill"
    spill.mkdir()
    r = run_cli("train", data / "train", "--target", "class", "--model", model, "--max-depth", 6,
                "--algorithm", "write", "--memory-budget", "100KB", "--spill-dir", spill, "-v", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "spill partitions" in r.stdout  # later reads came from the spill folder
    assert list(spill.iterdir()) == []
    read = DecisionTreeClassifier(max_depth=6, algorithm="read").fit(str(data / "train"), target="class")
    assert rainforest.load(model).tree_.to_json() == read.tree_.to_json()


def test_predict_writes_one_row_per_input_row(trained, tmp_path):
    model, clf, _ = trained
    test = model.parent / "test"
    out = tmp_path / "pred.parquet"
    r = run_cli("predict", model, test, "--out", out, "--proba", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    table = pq.read_table(out)
    assert table.column_names == ["prediction", "proba_0", "proba_1"]
    assert table.num_rows == 2000
    np.testing.assert_array_equal(table.column("prediction").to_numpy(), clf.predict(str(test)))
    proba = np.column_stack([table.column("proba_0").to_numpy(), table.column("proba_1").to_numpy()])
    np.testing.assert_allclose(proba, clf.predict_proba(str(test)))
    assert sorted(os.listdir(tmp_path)) == ["pred.parquet"]  # no temporary file left behind

    out2 = tmp_path / "plain.parquet"
    r = run_cli("predict", model, test, "--out", out2, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert pq.read_table(out2).column_names == ["prediction"]


def test_evaluate_matches_in_process_score(trained):
    model, clf, _ = trained
    test = str(model.parent / "test")
    r = run_cli("evaluate", model, test, cwd=model.parent)
    assert r.returncode == 0, r.stderr
    m = re.search(r"^accuracy:\s+([0-9.]+)\s+\(([\d,]+) of ([\d,]+) correct\)", r.stdout, re.MULTILINE)
    assert m, r.stdout
    correct, total = int(m.group(2).replace(",", "")), int(m.group(3).replace(",", ""))
    score = clf.score(test, target="class")
    assert total == 2000
    assert correct / total == pytest.approx(score, abs=1e-12)
    assert float(m.group(1)) == pytest.approx(score, abs=1e-6)
    assert float(field(r.stdout, "error rate").split()[0]) == pytest.approx(1 - score, abs=1e-6)
    # the confusion matrix, row by row
    y = pq.read_table(test).column("class").to_numpy()
    pred = clf.predict(test)
    macro = []
    for k in (0, 1):
        row = [int(np.sum((y == k) & (pred == j))) for j in (0, 1)]
        assert re.search(rf"^\s+{k}\s+{row[0]:,}\s+{row[1]:,}\s*$", r.stdout, re.MULTILINE), (row, r.stdout)
        tp, pp, ap = row[k], int(np.sum(pred == k)), int(np.sum(y == k))
        tn = int(np.sum((y != k) & (pred != k)))
        precision, recall, specificity = tp / pp, tp / ap, tn / int(np.sum(y != k))
        f1 = 2 * precision * recall / (precision + recall)
        assert re.search(rf"^\s+{k}\s+{precision:.4f}\s+{recall:.4f}\s+{specificity:.4f}\s+{f1:.4f}\s+{ap}\s*$",
                         r.stdout, re.MULTILINE), r.stdout
        macro.append((precision, recall, specificity, f1))
    p, rc, sp, f = np.mean(macro, axis=0)
    assert re.search(rf"^\s*macro avg\s+{p:.4f}\s+{rc:.4f}\s+{sp:.4f}\s+{f:.4f}\s+2000\s*$", r.stdout,
                     re.MULTILINE), r.stdout
    from sklearn.metrics import roc_auc_score
    auc = roc_auc_score(y, clf.predict_proba(test)[:, 1])
    assert float(re.search(r"^ROC AUC ([0-9.]+)$", r.stdout, re.MULTILINE).group(1)) == pytest.approx(auc, abs=1e-4)
    # threshold moving and the ROC plot
    roc = model.parent / "roc.png"
    r = run_cli("evaluate", model, test, "--threshold", "0.9", "--pos-label", "1", "--roc", roc, cwd=model.parent)
    assert r.returncode == 0, r.stderr
    moved = np.mean(np.where(clf.predict_proba(test)[:, 1] >= 0.9, 1, 0) == y)
    assert float(field(r.stdout, "accuracy").split()[0]) == pytest.approx(moved, abs=1e-6)
    assert roc.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    roc.unlink()


def test_inspect(trained):
    model, clf, _ = trained
    r = run_cli("inspect", model, "--max-depth", 2, cwd=model.parent)
    assert r.returncode == 0, r.stderr
    assert int(field(r.stdout, "nodes")) == clf.tree_.node_count
    assert int(field(r.stdout, "leaves")) == clf.tree_.n_leaves
    assert int(field(r.stdout, "depth")) == clf.tree_.max_depth
    assert field(r.stdout, "classes") == "0, 1"
    assert r.stdout.startswith(clf.export_text(max_depth=2))
    top = clf.tree_.feature_names[int(np.argmax(clf.feature_importances_))]
    assert re.search(rf"by importance:\n\s+{top}\s", r.stdout), r.stdout

    r = run_cli("inspect", model, "--rules", cwd=model.parent)
    assert r.returncode == 0, r.stderr
    assert sum(line.startswith("IF ") for line in r.stdout.splitlines()) == clf.tree_.n_leaves


def test_help_texts(capsys):
    for command in ("demo", "train", "predict", "evaluate", "inspect"):
        with pytest.raises(SystemExit) as e:
            cli.main([command, "--help"])
        assert e.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith(f"usage: rainforest {command}")
        assert re.search(r"^examples?:\n  rainforest " + command, text, re.MULTILINE), text


BAD = {
    "missing data path": ["train", "{d}/nowhere", "--target", "class", "--model", "{o}/model.json"],
    "missing target column": ["train", "{d}/train", "--target", "label", "--model", "{o}/model.json"],
    "missing model file": ["predict", "{d}/nowhere.json", "{d}/test", "--out", "{o}/pred.parquet"],
    "missing feature column": ["predict", "{d}/model.json", "{d}/noage.parquet", "--out", "{o}/pred.parquet"],
    "not a model": ["evaluate", "{d}/noage.parquet", "{d}/test"],
    "missing evaluate target": ["evaluate", "{d}/model.json", "{d}/test", "--target", "label"],
    "budget too small": ["train", "{d}/train", "--target", "class", "--model", "{o}/model.json", "--exact",
                         "--memory-budget", "1KB"],
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_exit_2(case, trained, tmp_path):
    data = trained[0].parent
    args = [a.format(d=data, o=tmp_path) for a in BAD[case]]
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rainforest: error: "), r.stderr
    assert os.listdir(tmp_path) == []  # no output, no temporary file
    key = {"missing data path": "nowhere", "missing target column": "'label'", "missing model file": "nowhere.json",
           "missing feature column": "'age'", "not a model": "noage.parquet",
           "missing evaluate target": "'label'", "budget too small": "memory_budget"}[case]
    assert key in lines[0]


@pytest.mark.parametrize("option, named", [(["--max-depth", "-3"], "--max-depth"), (["--max-bins", "1"], "--max-bins"),
                                           (["--memory-budget", "lots"], "--memory-budget"),
                                           (["--criterion", "chaos"], "--criterion"),
                                           (["--exact", "--max-bins", "10"], "--max-bins")])
def test_bad_option_is_a_usage_error(option, named, data, tmp_path):
    r = run_cli("train", data / "train", "--target", "class", "--model", tmp_path / "m.json", *option, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("usage: rainforest train")
    assert r.stderr.splitlines()[-1].startswith(f"rainforest train: error: argument {named}")
    assert "Traceback" not in r.stderr
    assert os.listdir(tmp_path) == []


def test_train_predict_evaluate_on_a_duckdb_file(trained, tmp_path):
    """DATA may be a DuckDB database file with --table or --query: the same model as from Parquet,
    predictions row for row, and one-line errors for a missing table or a missing --table."""
    import duckdb

    model, clf, _ = trained
    data = model.parent
    db = tmp_path / "agrawal.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE TABLE train AS SELECT * FROM read_parquet('{data}/train/**/*.parquet')")
        con.execute(f"CREATE TABLE test AS SELECT * FROM read_parquet('{data}/test/**/*.parquet')")
    out = tmp_path / "model.json"
    for transfer in ("aggregates", "rows"):  # rows streamed out, or passes run in DuckDB: the same model
        r = run_cli("train", db, "--table", "train", "--target", "class", "--model", out, "--transfer", transfer,
                    *TRAIN_OPTIONS, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert rainforest.load(out).tree_.to_json() == clf.tree_.to_json()
    r = run_cli("train", data / "train", "--transfer", "rows", "--target", "class", "--model", tmp_path / "m3.json",
                cwd=tmp_path)
    assert r.returncode == 2 and "--transfer need DATA to be a DuckDB file" in r.stderr, r.stderr
    pred = tmp_path / "pred.parquet"
    r = run_cli("predict", out, db, "--query", "SELECT * FROM test", "--out", pred, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(pq.read_table(pred).column("prediction").to_numpy(),
                                  clf.predict(str(data / "test")))
    r = run_cli("evaluate", out, db, "--table", "test", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert float(field(r.stdout, "accuracy").split()[0]) == pytest.approx(clf.score(str(data / "test"), target="class"), abs=1e-4)
    for args, named in ((["--table", "nowhere"], "nowhere"), ([], "--table")):
        r = run_cli("train", db, *args, "--target", "class", "--model", tmp_path / "m2.json", cwd=tmp_path)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and named in r.stderr, r.stderr
        assert not (tmp_path / "m2.json").exists()


LEARNER_CASES = {
    "forest": (["--learner", "forest", "--n-estimators", "30", "--max-depth", "5", "--max-bins", "64",
                "--random-state", "7", "--oob-score"],
               lambda: rainforest.RandomForestClassifier(30, max_depth=5, max_bins=64, random_state=7, oob_score=True)),
    "bayes": (["--learner", "bayes", "--numeric", "binned", "--max-bins", "32", "--alpha", "0.5"],
              lambda: rainforest.NaiveBayesClassifier(numeric="binned", max_bins=32, alpha=0.5)),
    "adaboost": (["--learner", "adaboost", "--n-estimators", "6", "--base", "tree", "--max-depth", "2"],
                 lambda: rainforest.AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=6)),
    # BOAT's model is the exact tree's: the in-process reference is DecisionTreeClassifier(max_bins=None)
    "boat": (["--learner", "boat", "--max-depth", "5", "--sample-size", "2000"],
             lambda: DecisionTreeClassifier(max_depth=5, max_bins=None)),
}


@pytest.mark.parametrize("learner", sorted(LEARNER_CASES))
def test_every_learner_trains_predicts_evaluates_and_inspects(learner, data, tmp_path):
    """--learner forest | bayes | adaboost: the saved model is the in-process model, and predict,
    evaluate and inspect read it."""
    options, make = LEARNER_CASES[learner]
    model = tmp_path / "model.json"
    r = run_cli("train", data / "train", "--target", "class", "--model", model, *options, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ref = make().fit(str(data / "train"), target="class")
    assert int(field(r.stdout, "passes")) == (2 if learner == "boat" else ref.n_passes_)
    loaded = rainforest.load(model)
    if learner == "boat":
        assert loaded.tree_.to_json() == ref.tree_.to_json()
        assert not [p for p in tmp_path.iterdir() if p.name not in ("model.json",)]  # the work folder is gone
    assert type(loaded) is type(ref)
    np.testing.assert_array_equal(loaded.predict_proba(str(data / "test")), ref.predict_proba(str(data / "test")))
    pred = tmp_path / "pred.parquet"
    r = run_cli("predict", model, data / "test", "--out", pred, "--proba", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(pq.read_table(pred).column("prediction").to_numpy(), ref.predict(str(data / "test")))
    r = run_cli("evaluate", model, data / "test", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert float(field(r.stdout, "accuracy").split()[0]) == pytest.approx(ref.score(str(data / "test"), target="class"),
                                                                          abs=1e-6)
    r = run_cli("inspect", model, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert field(r.stdout, "target") == "class" and type(loaded).__name__ in field(r.stdout, "model")
    assert re.search(r"^features \(9\)", r.stdout, re.MULTILINE), r.stdout
    if learner == "forest":
        assert field(r.stdout, "trees").startswith("30 ")
        assert f"{ref.oob_score_:.4f}" in r.stdout
        r = run_cli("inspect", model, "--tree", 3, cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.startswith(ref.estimators_[3].export_text()), r.stderr
    if learner == "adaboost":
        assert r.stdout.count("round ") == len(ref.estimators_)


@pytest.mark.parametrize("learner, options, make", [
    ("tree", ["--max-depth", "6"], lambda: rainforest.DecisionTreeRegressor(max_depth=6)),
    ("forest", ["--n-estimators", "8", "--max-depth", "5", "--oob-score"],
     lambda: rainforest.RandomForestRegressor(n_estimators=8, max_depth=5, oob_score=True)),
])
def test_a_floating_point_target_trains_a_regressor(learner, options, make, data, tmp_path):
    """--task auto: the Agrawal salary (float) is regressed from the other columns; predict writes the
    regressor's predictions, evaluate its MSE/MAE/R² in one pass, inspect says the task."""
    model = tmp_path / "reg.json"
    r = run_cli("train", data / "train", "--target", "salary", "--model", model, "--learner", learner, *options,
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "a numeric target" in r.stdout
    ref = make().fit(str(data / "train"), target="salary")
    loaded = rainforest.load(model)
    assert type(loaded) is type(ref) and int(field(r.stdout, "passes")) == ref.n_passes_
    test = str(data / "test")
    np.testing.assert_array_equal(loaded.predict(test), ref.predict(test))
    pred = tmp_path / "pred.parquet"
    r = run_cli("predict", model, data / "test", "--out", pred, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(pq.read_table(pred).column("prediction").to_numpy(), ref.predict(test))
    r = run_cli("evaluate", model, data / "test", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert float(field(r.stdout, "R²")) == pytest.approx(ref.score(test, target="salary"), abs=1e-6)
    y = pq.read_table(test).column("salary").to_numpy()
    assert float(field(r.stdout, "MSE")) == pytest.approx(np.mean((y - ref.predict(test)) ** 2), rel=1e-5)
    r = run_cli("inspect", model, cwd=tmp_path)
    assert r.returncode == 0 and field(r.stdout, "task") == "regression", r.stderr
    for bad, named in ((["predict", model, data / "test", "--out", pred, "--proba"], "--proba"),
                       (["evaluate", model, data / "test", "--threshold", "0.3"], "--threshold")):
        r = run_cli(*bad, cwd=tmp_path)
        assert r.returncode == 2 and named in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def test_the_task_option_chooses_the_estimator():
    parser = cli.build_parser()

    def estimator(*options, regression):
        args = parser.parse_args(["train", "d", "--target", "y", "--model", "m.json", *options])
        return cli_train.estimator_from_args(args, regression)

    reg = estimator("--learner", "forest", "--criterion", "squared_error", "--no-bootstrap", "--exact",
                    regression=True)
    assert isinstance(reg, rainforest.RandomForestRegressor) and not reg.bootstrap and reg.max_bins is None
    with pytest.raises(ValueError, match="--class-weight does not apply to --learner tree .a regressor"):
        estimator("--class-weight", "balanced", regression=True)
    args = parser.parse_args(["train", "d", "--target", "y", "--model", "m.json", "--learner", "bayes",
                              "--task", "regression"])
    with pytest.raises(ValueError, match="--task regression takes --learner tree or forest"):
        cli_train.is_regression(args, "d")


def test_an_option_of_another_learner_is_an_error(data, tmp_path):
    for args, named in ((["--learner", "bayes", "--max-depth", "3"], "--max-depth"),
                        (["--n-estimators", "5"], "--n-estimators"),
                        (["--learner", "forest", "--spill-dir", str(tmp_path)], "--spill-dir")):
        r = run_cli("train", data / "train", "--target", "class", "--model", tmp_path / "m.json", *args, cwd=tmp_path)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert named in r.stderr and "does not apply" in r.stderr
        assert not (tmp_path / "m.json").exists()


def test_train_prunes(data, tmp_path):
    """--ccp-alpha, --prune pessimistic and --prune reduced-error --validation give the model that
    pruning in process gives; --validation without reduced-error is a one-line error."""
    model = tmp_path / "m.json"
    r = run_cli("train", data / "train", "--target", "class", "--model", model, "--max-depth", 8, "--ccp-alpha", "0.001",
                "--prune", "reduced-error", "--validation", data / "test", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ref = DecisionTreeClassifier(max_depth=8, ccp_alpha=0.001).fit(str(data / "train"), target="class")
    before = ref.tree_.node_count
    ref.prune_reduced_error(str(data / "test"), target="class")
    assert rainforest.load(model).tree_.to_json() == ref.tree_.to_json()
    assert f"pruned: reduced-error, {before} -> {ref.tree_.node_count} nodes" in r.stdout
    r = run_cli("train", data / "train", "--target", "class", "--model", model, "--prune", "pessimistic",
                "--confidence", "0.1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ref = DecisionTreeClassifier().fit(str(data / "train"), target="class").prune_pessimistic(0.1)
    assert rainforest.load(model).tree_.to_json() == ref.tree_.to_json()
    model.unlink()
    r = run_cli("train", data / "train", "--target", "class", "--model", model, "--validation", data / "test",
                cwd=tmp_path)
    assert r.returncode == 2 and "--validation" in r.stderr and not model.exists()


def test_inspect_exports(trained, tmp_path):
    """inspect --dot/--sql/--onnx (and --png where Graphviz is installed) write the tree's exports;
    the ONNX model scores like predict_proba; exporting a forest's tree needs --tree."""
    import shutil

    import onnxruntime as ort
    from rainforest.onnx import onnx_feed

    model, clf, _ = trained
    test = model.parent / "test"
    args = ["--dot", tmp_path / "t.dot", "--onnx", tmp_path / "t.onnx", "--sql", "duckdb"]
    if shutil.which("dot"):
        args += ["--png", tmp_path / "t.png"]
    else:
        print("Graphviz's dot is not installed: the --png export is not exercised")
    r = run_cli("inspect", model, *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dot = (tmp_path / "t.dot").read_text()
    assert dot.startswith("digraph") and dot.count("->") == clf.tree_.node_count - 1
    assert clf.tree_.to_sql("duckdb") in r.stdout
    session = ort.InferenceSession(str(tmp_path / "t.onnx"))
    proba = session.run(["probabilities"], onnx_feed(str(tmp_path / "t.onnx"), pq.read_table(test)))[0]
    np.testing.assert_allclose(proba, clf.predict_proba(str(test)), atol=1e-6)
    if shutil.which("dot"):
        assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    forest = tmp_path / "rf.json"
    rainforest.RandomForestClassifier(5, max_depth=3, random_state=0).fit(str(model.parent / "train"),
                                                                          target="class").save(forest)
    r = run_cli("inspect", forest, "--dot", tmp_path / "f.dot", cwd=tmp_path)
    assert r.returncode == 2 and "--tree" in r.stderr and not (tmp_path / "f.dot").exists()
    r = run_cli("inspect", forest, "--tree", 2, "--dot", tmp_path / "f.dot", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "f.dot").read_text().startswith("digraph")


def test_train_options_come_from_the_estimators_parameters():
    """train's options are the learners' declared parameters: not given, the estimator's default holds;
    an option reads its value by the parameter's constraints; a learner takes exactly its own."""
    from rainforest.constraints import ADABOOST_PARAMS, BOAT_PARAMS, FOREST_PARAMS, NAIVE_BAYES_PARAMS, TREE_PARAMS

    parser = cli.build_parser()

    def learner(*options):
        return cli_train.estimator_from_args(parser.parse_args(["train", "d", "--target", "y", "--model", "m.json", *options]))

    assert learner().get_params() == DecisionTreeClassifier().get_params()
    forest = learner("--learner", "forest", "--max-features", "all", "--sample-size", "5000", "--exact")
    assert forest.max_features is None and forest.sample_size == 5000 and forest.max_bins is None
    assert forest.random_state == 0  # deterministic by default, as in process
    boat = learner("--learner", "boat", "--sample-size", "50", "--spill-dir", "/tmp")
    assert boat.sample_size == 50 and boat.spill_dir == "/tmp"
    boost = learner("--learner", "adaboost", "--base", "bayes", "--alpha", "0.5", "--n-estimators", "7")
    assert isinstance(boost.estimator, rainforest.NaiveBayesClassifier) and boost.estimator.alpha == 0.5
    assert boost.n_estimators == 7
    assert learner("--learner", "adaboost", "--base", "tree").estimator.max_depth == 3
    with pytest.raises(ValueError, match="--max-depth does not apply to --learner adaboost --base stump"):
        learner("--learner", "adaboost", "--max-depth", "3")
    with pytest.raises(ValueError, match="--weight does not apply to --learner boat"):
        learner("--learner", "boat", "--weight", "w")
    declared = {name for params in (TREE_PARAMS, FOREST_PARAMS, NAIVE_BAYES_PARAMS, ADABOOST_PARAMS, BOAT_PARAMS)
                for name in params}
    options = parser.parse_args(["train", "d", "--target", "y", "--model", "m.json"]).param_options
    assert options and set(options) <= declared


# -- optional pieces (issue 16, item 5) ---------------------------------------------------------------
def test_a_missing_optional_package_is_one_line_and_the_other_outputs_are_written(trained, data, tmp_path):
    """Without matplotlib, evaluate --roc still prints its report, then one error line naming the package;
    without Graphviz, inspect --png still writes the DOT file, and the DOT honours --max-depth."""
    model, clf, _ = trained
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "matplotlib.py").write_text("raise ImportError('matplotlib is not installed here')\n")
    (blocker / "dot").write_text("#!/bin/sh\nexit 127\n")  # a PATH whose 'dot' is not Graphviz's: hide it
    env = dict(os.environ, PYTHONPATH=str(blocker), PATH=os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not os.path.exists(os.path.join(p, "dot"))))
    roc = tmp_path / "roc.png"
    r = run_cli("evaluate", model, data / "test", "--roc", roc, cwd=tmp_path, env=env)
    assert r.returncode == 2 and "accuracy" in r.stdout and not roc.exists()
    assert r.stderr.strip().splitlines() == ["rainforest: error: writing a ROC curve needs matplotlib: "
                                             "pip install matplotlib"]
    dot, png = tmp_path / "tree.dot", tmp_path / "tree.png"
    r = run_cli("inspect", model, "--dot", dot, "--png", png, "--max-depth", 2, cwd=tmp_path, env=env)
    assert r.returncode == 2 and not png.exists()
    assert len(r.stderr.strip().splitlines()) == 1 and "install graphviz" in r.stderr
    text = dot.read_text()
    drawn = {int(n) for n in re.findall(r'^\s*(\d+) \[label="(?!\(\.\.\.\))', text, re.MULTILINE)}  # not "(...)"
    assert drawn and max(clf.tree_.depth[sorted(drawn)]) == 2 < clf.tree_.max_depth
