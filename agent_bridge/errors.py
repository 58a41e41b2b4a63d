"""Errors of the LangGraph side. Each says what to do next."""

from __future__ import annotations

from agent_bridge.logs import scrub_cut

ERROR_TEXT_MAX_CHARS = 2000
"""Characters of an exception's text kept where a run's failure is recorded (the agent's
own exceptions can carry anything: a whole reply, a gigabyte)."""


def error_text(exc: BaseException) -> str:
    """``"TypeName: message"`` of ``exc``, its secrets masked and cut to
    ``ERROR_TEXT_MAX_CHARS`` (``logs.scrub_cut``), whatever its ``__str__`` does: an
    exception the agent's code raised is read like agent text, and one whose text cannot
    be read is named by its type alone (its ``__str__`` raised, and what it raised must
    not leave here as if the caller had)."""
    try:
        message = str(exc)
    except BaseException:
        message = "(its message could not be read)"
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return scrub_cut(text, ERROR_TEXT_MAX_CHARS)


class BridgeError(Exception):
    """Root of every error ``agent_bridge`` raises on purpose."""


class ConfigurationError(BridgeError):
    """A setting, the policy file or the ``AGENT`` reference is wrong.

    Fix the environment variable or file named in the message and restart the process.
    """


class StoreUnavailableError(BridgeError):
    """The database could not be reached or refused the statement.

    The operation was not recorded; retry it. The worker retries by itself with backoff.
    """


class StoreTooSlowError(StoreUnavailableError):
    """The database did not answer within the deadline (``agent_bridge.deadline``): a
    held lock, a slow statement, no free connection. Nothing was recorded; retry it."""


class CheckpointUnavailableError(StoreUnavailableError):
    """A LangGraph checkpoint's read or write failed for the connection or the server (an
    outage, a failover, a killed session; ``agent_bridge.postgres_checkpointer``), not
    for the statement. The checkpoint is as it was before it; the worker gives the run
    back to the queue and a later drive goes on from there, up to
    ``worker.CHECKPOINT_RETRIES`` drives in a row that did not go through (then the run
    fails).

    Raised only by the checkpointer: a node that raises ``StoreUnavailableError`` itself
    fails its run, as any exception of the graph does (``agent_bridge.run_driver``).
    """

    tools_may_have_run = False
    """Set by the driver when raised while the graph ran (a start's or a resume's
    stream): a retry may run again a tool whose result was not saved, so such a drive
    counts toward ``worker.CHECKPOINT_RETRIES`` (the stream's own first read and write,
    before any tool, count too: the driver cannot tell them apart); one raised by the
    drive's state read, before the graph runs, takes its count back and is retried as
    often as it takes."""


class SchemaOutdatedError(BridgeError):
    """The database's approval-store schema is older than this code.

    Run ``agent-bridge release`` (the Procfile's release step) and start again.
    """


class StoreRejectedError(BridgeError):
    """The database refused a statement for its content (not an outage).

    Retrying the same statement will fail again; the operation is reported as failed.
    """


class AgentServerUnavailableError(BridgeError):
    """LangGraph Agent Server (``AGENT_URL``) could not be reached, failed (a 5xx), or
    refused a run because another run of the ``thread_id`` is in flight (409, the
    ``reject`` multitask strategy).

    Nothing was sent to the graph, or what was sent runs on the server by itself; the
    worker gives the run back and a later sweep drives it again from the server's
    checkpoint (after joining any run in flight). Check the server if it lasts.
    """


class CheckpointLostError(BridgeError):
    """The run's ``thread_id`` has no state any more, though the run paused on it (it
    has approval requests): an in-memory Agent Server (``langgraph dev``) restarted, or
    the thread or its checkpoints were deleted.

    Its decisions cannot be sent and are not marked applied, and the task is not started
    again from the beginning (its tools would run twice): the run is failed. Start a new
    run; keep the server's threads on persistent storage.
    """


class AttachRefusedError(BridgeError):
    """``agent-bridge attach`` refused the ``thread_id``: it is a run's already (one run
    per LangGraph thread: that run posts its cards), or the Agent Server has no such
    thread (check the ID and ``AGENT_URL``). Nothing was recorded."""


class PausedWithoutInterruptError(BridgeError):
    """The graph stopped before its end with no interrupt to show or answer: a static
    breakpoint (``interrupt_before``/``interrupt_after``) of a deployed graph, or of a
    sub-agent run inside a tool, where the worker's start check cannot see it
    (``graph_agent.check_runnable`` refuses a local graph's). The run fails instead of
    ending done with its next nodes (its tools) never run."""


class UndecidableCallError(BridgeError):
    """A gated call no decision can be given for: its review allows only Edit, and the
    batched middleware would not confine an edit to it (``interrupts.TurnCall``); or the
    running middleware would not take the decision made on its card (a deploy stopped
    gating the tool, changed ``interrupt_mode``, or its ``when`` now lets the call
    through: ``interrupts.Placement.decisions_now``). The run fails before the call runs,
    saying so, rather than wait on a card without buttons or run a rejected call."""
