"""What became of a decided call, as its card and its pointer in the run's Slack thread
show it: what an edit changed, and how the call went once it ran (pure)."""

from __future__ import annotations

from agent_bridge import wording
from agent_bridge.models import ApprovalRequest, CallResult, Decision
from bot.arg_diff import arg_changes, render_changes
from bot.mrkdwn import code_block, inline_code

CHANGES_MAX_CHARS = 2000
"""Characters of an edit's changes on a card or a pointer."""
RESULT_SHOWN_MAX_CHARS = 300
"""Characters of a call's output its card shows once it ran (the run's thread has more)."""
RUN_ID_MAX_CHARS = 60


def changes_text(request: ApprovalRequest, edit: Decision) -> tuple[str, bool]:
    """What ``edit`` changed in the proposed call, per argument (``bot.arg_diff``).

    Returns:
        ``(mrkdwn, cut)``, at most about ``CHANGES_MAX_CHARS``.
    """
    return render_changes(arg_changes(request.args, edit.edited_args or {}), CHANGES_MAX_CHARS)


def ran_result(request: ApprovalRequest) -> CallResult | None:
    """The result of the call if it ran: approved or edited (a rejected or answered call's
    ``ToolMessage`` is the middleware's note to the model, not the tool's result)."""
    decision = request.decision
    if request.result is None or decision is None or decision.type not in ("approve", "edit"):
        return None
    return request.result


def result_text(result: CallResult, run_id: str) -> str:
    """How the call went once it ran: succeeded, with the start of its output in a code
    block, or failed, in one sentence naming the run (the error itself is only in the
    worker's log: it can hold server paths and internals)."""
    if not result.ok:
        return wording.call_failed_text(inline_code(run_id, RUN_ID_MAX_CHARS))
    if not result.text.strip():
        return wording.CALL_SUCCEEDED
    body, _ = code_block(result.text, RESULT_SHOWN_MAX_CHARS)
    return f"{wording.CALL_SUCCEEDED}\n{body}"
