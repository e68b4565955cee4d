"""Progress: a bar on stderr when it is a terminal and verbose is on, nothing in a file or a pipe."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest

from rainforest import DecisionTreeClassifier


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def data(tmp_path):
    from rainforest.datasets import write_agrawal_parquet
    write_agrawal_parquet(tmp_path / "train", 20_000, function=2, n_files=2, seed=1)
    return tmp_path


def test_a_terminal_gets_a_bar_and_no_lines(data, monkeypatch, capsys):
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    DecisionTreeClassifier(max_depth=3, verbose=1, algorithm="read").fit(str(data / "train"), target="class")
    drawn = term.getvalue()
    assert "level 1" in drawn and "rows" in drawn and "/s" in drawn  # pass, level, rows, rate (tqdm's)
    assert capsys.readouterr().out == ""  # the per-pass lines only with verbose >= 2 beside a bar


def test_a_file_gets_lines_and_no_bar(data, capsys):
    DecisionTreeClassifier(max_depth=3, verbose=1, algorithm="read").fit(str(data / "train"), target="class")
    out, err = capsys.readouterr()
    assert "level 1, pass" in out and "rows/s" in out
    assert err == ""


def test_quiet_by_default_in_the_api(data, capsys):
    DecisionTreeClassifier(max_depth=3).fit(str(data / "train"), target="class")
    assert capsys.readouterr() == ("", "")


def test_the_command_line_draws_no_bar_into_a_pipe_and_takes_q(data):
    for extra in ([], ["-q"]):
        r = subprocess.run([sys.executable, "-m", "rainforest", "train", str(data / "train"), "--target", "class",
                            "--model", str(data / "m.json"), "--max-depth", "3", *extra], cwd=data,
                           capture_output=True, text=True, env=dict(os.environ))
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
