"""scripts/postgres_server.py: a real PostgreSQL server on loopback, and Arrow tables COPYed into it.

The session's server comes from the ``postgres_url`` fixture (tests/conftest.py); the
life-cycle tests start servers of their own. Everything here is skipped, with the reason,
where PostgreSQL's binaries or psycopg are missing.
"""
import datetime
import decimal
import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from conftest import load_script, postgres_missing

pg = load_script("postgres_server")
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "postgres_server.py"
INJECTION = "'); DROP TABLE t; --"


@pytest.fixture
def available():
    reason = postgres_missing()
    if reason:
        pytest.skip(reason)


def _connect(url):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _same(a, b, float32=False):
    """Exact equality, NaN equal to NaN; float32 values compared as float32 (PostgreSQL prints real shortest)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if float32:
            a, b = np.float32(a), np.float32(b)
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, decimal.Decimal) or isinstance(b, decimal.Decimal):  # numeric(20,0) holds uint64
        return not isinstance(a, bool) and not isinstance(b, bool) and a == b
    return type(a) is type(b) and a == b


def _read_back(url, target, arrow_table):
    """Rows of ``target`` in physical (= insertion) order, with the column names and types PostgreSQL has."""
    from psycopg import sql

    with _connect(url) as conn:
        cur = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY ctid").format(target))
        rows = cur.fetchall()
        names = [d.name for d in cur.description]
        types = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                             "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                             [target.as_string(conn)]).fetchall()
    return names, [t for (t,) in types], rows


def _assert_round_trip(url, target, arrow_table):
    names, _, rows = _read_back(url, target, arrow_table)
    assert names == arrow_table.column_names
    assert len(rows) == arrow_table.num_rows
    float32 = [pa.types.is_float32(f.type) for f in arrow_table.schema]
    for i, (got, want) in enumerate(zip(rows, arrow_table.to_pylist())):
        for name, is32, g in zip(names, float32, got):
            assert _same(g, want[name], is32), (i, name, g, want[name])


def hostile_table():
    return pa.table({
        "select": pa.array([1, -2, None, 2**62, 0], pa.int64()),
        'a"b': pa.array([INJECTION, "", None, 'quote " and \'', "\\.\nline two, naïve ✓"]),
        "naïve col": pa.array([1.5, float("nan"), None, float("inf"), -0.1]),
        "f32": pa.array([0.1, float("nan"), None, float("-inf"), 3.4e38], pa.float32()),
        "flag": pa.array([True, False, None, True, False]),
        "day": pa.array([datetime.date(2024, 2, 29), None, datetime.date(1970, 1, 1), datetime.date(1, 1, 1),
                         datetime.date(9999, 12, 31)], pa.date32()),
        "i8": pa.array([-128, 127, None, 0, 1], pa.int8()),
        "i16": pa.array([-32768, 32767, None, 0, 1], pa.int16()),
        "i32": pa.array([-2**31, 2**31 - 1, None, 0, 1], pa.int32()),
        "u8": pa.array([0, 255, None, 1, 2], pa.uint8()),
        "u16": pa.array([0, 65535, None, 1, 2], pa.uint16()),
        "u32": pa.array([0, 2**32 - 1, None, 1, 2], pa.uint32()),
        "u64": pa.array([0, 2**64 - 1, None, 1, 2], pa.uint64()),
        "cat": pa.array(["x", None, "y", "x", ""]).dictionary_encode(),
        "big text": pa.array(["a", "b", None, "c", "d"], pa.large_string()),
        "price": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-99999.99"), decimal.Decimal("0.00"),
                           decimal.Decimal("3.10")], pa.decimal128(7, 2)),
        "at": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 678901), None, datetime.datetime(1999, 12, 31),
                        datetime.datetime(2000, 1, 1, 0, 0, 0, 1), datetime.datetime(2038, 1, 19, 3, 14, 8)],
                       pa.timestamp("us")),
    })


def test_server_answers_on_loopback(postgres_url):
    assert postgres_url.startswith("postgresql://rainforest@127.0.0.1:") and postgres_url.endswith("/rainforest")
    with _connect(postgres_url) as conn:
        (version,) = conn.execute("select version()").fetchone()
        assert version.startswith("PostgreSQL ")
        row = conn.execute("select current_database(), current_user, host(inet_server_addr()), "
                           "current_setting('listen_addresses'), current_setting('server_encoding')").fetchone()
    assert row == ("rainforest", "rainforest", "127.0.0.1", "127.0.0.1", "UTF8")


def test_load_table_round_trips_hostile_names_and_values(postgres_url):
    from psycopg import sql

    with _connect(postgres_url) as conn:
        conn.execute("CREATE TABLE t (x int)")  # what the injection value would drop
    table = hostile_table()
    assert pg.load_table(postgres_url, "select", table) == table.num_rows
    _assert_round_trip(postgres_url, sql.Identifier("select"), table)
    names, types, _ = _read_back(postgres_url, sql.Identifier("select"), table)
    assert dict(zip(names, types)) == {
        "select": "bigint", 'a"b': "text", "naïve col": "double precision", "f32": "real", "flag": "boolean",
        "day": "date", "i8": "smallint", "i16": "smallint", "i32": "integer", "u8": "smallint", "u16": "integer",
        "u32": "bigint", "u64": "numeric(20,0)", "cat": "text", "big text": "text", "price": "numeric(7,2)",
        "at": "timestamp without time zone"}
    with _connect(postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('public.t') IS NOT NULL").fetchone() == (True,)
        # NaN is NaN and NULL is NULL: not merged on the way in
        nan, null = conn.execute('SELECT count(*) FILTER (WHERE "naïve col" = \'NaN\'), '
                                 'count(*) FILTER (WHERE "naïve col" IS NULL) FROM "select"').fetchone()
    assert (nan, null) == (1, 1)

    # a hostile table name in a hostile schema
    assert pg.load_table(postgres_url, 'a"b', table, schema="naïve col") == table.num_rows
    _assert_round_trip(postgres_url, sql.Identifier("naïve col", 'a"b'), table)


def test_load_table_keeps_order_across_batches(postgres_url):
    n = 20_000
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    table = pa.table({"id": np.arange(n), "x": pa.array(x, mask=rng.random(n) < 0.1),
                      "s": pa.array(rng.choice(["a", "b", ""], n), mask=rng.random(n) < 0.1)})
    assert pg.load_table(postgres_url, "ordered", table, batch_rows=777) == n
    with _connect(postgres_url) as conn:
        rows = conn.execute("SELECT id, x, s FROM ordered ORDER BY ctid").fetchall()
    assert [r[0] for r in rows] == list(range(n))
    for got, want in zip(rows, table.to_pylist()):
        assert _same(got[1], want["x"]) and got[2] == want["s"]


def test_load_table_refuses_what_it_cannot_load(postgres_url):
    table = pa.table({"ok": [1, 2]})
    pg.load_table(postgres_url, "twice", table)
    import psycopg

    with pytest.raises(psycopg.errors.DuplicateTable):
        pg.load_table(postgres_url, "twice", table)
    assert pg.load_table(postgres_url, "twice", pa.table({"ok": [3, 4, 5]}), replace=True) == 3
    with pytest.raises(TypeError, match="column 'nested'"):
        pg.load_table(postgres_url, "nested", pa.table({"nested": [[1], [2]]}))
    with pytest.raises(ValueError, match="63 bytes"):
        pg.load_table(postgres_url, "x" * 64, table)
    with _connect(postgres_url) as conn:  # the failed loads left nothing behind
        assert conn.execute("SELECT to_regclass('nested')").fetchone() == (None,)


@pytest.mark.postgres
def test_stop_removes_the_folder_and_is_idempotent(available):
    server = pg.PostgresServer()
    url = server.start()
    folder, port = server.folder, server.port
    assert folder.is_dir() and (folder / "data" / "PG_VERSION").exists() and _port_open(port)
    with _connect(url) as conn:
        assert conn.execute("select 6 * 7").fetchone() == (42,)
    server.stop()
    assert not folder.exists() and not _port_open(port)
    server.stop()  # again: nothing to do


@pytest.mark.postgres
def test_a_server_that_cannot_start_says_why(available):
    server = pg.PostgresServer(settings={"shared_buffers": "lots"}, timeout=20)
    with pytest.raises(pg.PostgresError, match="shared_buffers") as info:
        server.start()
    assert "server log" in str(info.value)
    assert not server.folder.exists()


@pytest.mark.postgres
def test_command_line_start_and_stop(available, tmp_path):
    state_file = tmp_path / "state.json"
    cmd = [sys.executable, str(SCRIPT)]
    start = subprocess.run(cmd + ["start", "--state-file", str(state_file)], capture_output=True, text=True,
                           timeout=120)
    assert start.returncode == 0, start.stderr
    url = start.stdout.strip()
    state = json.loads(state_file.read_text())
    try:
        assert url == state["url"] == f"postgresql://rainforest@127.0.0.1:{state['port']}/rainforest"
        with _connect(url) as conn:  # still running after the command exited
            assert conn.execute("select current_database()").fetchone() == ("rainforest",)
        again = subprocess.run(cmd + ["start", "--state-file", str(state_file)], capture_output=True, text=True,
                               timeout=120)
        assert again.returncode != 0 and "stop it first" in again.stderr
    finally:
        stop = subprocess.run(cmd + ["stop", "--state-file", str(state_file)], capture_output=True, text=True,
                              timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert not _port_open(state["port"])
    assert not Path(state["folder"]).exists() and not state_file.exists()
    twice = subprocess.run(cmd + ["stop", "--state-file", str(state_file)], capture_output=True, text=True)
    assert twice.returncode != 0 and "no server recorded" in twice.stderr


def test_find_binaries_names_what_is_missing(tmp_path):
    with pytest.raises(RuntimeError, match="initdb, pg_ctl, postgres"):
        pg.find_binaries(str(tmp_path))
