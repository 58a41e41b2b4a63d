"""The words of cards and modals of a ``json_schema`` interrupt (a form to fill in).

Its one decision is an ``edit`` of an empty object (``agent_bridge.interrupt_shapes``),
but the reviewer fills in a form the agent asked for rather than changes a call: these
replace the edit's words there. ``name`` arguments are already escaped inline code.
"""

from __future__ import annotations

FORM_BUTTON = "Fill in"
"""The card's button opening the form (plain text)."""
FORM_CARD_LABEL = ":memo: *The agent asks you to fill in:*"
FORM_DECIDED_LABEL = "*Form, as filled in:*"
FORM_OUTCOME = ("📝", "Answered")
"""``(emoji, verb)`` of a filled-in form, as in "📝 *Answered* by …"."""
FORM_CHANGED_LEAD = "*The answer:*"
FORM_TITLE, FORM_SUBMIT = "Answer the agent", "Send"
"""The form modal's title and submit button (plain, ≤ 24 characters)."""


def form_intro(name: str) -> str:
    """The form modal's first line."""
    return f"{name} asks you to fill in:"
