"""Real PostgreSQL and Redis for the tests: where they are, and per-test isolation.

``DATABASE_URL`` / ``REDIS_URL`` name them (defaults: this machine's local services).
PostgreSQL: a template database migrated once per session, cloned per test
(``CREATE DATABASE ... TEMPLATE``). Redis: a dedicated database index, flushed per test,
one per pytest-xdist worker (the suite runs in one process per core, ``-n auto``).
"""

from __future__ import annotations

import os
import secrets
from urllib.parse import parse_qs, urlsplit, urlunsplit

import psycopg
import redis

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
REDIS_DATABASES = 16
"""Redis's default ``databases``: the indexes a test process's own can wrap around."""
TEMPLATE_DB = f"agent_bridge_template_{secrets.token_hex(4)}"
"""One per test session, so concurrent sessions on one server never share it."""

HOW_TO_START = (
    "The tests need the real services. Start them with\n"
    "  pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n"
    "  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no\n"
    "(or `bash .ci/run`, which starts both), or point DATABASE_URL / REDIS_URL at yours."
)


def admin_url() -> str:
    """The PostgreSQL URL tests administer databases through."""
    return os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL


def redis_url() -> str:
    """The Redis URL of this test process's own database index: ``REDIS_URL`` as given
    for the first pytest-xdist worker (``gw0``, or no xdist), the index below its path's
    for ``gw1``, and so on (modulo Redis's default 16), since each test flushes its index.

    Raises:
        ValueError: A second worker's ``REDIS_URL`` names its index some other way
            (``unix://``, ``?db=``): every worker would flush the same one.
    """
    url = os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    if not worker:
        return url
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or "db" in parse_qs(parts.query):
        raise ValueError(
            "with a test process per core, REDIS_URL must be redis:// or rediss:// with its "
            "database index in the path (redis://host:6379/15); or run pytest -n 0"
        )
    index = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(index - worker) % REDIS_DATABASES}"))


def database_url(name: str) -> str:
    """``admin_url()`` pointed at database ``name``."""
    parts = urlsplit(admin_url())
    return urlunsplit(parts._replace(path=f"/{name}"))


def check_services() -> str | None:
    """Return why the services are unusable, or ``None`` if both answer."""
    problems = []
    try:
        with psycopg.connect(admin_url(), connect_timeout=3):
            pass
    except psycopg.Error as exc:
        problems.append(f"PostgreSQL at {admin_url()}: {exc}".strip())
    try:
        redis.Redis.from_url(redis_url(), socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        problems.append(f"Redis at {redis_url()}: {exc}")
    return "\n".join(problems) + "\n\n" + HOW_TO_START if problems else None


def recreate_database(name: str, *, template: str | None = None) -> str:
    """Drop and create database ``name`` (from ``template``); return its URL."""
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        clause = f' TEMPLATE "{template}"' if template else ""
        conn.execute(f'CREATE DATABASE "{name}"{clause}')
    return database_url(name)


def drop_database(name: str) -> None:
    """Drop database ``name`` (closing any connection left to it)."""
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def unique_name(prefix: str) -> str:
    """A fresh database or channel name."""
    return f"{prefix}_{secrets.token_hex(4)}"
