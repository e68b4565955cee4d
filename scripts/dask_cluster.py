"""Start and stop a Dask cluster on this machine: one ``dask scheduler`` and N ``dask worker`` processes.

The processes listen on loopback only (127.0.0.1). Each runs in a session of its own,
so stopping one (or killing it, as the fault tests do) ends exactly that process and
its children. What was started is written to ``STATE_DIR/cluster.json`` so that a
later ``stop`` finds it; logs go to ``STATE_DIR/*.log``.

Command line::

    python scripts/dask_cluster.py start --workers 2 --state-dir /tmp/rf-cluster   # prints the address
    python scripts/dask_cluster.py stop --state-dir /tmp/rf-cluster

From Python (the tests and benchmarks)::

    from dask_cluster import LoopbackCluster
    with LoopbackCluster(n_workers=2) as cluster:
        DaskSource("data/", scheduler=cluster.address)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class ClusterError(RuntimeError):
    """The cluster did not start (the message quotes the failing process's log)."""


class LoopbackCluster:
    """A scheduler and ``n_workers`` workers as separate processes on 127.0.0.1.

    Parameters
    ----------
    n_workers : int, default=2
        Worker processes to start.
    nthreads : int, default=1
        Threads per worker.
    nanny : bool, default=False
        Start workers under a nanny (which restarts a worker that dies); without it a
        killed worker stays dead, which is what the fault tests want.
    port : int, default=0
        Scheduler port; 0 picks a free one.
    state_dir : str, optional
        Folder for the scheduler file, logs and ``cluster.json``; a temporary one by default
        (removed by :meth:`stop`).
    env : dict, optional
        Extra environment of the scheduler and the workers (e.g. ``NUMBA_NUM_THREADS``, or
        ``PYTHONPATH`` for modules of one's own); the scheduler unpickles task graphs too, so it needs
        the modules of the tasks as much as the workers.
    timeout : float, default=60
        Seconds to wait for the scheduler and every worker to be up.
    """

    def __init__(self, n_workers=2, nthreads=1, nanny=False, port=0, state_dir=None, env=None, timeout=60.0,
                 memory_limit="0"):
        self.n_workers, self.nthreads, self.nanny, self.port = n_workers, nthreads, nanny, port
        # No PYTHONPATH: the packages are rainforest.storage and rainforest.boat, which nothing in a
        # worker's local directory (first on sys.path, with Dask's spill folder "storage") can shadow.
        self.env = dict(env or {})
        self.timeout = timeout
        self.memory_limit = memory_limit
        self._own_dir = state_dir is None
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix="rainforest-dask-"))
        self.scheduler = None  # Popen
        self.workers: list = []  # Popen, in start order
        self.address: str | None = None

    # -- life cycle --------------------------------------------------------------------
    def start(self) -> str:
        """Start everything, wait until all workers have registered; return the scheduler address."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        sched_file = self.state_dir / "scheduler.json"
        sched_file.unlink(missing_ok=True)
        try:
            self.scheduler = self._spawn("scheduler", [
                "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard",
                "--scheduler-file", str(sched_file)], self.env)
            self.address = self._wait_for_address(sched_file)
            for i in range(self.n_workers):
                self.add_worker()
            self.wait_for_workers(self.n_workers)
        except BaseException:
            self.stop()
            raise
        self._write_state()
        return self.address

    def add_worker(self):
        """Start one more worker; returns its Popen (its pid is the worker's when there is no nanny)."""
        i = len(self.workers)
        args = ["worker", self.address, "--nthreads", str(self.nthreads), "--name", f"worker-{i}",
                "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", str(self.memory_limit),
                "--local-directory", str(self.state_dir / f"worker-{i}")]
        args.append("--nanny" if self.nanny else "--no-nanny")
        proc = self._spawn(f"worker-{i}", args, self.env)
        self.workers.append(proc)
        self._write_state()
        return proc

    def wait_for_workers(self, n: int) -> None:
        """Block until the scheduler knows ``n`` workers (checking that none of ours died meanwhile)."""
        from distributed import Client

        deadline = time.monotonic() + self.timeout
        with Client(self.address, timeout=self.timeout, set_as_default=False) as client:
            while len(client.scheduler_info(n_workers=-1)["workers"]) < n:
                for i, proc in enumerate(self.workers):
                    if proc.poll() is not None:
                        raise ClusterError(f"worker-{i} exited with status {proc.returncode}:\n"
                                           f"{self._log_tail(f'worker-{i}')}")
                if time.monotonic() > deadline:
                    raise ClusterError(f"only {len(client.scheduler_info(n_workers=-1)['workers'])} of {n} "
                                       f"workers registered within {self.timeout:g} s")
                time.sleep(0.1)

    def kill_worker(self, i: int) -> int:
        """SIGKILL worker ``i`` (its whole session, nanny included); returns the pid killed."""
        proc = self.workers[i]
        _kill_session(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return proc.pid

    def stop(self) -> None:
        """Stop the workers, then the scheduler (SIGTERM, then SIGKILL after 10 s)."""
        for proc in self.workers + ([self.scheduler] if self.scheduler is not None else []):
            _stop(proc)
        self.workers, self.scheduler = [], None
        (self.state_dir / "cluster.json").unlink(missing_ok=True)
        if self._own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- plumbing ----------------------------------------------------------------------
    def _spawn(self, name: str, args: list, env: dict):
        log = open(self.state_dir / f"{name}.log", "ab")
        try:
            return subprocess.Popen(_dask_command() + args, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env={**os.environ, **env},
                                    start_new_session=True)  # its own session: stopped alone, whole
        finally:
            log.close()

    def _wait_for_address(self, sched_file: Path) -> str:
        deadline = time.monotonic() + self.timeout
        while True:
            if sched_file.exists():
                try:
                    return json.loads(sched_file.read_text())["address"]
                except (ValueError, KeyError):
                    pass  # being written
            if self.scheduler.poll() is not None:
                raise ClusterError(f"the scheduler exited with status {self.scheduler.returncode}:\n"
                                   f"{self._log_tail('scheduler')}")
            if time.monotonic() > deadline:
                raise ClusterError(f"the scheduler did not start within {self.timeout:g} s:\n"
                                   f"{self._log_tail('scheduler')}")
            time.sleep(0.05)

    def _log_tail(self, name: str, lines: int = 15) -> str:
        try:
            return "\n".join((self.state_dir / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _write_state(self) -> None:
        procs = {"scheduler": self.scheduler.pid if self.scheduler else None,
                 "workers": [p.pid for p in self.workers]}
        (self.state_dir / "cluster.json").write_text(json.dumps({"address": self.address, "pids": procs}))


def _dask_command() -> list:
    """``dask`` of this Python (the console script), else ``python -m dask``."""
    exe = Path(sys.executable).with_name("dask")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dask"]


def _kill_session(pid: int, sig) -> None:
    try:
        os.killpg(pid, sig)  # the process was started as the leader of its own session
    except ProcessLookupError:
        pass


def _stop(proc) -> None:
    if proc.poll() is not None:
        return
    _kill_session(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _stop_recorded(state_dir: Path) -> None:
    """Stop what ``start`` recorded in ``state_dir/cluster.json`` (a separate invocation has no Popen)."""
    path = state_dir / "cluster.json"
    if not path.exists():
        sys.exit(f"error: no cluster recorded in {path}")
    pids = json.loads(path.read_text())["pids"]
    for pid in pids["workers"] + [pids["scheduler"]]:
        if pid:
            _kill_session(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for pid in pids["workers"] + [pids["scheduler"]]:
        while pid and _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid and _alive(pid):
            _kill_session(pid, signal.SIGKILL)
    path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="start a scheduler and workers; print the scheduler address")
    s.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    s.add_argument("--nthreads", type=int, default=1, help="threads per worker (default 1)")
    s.add_argument("--port", type=int, default=8786, help="scheduler port (default 8786; 0: any free port)")
    s.add_argument("--nanny", action="store_true", help="run workers under a nanny (restarted if they die)")
    s.add_argument("--state-dir", required=True, help="folder for logs and the record of the processes")
    t = sub.add_parser("stop", help="stop the processes that 'start' recorded")
    t.add_argument("--state-dir", required=True)
    args = p.parse_args(argv)
    state_dir = Path(args.state_dir)
    if args.command == "stop":
        _stop_recorded(state_dir)
        print(f"stopped the cluster recorded in {state_dir}")
        return 0
    if (state_dir / "cluster.json").exists():
        sys.exit(f"error: {state_dir} already records a running cluster; stop it first")
    cluster = LoopbackCluster(args.workers, args.nthreads, args.nanny, args.port, state_dir=state_dir)
    try:
        address = cluster.start()
    except ClusterError as exc:
        sys.exit(f"error: {exc}")
    print(address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
