"""The package as a user installs it: a fresh virtual environment, an editable install, and the
README's Dask example on worker processes run from a folder outside the repository (no
PYTHONPATH: workers import rainforest from the install); then a regular install into a folder.

Dependencies come from the interpreter's own site-packages (``--system-site-packages``,
``--no-deps``); only setuptools and wheel are installed into the new environment, and only where
the system's setuptools cannot build a wheel (no ``bdist_wheel``).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "docs" / "examples" / "dask_tree.py"  # the README's Dask example, runnable


def clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH or an active virtual environment."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def run(cmd, cwd, timeout=600) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory) -> Path:
    """The python of a fresh ``--system-site-packages`` environment able to build rainforest."""
    root = tmp_path_factory.mktemp("install")
    base = Path(getattr(sys, "_base_executable", sys.executable))
    has_pip = subprocess.run([base, "-c", "import pip"], capture_output=True).returncode == 0
    run([base, "-m", "venv", "--system-site-packages", *(["--without-pip"] if has_pip else []), root / "venv"], root)
    python = root / "venv" / "bin" / "python"
    builds = subprocess.run([python, "-c", "from setuptools.command.bdist_wheel import bdist_wheel"],
                            capture_output=True).returncode == 0 or \
        subprocess.run([python, "-c", "import wheel.bdist_wheel"], capture_output=True).returncode == 0
    if not builds:  # the system's setuptools has no bdist_wheel: the build requirements of pyproject.toml
        run([python, "-m", "pip", "install", "-q", "setuptools>=68", "wheel"], root)
    return python


def test_editable_install_trains_on_worker_processes(venv_python, tmp_path):
    run([venv_python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", REPO], tmp_path)
    where = run([venv_python, "-c", "import rainforest, rainforest.storage as s, rainforest.boat as b;"
                 "print(rainforest.__file__); print(s.__file__); print(b.__file__)"], tmp_path).stdout.split()
    assert [Path(p) for p in where] == [REPO / "rainforest" / "__init__.py", REPO / "storage" / "__init__.py",
                                        REPO / "boat" / "__init__.py"]
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(EXAMPLE, work / "example.py")
    out = run([venv_python, "example.py"], work).stdout  # LocalCluster(n_workers=2, processes=True)
    assert re.search(r"passes over the cluster's partitions: [1-9]", out)  # it asserts the one-process tree itself
    assert "predictions: 100,000" in out


def test_regular_install_into_a_folder(venv_python, tmp_path):
    # A regular build writes build/ and *.egg-info beside the sources: build a copy, not the checkout.
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "tests", "benchmarks", "build",
                                                                 "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    run([venv_python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", target, source],
        tmp_path)
    assert (target / "rainforest" / "storage" / "base.py").exists()
    assert (target / "rainforest" / "boat" / "estimator.py").exists()
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import rainforest.storage, rainforest.boat;"
            "print(rainforest.storage.__file__); print(rainforest.boat.__file__)")
    where = run([venv_python, "-c", code, target], tmp_path).stdout.split()
    assert [Path(p) for p in where] == [target / "rainforest" / "storage" / "__init__.py",
                                        target / "rainforest" / "boat" / "__init__.py"]
