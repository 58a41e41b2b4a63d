"""Which of PostgreSQL's failures are outages: the connection's or the server's, gone
or unable to take a statement now, so that the same statement may succeed later
without a change; every other failure is the statement's own, and fails again.

Read by the checkpointer (``agent_bridge.postgres_checkpointer``: an outage sends the
run back to the queue) and the store (``agent_bridge.postgres_db``: an outage is
``StoreUnavailableError``, any other failure ``StoreRejectedError``).
"""

from __future__ import annotations

import psycopg

_NOT_NOW_CLASSES = ("08", "53", "58")
"""SQLSTATE classes of a connection lost or refused (08), a server out of resources:
connections, disk, memory (53), and of the system below it: I/O (58) (PostgreSQL's
Appendix A, "PostgreSQL Error Codes")."""

_NOT_NOW = frozenset(
    {
        "57P01",  # admin_shutdown: the session was ended (pg_terminate_backend, a stop)
        "57P02",  # crash_shutdown
        "57P03",  # cannot_connect_now: the server is starting or in recovery
        "57P05",  # idle_session_timeout
        "57014",  # query_canceled: a statement_timeout behind a lock, pg_cancel_backend
        "55P03",  # lock_not_available: a lock_timeout (behind VACUUM FULL, an ALTER)
        "25P03",  # idle_in_transaction_session_timeout: the session was ended
        "25P04",  # transaction_timeout (PostgreSQL 17)
        "25006",  # read_only_sql_transaction: a standby, or a primary just demoted
        "40001",  # serialization_failure: retry it ("Serialization Failure Handling")
        "40P01",  # deadlock_detected: the same
    }
)
"""SQLSTATEs of a server that cannot take the statement now but may later (Appendix A)."""


def is_outage(exc: BaseException) -> bool:
    """Whether psycopg's ``exc`` is the connection's or the server's, not the statement's.

    True for ``InterfaceError`` (the connection is closed), an ``OperationalError``
    without a SQLSTATE (libpq lost or could not make the connection;
    ``psycopg_pool.PoolTimeout`` and ``PoolClosed`` among them), and the SQLSTATEs
    above; False for everything else. A statement cancelled by a timeout counts as an
    outage though a setting may cancel it every time: the worker's retries of a
    checkpoint are bounded (``worker.CHECKPOINT_RETRIES``), and the store reads it as
    too slow first (``StoreTooSlowError``).

    Args:
        exc: Any exception.

    Returns:
        Whether retrying the same statement later may succeed without a change.
    """
    if isinstance(exc, psycopg.InterfaceError):
        return True
    if not isinstance(exc, psycopg.Error):
        return False
    sqlstate = exc.sqlstate
    if sqlstate is None:
        return isinstance(exc, psycopg.OperationalError)
    return sqlstate.startswith(_NOT_NOW_CLASSES) or sqlstate in _NOT_NOW
