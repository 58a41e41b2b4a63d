"""``PostgresCheckpointer``: which of PostgreSQL's failures are outages (retried from the
checkpoint) and which are the statement's (the run fails), read off errors the real
server raises; and that every coroutine of LangGraph's saver is covered."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg_pool import AsyncConnectionPool

from agent_bridge.errors import CheckpointUnavailableError
from agent_bridge.pg_errors import is_outage
from agent_bridge.postgres_checkpointer import PostgresCheckpointer
from tests import services


def _own_coroutines(cls: type) -> set[str]:
    """The public coroutines ``cls`` defines itself or inherits from a class below
    ``BaseCheckpointSaver`` (whose own are defaults built on those)."""
    names = set()
    for name, member in inspect.getmembers(cls):
        owner = member.__qualname__.split(".")[0] if hasattr(member, "__qualname__") else ""
        coroutine = inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)
        if coroutine and not name.startswith("_") and owner != BaseCheckpointSaver.__name__:
            names.add(name)
    return names


def test_every_coroutine_of_langgraphs_saver_is_wrapped() -> None:
    """A coroutine LangGraph adds to ``AsyncPostgresSaver`` would raise psycopg's own
    errors, which the worker takes for the graph's: it must be wrapped too."""
    theirs = _own_coroutines(AsyncPostgresSaver)
    assert {"aget_tuple", "aput", "aput_writes", "alist", "adelete_thread"} <= theirs
    assert {name for name in theirs if name not in vars(PostgresCheckpointer)} == set()


def _terminated(conn: psycopg.Connection) -> None:
    with psycopg.connect(services.admin_url(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
    conn.execute("SELECT 1")


def _timed_out(conn: psycopg.Connection) -> None:
    conn.execute("SET statement_timeout = 50")
    conn.execute("SELECT pg_sleep(2)")


def _read_only(conn: psycopg.Connection) -> None:
    conn.execute("SET default_transaction_read_only = on")
    conn.execute("CREATE TABLE refused (n int)")


def _too_big_for_an_index(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TEMP TABLE keyed (k text PRIMARY KEY)")
    conn.execute(
        "INSERT INTO keyed SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g"
    )


def _duplicate(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TEMP TABLE once (k int PRIMARY KEY)")
    conn.execute("INSERT INTO once VALUES (1), (1)")


@pytest.mark.parametrize(
    ("provoke", "outage"),
    [
        (_terminated, True),  # 57P01: a killed session, a failover, a stop
        (_read_only, True),  # 25006: a standby, or a primary just demoted
        (_timed_out, True),  # 57014: a lock may be held (retries are bounded)
        (_too_big_for_an_index, False),  # 54000: the same row is as big next time
        (_duplicate, False),  # 23505
    ],
)
def test_an_outage_is_the_connections_or_the_servers_not_the_statements(
    pg_url: str, provoke: Callable[[psycopg.Connection], None], outage: bool
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn, pytest.raises(psycopg.Error) as raised:
        provoke(conn)
    assert is_outage(raised.value) is outage, (raised.value.sqlstate, raised.value)


def test_a_server_that_cannot_be_reached_is_an_outage() -> None:
    with pytest.raises(psycopg.OperationalError) as raised:
        psycopg.connect("postgresql://postgres@127.0.0.1:1/none", connect_timeout=2)
    assert raised.value.sqlstate is None and is_outage(raised.value)
    assert not is_outage(ValueError("not psycopg's"))


async def test_a_pool_that_cannot_connect_raises_the_checkpoints_outage() -> None:
    """No connection within the pool's timeout (``PoolTimeout``): an outage, raised by
    the saver as ``CheckpointUnavailableError``."""
    pool: AsyncConnectionPool = AsyncConnectionPool(
        "postgresql://postgres@127.0.0.1:1/none", min_size=0, max_size=1, open=False, timeout=0.5
    )
    await pool.open()
    try:
        saver = PostgresCheckpointer(conn=pool)  # type: ignore[arg-type]
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        with pytest.raises(CheckpointUnavailableError, match="checkpoint"):
            await saver.aput(config, empty_checkpoint(), {}, {})  # type: ignore[arg-type]
    finally:
        await pool.close()


async def test_a_listing_closed_early_lets_the_saver_go(pg_backend: Any) -> None:
    """``alist`` holds the saver's lock (every checkpoint statement of the process waits
    on it) and a pooled connection while it lists; closing it after one item lets both
    go at once, as LangGraph's own saver does."""
    saver = pg_backend.checkpointer
    config = {"configurable": {"thread_id": "listed", "checkpoint_ns": ""}}
    for _ in range(2):
        config = await saver.aput(config, empty_checkpoint(), {}, {})
    listing = saver.alist({"configurable": {"thread_id": "listed"}})
    assert await anext(listing) is not None
    assert saver.lock.locked()
    await listing.aclose()
    assert not saver.lock.locked()
