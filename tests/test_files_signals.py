"""Nothing lost, nothing left behind: output paths checked before any work, the umask honoured,
SIGTERM and SIGHUP cleaning up as Ctrl-C does, stale spill folders and temporaries removed."""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import pytest

from rainforest import DecisionTreeClassifier, cli
from rainforest.atomic import write_atomic
from rainforest.spill import Spill
from rainforest.storage.scratch import PREFIX, remove_stale

DATA = Path(__file__).resolve().parent / "data"
BUYS = DATA / "buys_computer.parquet"
KDD = DATA / "kddcup99_10pct.parquet"


@pytest.fixture
def workdir(tmp_path):
    shutil.copy(BUYS, tmp_path / "data.parquet")
    DecisionTreeClassifier().fit(BUYS, target="class").save(tmp_path / "model.json")
    return tmp_path


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# -- outputs that are inputs ----------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["same", "relative", "dotdot", "symlink", "hardlink", "model"])
def test_predict_out_onto_its_input_is_refused_and_the_input_kept(spelling, workdir, monkeypatch, capsys):
    monkeypatch.chdir(workdir)
    (workdir / "sub").mkdir()
    data, model = str(workdir / "data.parquet"), str(workdir / "model.json")
    out = {"same": data, "relative": "data.parquet", "dotdot": "sub/../data.parquet",
           "symlink": "link.parquet", "hardlink": "hard.parquet", "model": "./model.json"}[spelling]
    if spelling == "symlink":
        os.symlink(data, workdir / "link.parquet")
    if spelling == "hardlink":
        os.link(data, workdir / "hard.parquet")
    before = {p: Path(p).read_bytes() for p in (data, model)}
    assert cli.main(["predict", model, data, "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rainforest: error: the output file") and "is the input file" in err and err.count("\n") == 1
    assert {p: Path(p).read_bytes() for p in before} == before


def test_an_output_inside_an_input_folder_is_refused(workdir, capsys):
    folder = workdir / "rows"
    folder.mkdir()
    shutil.copy(BUYS, folder / "a.parquet")
    assert cli.main(["predict", str(workdir / "model.json"), str(folder), "--out", str(folder / "p.parquet")]) == 2
    assert "lies inside the input folder" in capsys.readouterr().err
    assert os.listdir(folder) == ["a.parquet"]


def test_two_exports_to_one_file_are_refused(workdir, capsys):
    dot = str(workdir / "tree.out")
    assert cli.main(["inspect", str(workdir / "model.json"), "--dot", dot, "--png", dot]) == 2
    assert "are the same file" in capsys.readouterr().err


# -- unwritable targets ---------------------------------------------------------------------------
def _unwritable_folder(tmp_path) -> Path:
    """A folder this process cannot create files in (a read-only one; /sys when running as root)."""
    ro = tmp_path / "readonly"
    ro.mkdir()
    ro.chmod(0o555)
    for folder in (ro, Path("/sys")):
        try:
            fd, probe = tempfile.mkstemp(dir=folder)
        except OSError:
            return folder
        os.close(fd)
        os.unlink(probe)
    pytest.skip("no folder here refuses new files")


def test_an_unwritable_model_is_refused_before_training(tmp_path, monkeypatch, capsys):
    target = _unwritable_folder(tmp_path) / "model.json"

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(DecisionTreeClassifier, "fit", no_training)
    assert cli.main(["train", str(BUYS), "--target", "class", "--model", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write the model {str(target)!r}" in err and "not writable" in err
    assert ".model.json." not in err  # the target, not a temporary file


def test_an_unwritable_output_is_refused_before_reading(workdir, tmp_path, capsys):
    target = _unwritable_folder(tmp_path) / "p.parquet"
    assert cli.main(["predict", str(workdir / "model.json"), str(workdir / "data.parquet"), "--out", str(target)]) == 2
    assert f"cannot write the output file {str(target)!r}" in capsys.readouterr().err


# -- file modes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_outputs_honour_the_umask(umask, workdir):
    old = os.umask(umask)
    try:
        assert cli.main(["train", str(BUYS), "--target", "class", "--model", str(workdir / "m.json")]) == 0
        assert cli.main(["predict", str(workdir / "m.json"), str(BUYS), "--out", str(workdir / "p.parquet")]) == 0
        assert cli.main(["inspect", str(workdir / "m.json"), "--dot", str(workdir / "t.dot")]) == 0
        write_atomic(workdir / "x.txt", "text")
    finally:
        os.umask(old)
    for name in ("m.json", "p.parquet", "t.dot", "x.txt"):
        assert stat.S_IMODE(os.stat(workdir / name).st_mode) == 0o666 & ~umask, name


# -- leftovers of processes killed outright -------------------------------------------------------------
def test_stale_spill_folders_are_removed_and_live_ones_kept(tmp_path):
    from rainforest.storage.scratch import host_tag as _host

    dead = tmp_path / f"{PREFIX}{_dead_pid()}-{_host()}-abcd"
    live = tmp_path / f"{PREFIX}{os.getpid()}-{_host()}-efgh"
    elsewhere = tmp_path / f"{PREFIX}{_dead_pid()}-0000beef-ijkl"  # another machine's: not judged here
    for folder in (dead, live, elsewhere):
        (folder / "gen-0").mkdir(parents=True)
    spill = Spill(str(tmp_path), 3)
    try:
        assert not dead.exists() and live.exists() and elsewhere.exists()
        assert os.path.basename(spill.root).startswith(f"{PREFIX}{os.getpid()}-")  # its owner's pid
    finally:
        spill.remove()
    assert not os.path.exists(spill.root)
    assert remove_stale(str(tmp_path)) == []


def test_an_interrupt_while_a_scratch_folder_is_made_leaves_none(tmp_path, monkeypatch):
    """A SIGTERM becomes a KeyboardInterrupt; landing after the folder exists but before its name reached
    the caller (inside mkdtemp, before), it left a folder nobody knew.  Now the name comes first."""
    from rainforest.storage import scratch

    made = os.mkdir

    def mkdir_then_interrupt(path, mode=0o777):
        made(path, mode)
        raise KeyboardInterrupt

    monkeypatch.setattr(scratch.os, "mkdir", mkdir_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        Spill(str(tmp_path), 3)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(scratch.os, "mkdir", made)
    path = scratch.scratch_folder(str(tmp_path))  # owner-only, as mkdtemp made it
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700 and os.listdir(path) == []


def test_stale_temporary_outputs_are_removed(tmp_path):
    stale = tmp_path / f".model.json.{_dead_pid()}-x1y2z3.tmp"
    stale.write_text("")
    mine = tmp_path / f".model.json.{os.getpid()}-a1b2c3.tmp"  # a write under way in this process
    mine.write_text("")
    write_atomic(tmp_path / "model.json", "{}")
    assert sorted(os.listdir(tmp_path)) == sorted(["model.json", mine.name])


# -- signals ----------------------------------------------------------------------------------------------
def _spill_then_signal(cmd: list, spill: Path, signum: int) -> subprocess.CompletedProcess:
    """Run ``cmd`` until its spill folder appears, send ``signum``, and wait for it to end."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not any(p.name.startswith(PREFIX) for p in spill.iterdir()):
        assert proc.poll() is None, f"ended before spilling: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, "no spill folder in 300 s"
        time.sleep(0.05)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


SPILLING = ["--algorithm", "write", "--memory-budget", "2MB", "--max-depth", "30"]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_a_spilling_fit_leaves_nothing_behind(signum, tmp_path):
    spill = tmp_path / "spill"
    spill.mkdir()
    model = tmp_path / "model.json"
    r = _spill_then_signal([sys.executable, "-m", "rainforest", "train", str(KDD), "--target", "class",
                            "--model", str(model), "--spill-dir", str(spill), *SPILLING], spill, signum)
    assert r.returncode == 128 + signum, r.stderr[-2000:]
    assert r.stderr.strip() == f"rainforest: ended by signal {signal.Signals(signum).name}"
    assert list(spill.iterdir()) == [] and os.listdir(tmp_path) == ["spill"]  # no model, no temporary


@pytest.mark.slow
def test_sigterm_during_a_spilling_fit_through_the_api_removes_the_folder(tmp_path):
    spill = tmp_path / "spill"
    spill.mkdir()
    # A library leaves a SIGTERM handler it did not set alone, SIG_IGN included, and a child inherits
    # SIG_IGN from a harness that ignores SIGTERM: the child starts as a plain program does, at SIG_DFL.
    code = ("import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
            "from rainforest import DecisionTreeClassifier\n"
            "DecisionTreeClassifier(algorithm='write', memory_budget='2MB', max_depth=30, spill_dir=sys.argv[2])"
            ".fit(sys.argv[1], target='class')")
    r = _spill_then_signal([sys.executable, "-c", code, str(KDD), str(spill)], spill, signal.SIGTERM)
    # ended by the interrupt the signal became
    assert r.returncode != 0 and "Terminated" in r.stderr, (r.returncode, r.stderr[-2000:])
    assert list(spill.iterdir()) == []


def test_a_library_call_takes_over_only_default_handlers():
    """The API's rule (``only_default``): SIGTERM at its default becomes an interrupt while the spill
    lives; a handler the program set, SIG_IGN included, is left alone; both are restored after."""
    from rainforest.signals import Terminated, termination_as_interrupt

    saved = signal.getsignal(signal.SIGTERM)
    try:
        for before, taken in [(signal.SIG_DFL, True), (signal.SIG_IGN, False)]:
            signal.signal(signal.SIGTERM, before)
            with termination_as_interrupt(only_default=True):
                if taken:
                    with pytest.raises(Terminated):
                        signal.raise_signal(signal.SIGTERM)
                else:
                    signal.raise_signal(signal.SIGTERM)  # ignored: nothing happens
                    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGTERM, saved)


@pytest.mark.slow
def test_sigterm_during_predict_removes_the_temporary_output(tmp_path):
    rows = tmp_path / "rows"
    rows.mkdir()
    for k in range(6):  # about 3M rows: predict runs for seconds
        os.symlink(KDD, rows / f"part-{k}.parquet")
    DecisionTreeClassifier(max_depth=3).fit(KDD, target="class").save(tmp_path / "m.json")
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "rainforest", "predict", str(tmp_path / "m.json"), str(rows),
                             "--out", str(out / "p.parquet")], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(p.name.startswith(".p.parquet.") and not p.name.endswith(".probe") for p in out.iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, "predict ended before writing"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert os.listdir(out) == []  # neither the output nor its temporary file


# -- corrupt models through the command line -------------------------------------------------------------
@pytest.mark.parametrize("command", ["inspect", "predict"])
def test_a_corrupt_model_is_one_error_line_and_exit_2(command, workdir, capsys):
    doc = json.loads((workdir / "model.json").read_text())
    doc["tree"]["nodes"]["first_child"][0] = len(doc["tree"]["nodes"]["feature"])  # one past the last node
    (workdir / "bad.json").write_text(json.dumps(doc))
    args = [command, str(workdir / "bad.json")]
    if command == "predict":
        args += [str(workdir / "data.parquet"), "--out", str(workdir / "p.parquet")]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("rainforest: error: ") and err.count("\n") == 1
    assert "bad.json" in err and "tree.nodes.first_child[0]" in err
    assert not (workdir / "p.parquet").exists()


def test_swap_in_puts_the_new_scratch_file_in_place(tmp_path):
    from rainforest.storage.scratch import swap_in

    old, new = tmp_path / "node", tmp_path / "node.next"
    old.write_bytes(b"old rows")
    new.write_bytes(b"routed rows")
    swap_in(str(new), str(old))
    assert old.read_bytes() == b"routed rows" and not new.exists()
    fresh = tmp_path / "fresh.next"  # nothing to replace yet
    fresh.write_bytes(b"first")
    swap_in(str(fresh), str(tmp_path / "fresh"))
    assert (tmp_path / "fresh").read_bytes() == b"first" and sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "node"]


class _StopsInAFinaliser:
    """Sends SIGTERM from ``__del__``, where Python prints and drops the handler's exception (as
    when the signal lands during Numba's compile, in llvmlite's ``ObjectRef.__del__``)."""

    def __del__(self):
        signal.raise_signal(signal.SIGTERM)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_signal_a_finaliser_swallows_still_ends_the_block():
    from rainforest.signals import Terminated, termination_as_interrupt

    went_on = False
    with pytest.raises(Terminated):
        with termination_as_interrupt():
            f = _StopsInAFinaliser()
            del f  # the Terminated raised here is dropped ("Exception ignored in ...")
            went_on = True
    assert went_on


class _FailsInAFinaliser:
    def __del__(self):
        raise ValueError("not a signal")


def test_a_swallowed_signal_is_not_printed_as_ignored(monkeypatch):
    """The dropped Terminated is raised again, so it is not also printed ("Exception ignored in ..."
    before "rainforest: ended by signal SIGTERM": a run's last words are the signal alone); any
    other exception a finaliser drops still reaches the hook there was."""
    from rainforest.signals import Terminated, termination_as_interrupt

    reached = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: reached.append(type(unraisable.exc_value)))
    with pytest.raises(Terminated):
        with termination_as_interrupt():
            f = _StopsInAFinaliser()
            del f
            g = _FailsInAFinaliser()
            del g
    assert reached == [ValueError]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_signal_keeps_a_model_file_from_taking_its_name(tmp_path):
    from rainforest.atomic import write_atomic
    from rainforest.signals import Terminated, termination_as_interrupt

    with pytest.raises(Terminated):
        with termination_as_interrupt():
            f = _StopsInAFinaliser()
            del f
            write_atomic(tmp_path / "m.json", "{}")
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_signal_ends_a_spilling_fit_at_its_next_block(tmp_path):
    """The spill checks for a dropped stop request per block, so the fit ends there, folder removed."""
    from rainforest.signals import Terminated
    from rainforest import spill as spill_module

    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    real_append = spill_module.Spill._append
    calls = []

    def append_then_stop(self, p, rows):
        if not calls:
            f = _StopsInAFinaliser()
            del f
        calls.append(p)
        return real_append(self, p, rows)

    saved = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(spill_module.Spill, "_append", append_then_stop)
            with pytest.raises(Terminated):
                DecisionTreeClassifier(algorithm="write", memory_budget="2MB", max_depth=30,
                                       spill_dir=str(spill_dir)).fit(KDD, target="class")
    finally:
        signal.signal(signal.SIGTERM, saved)
    assert len(calls) == 1 and list(spill_dir.iterdir()) == []


_IN_NUMBA = os.path.join(os.path.dirname(numba.__file__), "core", "compiling.py")  # code that says it is Numba's
_STEP = ("import signal, time\n"
         "def step(signum, seconds):\n"
         "    signal.raise_signal(signum)\n"
         "    t = time.monotonic()\n"
         "    while time.monotonic() - t < seconds:\n"
         "        pass\n"
         "    return 'done'\n")


def test_a_signal_in_the_compiler_is_raised_once_the_compiler_is_done():
    """A signal that lands in Numba's or llvmlite's Python code (an exception there can leave an LLVM
    object owned twice: a double free, the process killed by SIGABRT instead of cleaning up) is
    noted and raised again a moment later, in code of ours, not inside the compiler's step."""
    from rainforest.signals import Terminated, in_compiler, termination_as_interrupt

    ns = {}
    exec(compile(_STEP, _IN_NUMBA, "exec"), ns)
    assert not in_compiler(sys._getframe())  # this test's own code, and pytest's
    elsewhere = {}  # a path that only names the package is not the compiler
    exec(compile("import sys\ndef here():\n    return sys._getframe()\n",
                 os.path.join(os.sep, "home", "numba", "train.py"), "exec"), elsewhere)
    assert not in_compiler(elsewhere["here"]())
    finished = []
    with pytest.raises(Terminated):
        with termination_as_interrupt():
            finished.append(ns["step"](signal.SIGTERM, 0.3))  # deferred, sent again, deferred again...
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.01)
    assert finished == ["done"]


def test_a_signal_noted_in_the_compiler_is_raised_at_a_checkpoint_and_not_sent_again():
    """A checkpoint (raise_pending) raises a signal noted in the compiler before it is sent again, and
    once raised it is not sent again: the process, its handlers back to the default, lives on."""
    code = ("import signal, sys, time\n"
            "import numba  # the compiler's folders are those of the packages imported\n"
            "from rainforest.signals import Terminated, raise_pending, termination_as_interrupt\n"
            f"ns = {{}}\nexec(compile({_STEP!r}, {_IN_NUMBA!r}, 'exec'), ns)\n"
            "try:\n"
            "    with termination_as_interrupt():\n"
            "        ns['step'](signal.SIGTERM, 0.0)\n"
            "        print('noted')\n"
            "        raise_pending()\n"
            "except Terminated:\n"
            "    print('terminated')\n"
            "time.sleep(0.5)\n"
            "print('alive')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == ["noted", "terminated", "alive"], (r.returncode, r.stderr[-2000:])


def test_ctrl_c_in_the_compiler_is_a_keyboard_interrupt_once_the_compiler_is_done():
    """SIGINT within the block: a plain KeyboardInterrupt, as Python's own handler raises, deferred
    out of the compiler like the others; the block leaves Python's handler as it found it."""
    from rainforest.signals import Terminated, termination_as_interrupt

    ns = {}
    exec(compile(_STEP, _IN_NUMBA, "exec"), ns)
    before = signal.getsignal(signal.SIGINT)
    finished = []
    with pytest.raises(KeyboardInterrupt) as caught:
        with termination_as_interrupt():
            finished.append(ns["step"](signal.SIGINT, 0.2))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.01)
    assert finished == ["done"] and not isinstance(caught.value, Terminated)
    assert signal.getsignal(signal.SIGINT) is before
