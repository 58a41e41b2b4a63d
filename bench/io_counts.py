"""What a process sent to Slack and PostgreSQL, read from its own ``/metrics``.

The worker and the web process count every Slack Web API call
(``agent_bridge_slack_api_calls_total``, by method) and every round trip of the approval
store (``agent_bridge_database_round_trips_total``); the benchmark reads both before and
after a worker applies a batch of decisions, or the web process answers a round of
Approve clicks, and divides by the items: what one costs in I/O, beside its CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics_http import METRICS_PATH

SLACK_CALLS = "agent_bridge_slack_api_calls_total"
ROUND_TRIPS = "agent_bridge_database_round_trips_total"


@dataclass
class IoCounts:
    """Slack calls by method and the store's database round trips, so far or per item."""

    slack_calls: dict[str, float] = field(default_factory=dict)
    round_trips: float = 0.0

    @property
    def slack_total(self) -> float:
        """Slack calls of every method."""
        return float(sum(self.slack_calls.values()))

    def per_item(self, later: IoCounts, count: int) -> IoCounts:
        """What was done between this reading and ``later``, divided by ``count`` items."""
        calls = {
            method: (n - self.slack_calls.get(method, 0.0)) / count
            for method, n in later.slack_calls.items()
            if n != self.slack_calls.get(method, 0.0)
        }
        return IoCounts(calls, (later.round_trips - self.round_trips) / count)

    def described(self) -> str:
        """The counts for the table: ``4.0 Slack calls (2.0 chat.postMessage, 2.0
        chat.update); 19.1 store round trips``."""
        methods = ", ".join(f"{n:.1f} {m}" for m, n in sorted(self.slack_calls.items()))
        return (
            f"{self.slack_total:.1f} Slack calls ({methods}); "
            f"{self.round_trips:.1f} store round trips"
        )

    def plus(self, other: IoCounts) -> IoCounts:
        """Both counts added up."""
        calls = dict(self.slack_calls)
        for method, n in other.slack_calls.items():
            calls[method] = calls.get(method, 0.0) + n
        return IoCounts(calls, self.round_trips + other.round_trips)


async def io_counts(port: int) -> IoCounts:
    """Read the counts of the process serving ``/metrics`` on 127.0.0.1:``port``.

    Raises:
        aiohttp.ClientError: If it does not answer.
    """
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{METRICS_PATH}") as reply,
    ):
        reply.raise_for_status()
        text = await reply.text()
    counts = IoCounts()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == SLACK_CALLS:
                method = sample.labels["method"]
                counts.slack_calls[method] = counts.slack_calls.get(method, 0.0) + sample.value
            elif sample.name == ROUND_TRIPS:
                counts.round_trips += sample.value
    return counts
