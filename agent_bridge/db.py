"""The database port: a narrow async interface over PostgreSQL or SQLite.

SQL is written once with ``:name`` placeholders and the portable subset both engines
share (``INSERT ... ON CONFLICT DO NOTHING``, ``UPDATE ... RETURNING``); each driver
adapts placeholders. ``open_database(url)`` picks the driver from ``DATABASE_URL``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from agent_bridge.errors import ConfigurationError

Params = Mapping[str, Any]
Row = dict[str, Any]
Dialect = Literal["postgres", "sqlite"]


class Database(Protocol):
    """What the approval store needs from a database; rows are plain dicts.

    Every method raises ``StoreUnavailableError`` when the database cannot be reached
    or refuses the statement (driver errors never leak past the driver).
    """

    dialect: Dialect

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        """Run ``sql`` and return its first row, or ``None``."""
        ...

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        """Run ``sql`` and return every row."""
        ...

    async def execute(self, sql: str, params: Params | None = None) -> int:
        """Run ``sql``; return the number of rows it changed."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Statements]:
        """Run several statements atomically: all are committed when the block ends, none
        if it raises (e.g. a state change and its audit event)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class Statements(Protocol):
    """The queries of one transaction (``Database.transaction``)."""

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        """As ``Database.fetch_one``, inside the transaction."""
        ...

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        """As ``Database.fetch_all``, inside the transaction."""
        ...

    async def execute(self, sql: str, params: Params | None = None) -> int:
        """As ``Database.execute``, inside the transaction."""
        ...


class Queries(ABC):
    """The three queries, written once over one abstract ``_run`` (a driver's statement,
    or a statement inside one of its transactions)."""

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        """See ``Database.fetch_one``."""
        rows, _ = await self._run(sql, params)
        return rows[0] if rows else None

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        """See ``Database.fetch_all``."""
        rows, _ = await self._run(sql, params)
        return rows

    async def execute(self, sql: str, params: Params | None = None) -> int:
        """See ``Database.execute``."""
        _, changed = await self._run(sql, params)
        return changed

    @abstractmethod
    async def _run(self, sql: str, params: Params | None) -> tuple[list[Row], int]:
        """Run one statement; return ``(rows, rows changed)``."""


class StatementRunner(Queries):
    """The ``Database`` port over ``Queries``.

    A driver implements ``_run`` (one statement in its own transaction, driver errors
    translated to ``StoreUnavailableError`` / ``StoreRejectedError``), ``transaction``
    and ``close``.
    """

    dialect: Dialect

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[Statements]:
        """See ``Database.transaction``."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""


def sqlite_path(url: str) -> str:
    """Return the file path of a ``sqlite:///path`` URL (``sqlite:///:memory:`` allowed).

    Raises:
        ConfigurationError: If ``url`` is not a ``sqlite:///`` URL.
    """
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ConfigurationError(f"DATABASE_URL={url!r}: expected sqlite:///path/to/file.db")
    return url[len(prefix) :]


def dialect_of(url: str) -> Dialect:
    """Return which driver serves ``url``.

    Raises:
        ConfigurationError: If the scheme is neither ``postgresql``/``postgres`` nor
            ``sqlite``, or a PostgreSQL URL is read other than it was meant
            (``_refuse_unescaped``).
    """
    if url.startswith(("postgresql://", "postgres://")):
        _refuse_unescaped(url)
        return "postgres"
    if url.startswith("sqlite:"):
        return "sqlite"
    scheme = urlsplit(url).scheme
    said = f"its scheme is {scheme!r}" if scheme else "it is not a URL"
    # The URL itself is never shown: a password can hide in many places of it.
    raise ConfigurationError(
        f"DATABASE_URL cannot be used ({said}): use postgresql://user@host:port/db "
        "or sqlite:///path.db"
    )


_PORTS = re.compile(r"\d*(,\d*)*")
"""libpq's ``port``: a number, or one per host, any of them left empty for the default."""
_AUTHORITY_END = re.compile(r"[/?]")
"""What ends a URL's authority as libpq reads it (RFC 3986, section 3.2, but for ``#``,
which libpq takes as part of the password)."""


def _refuse_unescaped(url: str) -> None:
    """Refuse a PostgreSQL URL that libpq reads other than it was meant, or not at all: a
    character a URL reserves (``@``, ``:``, ``/``), left unescaped in the password,
    moves part of the password into the host, the port or the database's name, where
    error messages, psycopg's logs and the signal channel's name
    (``redis_bus.signal_channel``) would show it; one libpq cannot read (a space) has
    its connection errors quote the password. So the URL as written (escapes not yet
    decoded: ``%40`` is a user's or a database's ``@``, as in a Cloud SQL IAM user) may
    hold one ``@`` only, the one ending the user and password, before any ``/`` or
    ``?``. The URL is never shown (RFC 3986, section 3.2.1: userinfo is percent-encoded).

    Raises:
        ConfigurationError: Saying what to escape, without any part of the URL.
    """
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        parts = None
    hosts = str((parts or {}).get("host") or "").split(",")
    after_scheme = url.partition("://")[2]
    authority = _AUTHORITY_END.split(after_scheme, maxsplit=1)[0]
    misread = (
        parts is None
        or after_scheme.count("@") != authority.count("@")
        or authority.count("@") > 1
        or any("/" in h and not h.startswith("/") for h in hosts)
        or not _PORTS.fullmatch(str(parts.get("port") or ""))
    )
    if misread:
        said = (
            "libpq cannot read it as a URL"
            if parts is None
            else "read as a URL, part of it lands in its host, port or database name"
        )
        raise ConfigurationError(
            f"DATABASE_URL cannot be used (it is not shown): {said}, as when a password "
            "holds a space, @, :, / or ? unescaped; percent-encode them in the user and "
            "password (a space as %20, @ as %40, : as %3A, / as %2F, ? as %3F, and % "
            "itself as %25), and an @ in the database's name or a parameter as %40"
        )
