"""Start and stop a throw-away PostgreSQL server on this machine, listening on loopback only.

``initdb`` makes a fresh cluster in a temporary folder (trust authentication, for
connections from 127.0.0.1 and the Unix socket only; superuser ``rainforest``; UTF8), and
``pg_ctl`` runs the server on a free port of 127.0.0.1 with durability switched off
(``fsync=off``): a server for tests and benchmarks, never for data you want to keep.
PostgreSQL refuses to run as root; run as root, the folder is handed to the ``postgres``
user and ``initdb``, ``pg_ctl`` and the server run as that user.

Command line::

    python scripts/postgres_server.py start          # prints postgresql://rainforest@127.0.0.1:PORT/rainforest
    python scripts/postgres_server.py stop

``start`` leaves the server running and records it (folder, port, pid) in a JSON state
file, ``$TMPDIR/rainforest-postgres.json`` unless ``--state-file`` says otherwise; ``stop``
stops what that file records and removes the folder.

From Python (the tests)::

    from postgres_server import PostgresServer, load_table
    with PostgresServer() as server:
        load_table(server.url, "train", arrow_table)
"""
from __future__ import annotations

import argparse
import atexit
import glob
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


BINARIES = ("initdb", "pg_ctl", "postgres")
USER = "rainforest"      # the superuser initdb creates
DATABASE = "rainforest"  # the database start() creates
OS_USER = "postgres"     # who runs the server when we are root
DEFAULT_STATE_FILE = Path(tempfile.gettempdir()) / "rainforest-postgres.json"
SETTINGS = {  # a server for tests: small, fast, not durable
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",  # COPY into a table created in the same transaction skips the WAL
    "max_wal_senders": "0",
    "shared_buffers": "32MB",
    "max_connections": "20",
    "autovacuum": "off",
    "log_min_messages": "warning",
    "timezone": "UTC",
}


class PostgresError(RuntimeError):
    """The server did not start (the message quotes the tail of the server's log)."""


# -- finding and running the binaries ---------------------------------------------------
def find_binaries(bindir: str | None = None) -> dict:
    """Paths of ``initdb``, ``pg_ctl`` and ``postgres``: ``{"initdb": "/usr/lib/.../initdb", ...}``.

    Looks in ``bindir`` when given, else on ``PATH``, else in the newest
    ``/usr/lib/postgresql/<version>/bin`` that holds all three (where Debian and Ubuntu
    put them, off ``PATH``). Raises RuntimeError naming what is missing.
    """
    if bindir is not None:
        found = {b: _executable(os.path.join(bindir, b)) for b in BINARIES}
        where = bindir
    else:
        found = {b: shutil.which(b) for b in BINARIES}
        where = "PATH"
        if not all(found.values()):
            for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
                candidates = {b: _executable(os.path.join(d, b)) for b in BINARIES}
                if all(candidates.values()):
                    return candidates
            where = "PATH or /usr/lib/postgresql/*/bin"
    missing = [b for b, p in found.items() if not p]
    if missing:
        raise RuntimeError(f"PostgreSQL server binaries not found: {', '.join(missing)} (looked in {where}; "
                           f"install the PostgreSQL server, e.g. apt-get install postgresql)")
    return found


def run_as_postgres(user: str = OS_USER) -> dict:
    """Keyword arguments for ``subprocess`` that run a command as ``user`` when we are root.

    ``{}`` when we are not root (the server then runs as us). As root: ``user``, ``group``
    (the user's primary group) and ``extra_groups=[]``; RuntimeError when ``user`` does not
    exist, since PostgreSQL refuses to run as root.
    """
    if os.geteuid() != 0:
        return {}
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise RuntimeError(f"running as root and there is no {user!r} user to run PostgreSQL as "
                           f"(PostgreSQL refuses to run as root)") from None
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _executable(path: str) -> str | None:
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def _version_key(path: str):
    version = Path(path).parent.name
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _clean_env() -> dict:
    """Our environment without PG* variables (PGDATA, PGPORT, ... would redirect initdb and pg_ctl)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"  # initdb's and pg_ctl's messages in English, whatever the machine's locale
    return env


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_postgres(pid: int) -> bool:
    """Whether ``pid`` is alive and a postgres process (not a recycled pid)."""
    if not _alive(pid):
        return False
    try:
        return b"postgres" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: trust the pid


def _quote_conf(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


# -- the server --------------------------------------------------------------------------
class PostgresServer:
    """A PostgreSQL server in a temporary folder, on a free port of 127.0.0.1.

    Parameters
    ----------
    port : int, default=0
        TCP port on 127.0.0.1; 0 picks a free one (and picks again if another process takes
        it before the server binds it).
    timeout : float, default=60
        Seconds to wait for initdb and for the server to accept connections.
    settings : dict, optional
        Extra ``postgresql.conf`` settings, over :data:`SETTINGS`.
    bindir : str, optional
        Folder of ``initdb`` and ``pg_ctl``; see :func:`find_binaries`.
    base_dir : str, optional
        Where to make the temporary folder (the system's temporary folder by default). When
        run as root, the ``postgres`` user must be able to reach it.

    Attributes
    ----------
    url : str
        ``postgresql://rainforest@127.0.0.1:PORT/rainforest`` once started.
    folder : pathlib.Path
        The temporary folder: ``data/`` (the cluster), ``postgres.log`` and the Unix socket.
    port, pid : int
        The TCP port and the pid of the postmaster.
    """

    def __init__(self, port: int = 0, timeout: float = 60.0, settings: dict | None = None,
                 bindir: str | None = None, base_dir: str | None = None):
        self.requested_port = port
        self.timeout = timeout
        self.settings = {**SETTINGS, **(settings or {})}
        self.bindir = bindir
        self.base_dir = base_dir
        self.folder: Path | None = None
        self.port: int | None = None
        self.pid: int | None = None
        self.url: str | None = None
        self._binaries: dict | None = None
        self._as_user: dict = {}
        self._owner = os.getpid()
        self._running = False

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def log_file(self) -> Path:
        return self.folder / "postgres.log"

    # -- life cycle --------------------------------------------------------------------
    def start(self) -> str:
        """initdb, start the server, wait until it answers, create the database; return the URL."""
        if self._running:
            return self.url
        self._binaries = find_binaries(self.bindir)
        self._as_user = run_as_postgres()
        self.folder = Path(tempfile.mkdtemp(prefix="rainforest-pg-", dir=self.base_dir))
        self._running = True
        atexit.register(self._stop_at_exit)
        try:
            if self._as_user:
                os.chown(self.folder, self._as_user["user"], self._as_user["group"])
            self._initdb()
            for attempt in range(3):
                self.port = self.requested_port or _free_port()
                try:
                    self._pg_ctl_start()
                    break
                except PostgresError as exc:
                    taken = "could not bind" in str(exc) or "already in use" in str(exc)
                    if self.requested_port or not taken or attempt == 2:
                        raise
            self.pid = self._read_pid()
            self.url = f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"
            self._create_database()
        except BaseException:
            self.stop()
            raise
        return self.url

    def stop(self) -> None:
        """``pg_ctl -m fast stop`` (the postmaster killed if that fails), then remove the folder.

        Safe to call twice, and from another process than the one that started the server
        (see :meth:`from_state`).
        """
        if not self._running:
            return
        self._running = False
        atexit.unregister(self._stop_at_exit)
        try:
            stopped = True
            if self.folder is not None and (self.data_dir / "postmaster.pid").exists():
                stopped = self._pg_ctl(["stop", "-m", "fast", "-w", "-t", "30"], check=False).returncode == 0
            if not stopped and self.pid and _is_postgres(self.pid):
                self._kill(self.pid)
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)

    def detach(self) -> dict:
        """Leave the server running after this process exits; return its state (see :meth:`from_state`)."""
        atexit.unregister(self._stop_at_exit)
        return self.state()

    def state(self) -> dict:
        return {"url": self.url, "folder": str(self.folder), "port": self.port, "pid": self.pid,
                "bindir": str(Path(self._binaries["pg_ctl"]).parent) if self._binaries else self.bindir}

    @classmethod
    def from_state(cls, state: dict) -> "PostgresServer":
        """A handle on a server that another process started and recorded with :meth:`state`."""
        server = cls(port=state["port"], bindir=state.get("bindir"))
        server.folder, server.port, server.pid, server.url = Path(state["folder"]), state["port"], state["pid"], \
            state["url"]
        server._binaries = find_binaries(server.bindir)
        server._as_user = run_as_postgres()
        server._running = True
        return server

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def _stop_at_exit(self) -> None:
        if os.getpid() == self._owner:  # not in a forked child that inherited the hook
            self.stop()

    # -- plumbing ----------------------------------------------------------------------
    def _run(self, args: list, check: bool = True, timeout: float | None = None):
        proc = subprocess.run(args, cwd=self.folder, env=_clean_env(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout or self.timeout + 30,
                              **self._as_user)
        if check and proc.returncode != 0:
            raise PostgresError(f"{Path(args[0]).name} failed with status {proc.returncode}:\n"
                                f"{(proc.stdout + proc.stderr).strip()}")
        return proc

    def _pg_ctl(self, args: list, check: bool = True):
        return self._run([self._binaries["pg_ctl"], "-D", str(self.data_dir)] + args, check=check)

    def _initdb(self) -> None:
        self._run([self._binaries["initdb"], "-D", str(self.data_dir), "-U", USER, "--encoding=UTF8",
                   "--no-locale", "--auth=trust", "--no-sync", "--no-instructions"])
        # Trust, but from loopback and the socket (in our folder) only.
        (self.data_dir / "pg_hba.conf").write_text(
            "# written by scripts/postgres_server.py: trust on loopback only\n"
            "local all all trust\n"
            "host all all 127.0.0.1/32 trust\n")
        settings = {**self.settings, "unix_socket_directories": str(self.folder)}
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write("\n# written by scripts/postgres_server.py\n")
            conf.writelines(f"{k} = {_quote_conf(v)}\n" for k, v in settings.items())

    def _pg_ctl_start(self) -> None:
        self.log_file.unlink(missing_ok=True)
        proc = self._pg_ctl(["start", "-w", "-t", str(int(self.timeout)), "-l", str(self.log_file),
                             "-o", f"-p {self.port}"], check=False)
        if proc.returncode != 0:
            raise PostgresError(f"PostgreSQL did not start on 127.0.0.1:{self.port} (pg_ctl status "
                                f"{proc.returncode}: {(proc.stdout + proc.stderr).strip()})\n"
                                f"server log (last lines):\n{self.log_tail()}")

    def _read_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def _create_database(self) -> None:
        """Wait until the server accepts connections on 127.0.0.1, then ``CREATE DATABASE rainforest``."""
        import psycopg

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with psycopg.connect(host="127.0.0.1", port=self.port, user=USER, dbname="postgres",
                                     connect_timeout=5, autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {DATABASE}")
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise PostgresError(f"PostgreSQL on 127.0.0.1:{self.port} did not accept connections "
                                        f"within {self.timeout:g} s ({exc})\nserver log (last lines):\n"
                                        f"{self.log_tail()}") from exc
                time.sleep(0.1)

    def _kill(self, pid: int) -> None:
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):  # PostgreSQL's fast, immediate, kill
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not _alive(pid):
                return

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server's log."""
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:]) or "(empty log)"
        except (OSError, TypeError):
            return "(no log)"


# -- loading Arrow tables ------------------------------------------------------------------
def postgres_type(arrow_type) -> str:
    """The PostgreSQL type that holds every value of ``arrow_type``; TypeError when there is none here."""
    import pyarrow as pa
    import pyarrow.types as t

    if t.is_dictionary(arrow_type):
        return postgres_type(arrow_type.value_type)
    if t.is_boolean(arrow_type):
        return "boolean"
    if t.is_int8(arrow_type) or t.is_int16(arrow_type) or t.is_uint8(arrow_type):
        return "smallint"
    if t.is_int32(arrow_type) or t.is_uint16(arrow_type):
        return "integer"
    if t.is_int64(arrow_type) or t.is_uint32(arrow_type):
        return "bigint"
    if t.is_uint64(arrow_type):
        return "numeric(20,0)"
    if t.is_float16(arrow_type) or t.is_float32(arrow_type):
        return "real"
    if t.is_float64(arrow_type):
        return "double precision"
    if t.is_decimal(arrow_type):
        return f"numeric({arrow_type.precision},{arrow_type.scale})"
    if t.is_string(arrow_type) or t.is_large_string(arrow_type) or getattr(t, "is_string_view", bool)(arrow_type):
        return "text"
    if t.is_date(arrow_type):
        return "date"
    if t.is_timestamp(arrow_type):
        return "timestamp with time zone" if arrow_type.tz is not None else "timestamp"
    if t.is_time(arrow_type):
        return "time"
    if arrow_type == pa.null():
        return "text"
    raise TypeError(f"no PostgreSQL type for Arrow type {arrow_type}")


def _csv_ready(column, name: str):
    """``column`` in a type that pyarrow.csv writes the way PostgreSQL's COPY (FORMAT csv) reads it."""
    import pyarrow as pa
    import pyarrow.types as t

    typ = column.type
    if t.is_dictionary(typ):
        column = column.cast(typ.value_type)
        typ = typ.value_type
    if t.is_float16(typ):
        return column.cast(pa.float32())
    if getattr(t, "is_string_view", bool)(typ):
        return column.cast(pa.large_string())
    if typ == pa.null():
        return column.cast(pa.string())
    return column


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} name {name!r}: PostgreSQL needs a non-empty string")
    if "\x00" in name:
        raise ValueError(f"{what} name {name!r} contains a NUL character")
    if len(name.encode()) > 63:  # PostgreSQL would silently truncate it (NAMEDATALEN - 1)
        raise ValueError(f"{what} name {name!r} is longer than PostgreSQL's 63 bytes")


def load_table(url: str, table: str, arrow_table, schema: str | None = None, *, replace: bool = False,
               batch_rows: int = 65536) -> int:
    """Create ``table`` (in ``schema``, created if missing) and COPY the rows of ``arrow_table`` into it, in order.

    Every identifier is quoted (any name works: ``select``, ``a"b``, ``naïve col``). Columns
    get the types of :func:`postgres_type`; nulls stay NULL, float NaN and infinities stay
    NaN and ±Infinity. The rows go through ``COPY ... FROM STDIN (FORMAT csv)`` as CSV that
    pyarrow writes, ``batch_rows`` rows at a time, in the table's order, in one transaction
    (nothing is left behind if it fails). ``replace=True`` drops an existing table first;
    otherwise an existing table is an error. Returns the number of rows copied.
    """
    import psycopg
    import pyarrow as pa
    import pyarrow.csv as pacsv
    from psycopg import sql

    if isinstance(arrow_table, pa.RecordBatch):
        arrow_table = pa.Table.from_batches([arrow_table])
    if not isinstance(arrow_table, pa.Table):
        raise TypeError(f"arrow_table must be a pyarrow Table or RecordBatch, not {type(arrow_table).__name__}")
    _check_name(table, "table")
    if schema is not None:
        _check_name(schema, "schema")
    names = arrow_table.column_names
    if not names:
        raise ValueError("the table has no columns")
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate column names: {sorted({n for n in names if names.count(n) > 1})}")
    columns = []
    for name, field in zip(names, arrow_table.schema):
        _check_name(name, "column")
        try:
            columns.append(sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(postgres_type(field.type))))
        except TypeError as exc:
            raise TypeError(f"column {name!r}: {exc}") from None
    target = sql.Identifier(schema, table) if schema is not None else sql.Identifier(table)
    data = pa.table([_csv_ready(arrow_table.column(i), n) for i, n in enumerate(names)],
                    names=[f"c{i}" for i in range(len(names))])
    options = pacsv.WriteOptions(include_header=False, batch_size=batch_rows)  # strings quoted, nulls bare
    copied = 0
    with psycopg.connect(url) as conn:  # one transaction: committed on success, rolled back on error
        with conn.cursor() as cur:
            if schema is not None:
                cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            if replace:
                cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(target))
            cur.execute(sql.SQL("CREATE TABLE {} ({})").format(target, sql.SQL(", ").join(columns)))
            copy_sql = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT csv, NULL '')").format(
                target, sql.SQL(", ").join(sql.Identifier(n) for n in names))
            with cur.copy(copy_sql) as copy:
                for batch in data.to_batches(max_chunksize=batch_rows):
                    buf = io.BytesIO()
                    pacsv.write_csv(batch, buf, options)
                    copy.write(buf.getbuffer())
            copied = cur.rowcount
    if copied != arrow_table.num_rows:
        raise RuntimeError(f"COPY reported {copied} rows for a table of {arrow_table.num_rows}")
    return copied


# -- command line ------------------------------------------------------------------------
def _read_state(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        sys.exit(f"error: {path} is not a state file written by 'start' ({exc})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="start a server on 127.0.0.1, print its URL and leave it running")
    s.add_argument("--port", type=int, default=0, help="TCP port (default 0: any free port)")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the server (default 60)")
    s.add_argument("--bindir", help="folder of initdb and pg_ctl (default: PATH, then /usr/lib/postgresql/*/bin)")
    t = sub.add_parser("stop", help="stop the server that 'start' recorded and remove its folder")
    for q in (s, t):
        q.add_argument("--state-file", type=Path, default=DEFAULT_STATE_FILE,
                       help=f"where 'start' records the server (default {DEFAULT_STATE_FILE})")
    args = p.parse_args(argv)
    state = _read_state(args.state_file)
    if args.command == "stop":
        if state is None:
            sys.exit(f"error: no server recorded in {args.state_file}")
        try:
            PostgresServer.from_state(state).stop()
        except RuntimeError as exc:
            sys.exit(f"error: {exc}")
        args.state_file.unlink(missing_ok=True)
        print(f"stopped the PostgreSQL server at {state['url']} (folder {state['folder']} removed)")
        return 0
    if state is not None and state.get("pid") and _is_postgres(state["pid"]):
        sys.exit(f"error: {args.state_file} records a running server ({state['url']}); stop it first")
    server = PostgresServer(port=args.port, timeout=args.timeout, bindir=args.bindir)
    try:
        url = server.start()
    except (RuntimeError, ImportError) as exc:
        sys.exit(f"error: {exc}")
    args.state_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.state_file.with_name(args.state_file.name + ".tmp")
    tmp.write_text(json.dumps(server.detach(), indent=1))
    os.replace(tmp, args.state_file)
    print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
