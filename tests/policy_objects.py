"""A policy given as a Python object (``POLICY=tests.policy_objects:DBA_POLICY``)."""

from __future__ import annotations

from agent_bridge.policy import Policy, ToolPolicy

DBA_POLICY = Policy(
    requesters=["S0REQ"],
    tools={
        "execute_sql": ToolPolicy(
            allowed_decisions=["approve", "reject"],
            channel="C0APPROVAL",
            approvers=["S0DBA"],
            required_approvals=2,
            escalate_to="S0BACKUP",  # type: ignore[arg-type]  # one ID is accepted as a list
            escalate_after_s=600,
        ),
        "read_data": False,
    },
)
NOT_A_POLICY: dict[str, object] = {"tools": {}}
