"""``python -m bench``: run every benchmark and print the table (see ``docs/benchmarks.md``).

Options size the run (``--paused 100000 --clicks 200``...); ``--markdown PATH`` also
writes the table as Markdown. Needs PostgreSQL and Redis as the tests do
(``DATABASE_URL``, ``REDIS_URL``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agent_bridge import heap
from bench import latency, paused, prepared, rendering, reviewers, throughput
from bench.agent import task
from bench.cpu import CpuUse
from bench.errors import BenchError
from bench.profiling import py_spy
from bench.report import NONE, TIMES, Report, ms, ratio
from bench.stage import running, stage
from bench.stats import percentile
from bench.throughput import Round, Scaling
from bench.web_process import web_process
from bench.workers import workers
from tests.harness import Harness

Figure = Callable[[Round], float]
"""One figure of a round of rates (``bench.throughput.Round``)."""


def options(argv: list[str]) -> argparse.Namespace:
    """The command line's options."""
    parser = argparse.ArgumentParser(prog="./scripts/bench", description=__doc__)
    parser.add_argument("--paused", type=int, default=100_000, help="paused runs added")
    parser.add_argument("--clicks", type=int, default=100, help="clicks with 1 paused run")
    parser.add_argument(
        "--clicks-paused", type=int, default=30, help="clicks among the added paused runs"
    )
    parser.add_argument("--sweeps", type=int, default=10, help="sweeps timed (median)")
    parser.add_argument("--reviewers", type=int, default=50, help="reviewers clicking at once")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="rounds of concurrent clicks (4: each ack p99 is of 200 clicks; of 100 it "
        "moved by half between runs)",
    )
    parser.add_argument("--decisions", type=int, default=200, help="decisions per rate")
    parser.add_argument(
        "--rate-rounds",
        type=int,
        default=3,
        help="rounds of every rate, interleaved (each figure is their median; one round "
        "alone moved the 2nd-worker gain from 0.15x to 1.02x the bare one between runs)",
    )
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument(
        "--profile",
        type=Path,
        help="sample the worker with py-spy while it applies decisions (1 worker), and the "
        "web process while it answers the first round of Approve clicks, into this "
        "directory (speedscope files; the figures of a sampled run are not comparable)",
    )
    return parser.parse_args(argv)


def p50_p99(values: list[float]) -> str:
    return f"{ms(percentile(values, 50))} / {ms(percentile(values, 99))}"


def both_ratios(product: list[float], baseline: list[float]) -> str:
    return (
        f"{ratio(percentile(product, 50), percentile(baseline, 50))} / "
        f"{ratio(percentile(product, 99), percentile(baseline, 99))}"
    )


def paired_ratio(scaling: Scaling, product: Figure, baseline: Figure) -> str:
    """The median over the rounds of ``product / baseline``, each taken within one round,
    and their range, as shown (``0.41x (0.39-0.44)``); none when a baseline is not above
    0 in every round (a 2nd process that gained nothing)."""
    if any(baseline(r) <= 0 for r in scaling.rounds):
        return NONE
    ratios = [product(r) / baseline(r) for r in scaling.rounds]
    return f"{statistics.median(ratios):.2f}{TIMES} ({min(ratios):.2f}-{max(ratios):.2f})"


def violations(harness: Harness, phase: str) -> str:
    """What the sandbox saw the product do wrong in ``phase`` (late acks, invalid Block
    Kit...): a figure measured while the product broke Slack's rules is not a figure."""
    found = harness.sandbox.violations
    first = f" (first: {found[0]})" if found else ""
    return f"sandbox violations, {phase}: {len(found)}{first}"


def peak_memory_kb(pid: int) -> int:
    """The peak resident memory of process ``pid`` so far, KiB (Linux ``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise BenchError(f"no VmHWM for process {pid}")


def step(what: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def add_floor(
    report: Report, floor: str, clicked: float, hop: float, part: str, part_s: float
) -> None:
    """The row of click → tool p50 (``clicked``, s) beside a floor: the bare Bolt hop
    (``hop``, s) plus ``part`` → tool (``part_s``, s)."""
    report.add(
        f"click → gated tool starts, p50, vs {floor} (1 paused run)",
        ms(clicked),
        f"bare Bolt app, click → listener {ms(hop)} + {part} → tool {ms(part_s)} "
        f"= {ms(hop + part_s)}",
        ratio(clicked, hop + part_s),
    )


async def clicks_and_cards(report: Report, args: argparse.Namespace) -> None:
    """Latency, sweeps, concurrent reviewers and card drawings, on one database."""
    async with stage() as on:
        harness = on.harness(workers=0, users=reviewers.reviewers(args.reviewers))
        async with running(harness), web_process(harness) as web, workers(harness, 1) as started:
            worker_pid = started.processes[0].pid
            step(f"bare resumes and clicks, 1 paused run (x{args.clicks})")
            template = await harness.start_run(task("paused-template"))
            (request,) = await harness.requests(template, count=1)
            baselines = await latency.bare_times(on, args.clicks)
            bare, drives = baselines.resume, baselines.drive
            timed = await latency.product_clicks(harness, on.workspace, args.clicks)
            clicks = timed.tool
            listener = await latency.bare_listener_times(harness, request, args.clicks)
            report.add(
                "click → gated tool starts, p50 / p99 (1 paused run)",
                p50_p99(clicks),
                f"bare `Command(resume)` → tool: {p50_p99(bare)}",
                both_ratios(clicks, bare),
                target=f"≤ 1.5{TIMES} / ≤ 2{TIMES}",
            )
            hop, resume = percentile(listener, 50), percentile(bare, 50)
            clicked = percentile(clicks, 50)
            add_floor(report, "its floor", clicked, hop, "bare resume", resume)
            drive = percentile(drives, 50)
            report.add(
                "floor: a bare drive → tool, p50 (a claim, the checkpoint read, a resume "
                'with `durability="sync"`: invariant 3\'s steps, bare)',
                ms(drive),
                f"bare `Command(resume)` → tool: {ms(resume)}",
                ratio(drive, resume),
            )
            add_floor(report, "the floor with invariant 3", clicked, hop, "bare drive", drive)
            to_record = percentile(timed.recorded, 50)
            report.add(
                "of which: click → decision recorded (web), p50",
                ms(to_record),
                f"bare Bolt app, click → listener: {ms(hop)}",
                ratio(to_record, hop),
            )
            after = [t - r for t, r in zip(timed.tool, timed.recorded, strict=True)]
            report.add(
                "of which: decision recorded → gated tool starts (worker), p50",
                ms(percentile(after, 50)),
                f"bare `Command(resume)` → tool: {ms(resume)}",
                ratio(percentile(after, 50), resume),
            )
            step("sweeps, 1 paused run")
            sweeps_one = await paused.sweep_times(on, harness, args.sweeps)
            step("cards drawn")
            for name, drawn in rendering.measure(request, template).items():
                report.drawings.append(
                    (name, ms(drawn.seconds), f"{drawn.characters:,}", str(drawn.blocks))
                )
            step(f"{args.reviewers} reviewers at once (x{args.rounds})")
            crowd = await reviewers.measure(harness, args.reviewers, args.rounds, web, args.profile)
            report.notes.append(
                f"Reject clicks that opened their modal: {crowd.modals_opened} "
                f"of {len(crowd.ack['reject'])}"
            )
            bare_ack = percentile(crowd.ack["bare"], 99)
            acks = {kind: percentile(crowd.ack[kind], 99) for kind in ("reject", "approve")}
            for kind, ack in acks.items():
                report.add(
                    f"ack p99, {kind.capitalize()} click, {args.reviewers} concurrent reviewers",
                    ms(ack),
                    f"bare Bolt app, same server stack: {ms(bare_ack)}",
                    ratio(ack, bare_ack),
                    target=f"≤ 1.3{TIMES}",
                )
            first_ack = percentile(crowd.ack["bare_first"], 99)
            reject_ack, approve_ack = acks["reject"], acks["approve"]
            report.add(
                f"ack p99, Reject / Approve click, {args.reviewers} concurrent reviewers, vs "
                "a bare app acking as the product does",
                f"{ms(reject_ack)} / {ms(approve_ack)}",
                f"bare Bolt app acking before its listener starts (`ack_first`): {ms(first_ack)}",
                f"{ratio(reject_ack, first_ack)} / {ratio(approve_ack, first_ack)}",
            )
            report.add(
                f"Approve click → card redrawn, {args.reviewers} concurrent reviewers, p50",
                ms(percentile(crowd.redraw, 50)),
                "bare Bolt app, the same concurrent clicks → its listener starts: "
                f"{ms(percentile(crowd.bare_listener, 50))}",
                ratio(percentile(crowd.redraw, 50), percentile(crowd.bare_listener, 50)),
                target="≤ 50 ms",
            )
            report.add(
                f"I/O per Approve click (web, read from its /metrics), {args.reviewers} "
                "concurrent reviewers",
                crowd.approve_io.described(),
            )
            slack_calls, round_trips = crowd.bare_io
            report.add(
                f"Approve click → card redrawn, {args.reviewers} concurrent reviewers, p50, vs "
                "the same I/O done bare",
                ms(percentile(crowd.redraw, 50)),
                f"bare Bolt app acking first, then {round_trips} `SELECT 1` and "
                f"{slack_calls} `chat.update` of the card per click: "
                f"{ms(percentile(crowd.bare_redraw, 50))}",
                ratio(percentile(crowd.redraw, 50), percentile(crowd.bare_redraw, 50)),
            )
            least_calls, least_trips = reviewers.LEAST_APPROVE_IO
            report.add(
                f"floor: Approve click → card redrawn, {args.reviewers} concurrent reviewers, "
                f"p50, the least I/O an Approve needs (bare Bolt app acking first, then "
                f"{least_trips} `SELECT 1` (the decision recorded) and {least_calls} "
                "`chat.update` of the card per click)",
                ms(percentile(crowd.least_redraw, 50)),
                "bare Bolt app, the same concurrent clicks → its listener starts: "
                f"{ms(percentile(crowd.bare_listener, 50))}",
                ratio(percentile(crowd.least_redraw, 50), percentile(crowd.bare_listener, 50)),
            )
            redraw_cpu_rows(report, crowd, args.reviewers)
            peak_one = peak_memory_kb(worker_pid)
            step(f"adding {args.paused:,} paused runs")
            await asyncio.to_thread(
                paused.add_paused_runs, on.settings.database_url, template.run_id, args.paused
            )
            step(f"sweeps, {args.paused:,} paused runs")
            sweeps_many = await paused.sweep_times(on, harness, args.sweeps)
            step(f"bare resumes and clicks, {args.paused:,} paused runs (x{args.clicks_paused})")
            bare_many = (await latency.bare_times(on, args.clicks_paused, drives=False)).resume
            clicks_many = (
                await latency.product_clicks(harness, on.workspace, args.clicks_paused)
            ).tool
            await started.swept_again()  # a whole sweep of the worker over them, at least
            peak_many = peak_memory_kb(worker_pid)
    report.notes.append(violations(harness, "clicks, sweeps and reviewers"))
    many = f"{args.paused:,} paused runs"
    report.add(
        f"click → gated tool starts, p50 / p99 ({many})",
        p50_p99(clicks_many),
        f"bare `Command(resume)` → tool: {p50_p99(bare_many)}",
        both_ratios(clicks_many, bare_many),
        target=f"≤ 1.5{TIMES} / ≤ 2{TIMES}",
    )
    report.add(
        f"click → gated tool starts, p50 / p99, {many} vs 1",
        p50_p99(clicks_many),
        f"with 1 paused run: {p50_p99(clicks)}",
        both_ratios(clicks_many, clicks),
        target="does not grow",
    )
    report.add(
        f"worker peak memory (VmHWM), {many}",
        f"{peak_many / 1024:.0f} MiB",
        f"with 1 paused run: {peak_one / 1024:.0f} MiB",
        ratio(peak_many, peak_one),
        target="independent of paused runs",
    )
    sweep_many, sweep_one = percentile(sweeps_many, 50), percentile(sweeps_one, 50)
    report.add(
        f"one sweep (median), {many}",
        ms(sweep_many),
        f"with 1 paused run: {ms(sweep_one)}",
        ratio(sweep_many, sweep_one),
        target="≤ 10 ms",
    )


async def rates(report: Report, args: argparse.Namespace) -> None:
    """Worker throughput and CPU, on a fresh database, in ``args.rate_rounds`` rounds."""
    async with stage() as on:
        async with running(on.harness(workers=0)) as harness, web_process(harness):
            step(
                f"decisions applied by 1 and 2 worker processes ({args.decisions} each, "
                f"x{args.rate_rounds})"
            )
            scaling = await throughput.measure(
                on, harness, args.decisions, args.rate_rounds, args.profile
            )
    report.notes.append(violations(harness, "worker rates"))
    rate_rows(report, scaling)


def rate_rows(report: Report, scaling: Scaling) -> None:
    """The throughput and CPU rows: medians over ``scaling``'s rounds."""
    median = scaling.median

    def per_s(rates: str, n: int) -> Figure:
        return lambda r: getattr(r, rates)[n].per_s

    def gain(rates: str) -> Figure:
        return lambda r: throughput.second_process_gain(getattr(r, rates))

    def machine(rates: str, n: int) -> Figure:
        return lambda r: getattr(r, rates)[n].machine_cpu_per_item_s

    def cpu(rates: str) -> Figure:
        return lambda r: getattr(r, rates)[1].cpu_per_item_s

    def cores_busy(rates: str, n: int) -> Figure:
        return lambda r: getattr(r, rates)[n].cores_busy

    def sandbox_cpu(n: int) -> Figure:
        return lambda r: r.product[n].sandbox_cpu_s / r.product[n].count

    for n in (1, 2):
        report.add(
            f"decisions applied / s, {n} worker{'s' if n > 1 else ''}",
            f"{median(per_s('product', n)):.1f}",
            f"bare resumes / s, {n} process{'es' if n > 1 else ''}: {median(per_s('bare', n)):.1f}",
            paired_ratio(scaling, per_s("product", n), per_s("bare", n)),
            target=f"≥ 0.8{TIMES}" if n == 1 else NONE,
        )
    report.add(
        "gain from a 2nd worker",
        f"{median(gain('product')):+.0%}",
        f"bare, from a 2nd process: {median(gain('bare')):+.0%}",
        paired_ratio(scaling, gain("product"), gain("bare")),
        target=f"≥ 0.90{TIMES}",
    )
    cores = os.cpu_count() or 1
    busy = [median(cores_busy("product", n)) for n in (1, 2)]
    bare_busy = [median(cores_busy("bare", n)) for n in (1, 2)]
    report.add(
        f"cores busy while decisions are applied, 1 / 2 workers (of {cores}: every process, "
        "the sandbox Slack, PostgreSQL and Redis too)",
        f"{busy[0]:.2f} / {busy[1]:.2f}",
        f"bare, 1 / 2 processes: {bare_busy[0]:.2f} / {bare_busy[1]:.2f}",
    )
    report.add(
        "machine CPU per decision, 1 / 2 workers (every process)",
        f"{ms(median(machine('product', 1)))} / {ms(median(machine('product', 2)))}",
        f"per bare resume, 1 / 2 processes: {ms(median(machine('bare', 1)))} / "
        f"{ms(median(machine('bare', 2)))}",
        paired_ratio(scaling, machine("product", 1), machine("bare", 1)),
    )
    sandbox = [median(sandbox_cpu(n)) for n in (1, 2)]
    report.add(
        "of which the sandbox Slack's (Slack's own work, elsewhere in production), 1 / 2 workers",
        f"{ms(sandbox[0])} / {ms(sandbox[1])}",
    )

    def ceiling(r: Round) -> float:
        return cores / machine("product", 2)(r) / r.product[1].per_s - 1

    def asked(r: Round) -> float:
        return 0.9 * gain("bare")(r)

    report.add(
        "gain a 2nd worker can add at most on this machine (every core busy at the machine "
        "CPU per decision of 2 workers, over 1 worker's rate)",
        f"{median(ceiling):+.0%}",
        f"the gain the target asks: 0.90 {TIMES} the bare gain = {median(asked):+.0%}",
        paired_ratio(scaling, ceiling, asked),
    )

    def least_ceiling(r: Round) -> float:
        return cores / machine("least", 2)(r) / r.least[1].per_s - 1

    least_busy = [median(cores_busy("least", n)) for n in (1, 2)]
    report.add(
        f"floor: cores busy, the least I/O this design needs, 1 / 2 processes (of {cores})",
        f"{least_busy[0]:.2f} / {least_busy[1]:.2f}",
        f"bare, 1 / 2 processes: {bare_busy[0]:.2f} / {bare_busy[1]:.2f}",
    )
    report.add(
        "floor: gain a 2nd process can add at most on this machine, the least I/O this "
        "design needs (every core busy at its machine CPU per decision with 2 processes, "
        "over its rate with 1)",
        f"{median(least_ceiling):+.0%}",
        f"the gain the target asks: 0.90 {TIMES} the bare gain = {median(asked):+.0%}",
        paired_ratio(scaling, least_ceiling, asked),
    )
    report.add(
        "worker CPU per decision (1 worker)",
        ms(median(cpu("product"))),
        f"per bare resume: {ms(median(cpu('bare')))}",
        paired_ratio(scaling, cpu("product"), cpu("bare")),
        target=f"≤ 1.3{TIMES}",
    )
    io, floor_io = scaling.rounds[0].product[1].io, scaling.floor_io
    if io is None or floor_io is None:
        return
    report.add("I/O per decision (1 worker, read from its /metrics)", io.described())
    bare_io = (
        'bare checkpoint read + resume with `durability="sync"` + '
        f"{floor_io.slack_calls} `chat.postMessage` + "
        f"{floor_io.round_trips} `SELECT 1`"
    )
    report.add(
        "worker CPU per decision vs the same I/O done bare (1 worker)",
        ms(median(cpu("product"))),
        f"{bare_io}: {ms(median(cpu('floor')))}",
        paired_ratio(scaling, cpu("product"), cpu("floor")),
    )
    report.add(
        "decisions applied / s vs the same I/O done bare (1 worker)",
        f"{median(per_s('product', 1)):.1f}",
        f"{bare_io}, 1 process: {median(per_s('floor', 1)):.1f}",
        paired_ratio(scaling, per_s("product", 1), per_s("floor", 1)),
    )
    report.add(
        "gain from a 2nd worker vs the same I/O done bare",
        f"{median(gain('product')):+.0%}",
        f"{bare_io}, from a 2nd process: {median(gain('floor')):+.0%}",
        paired_ratio(scaling, gain("product"), gain("floor")),
    )
    least_io = (
        'bare checkpoint read + resume with `durability="sync"` + '
        f"{throughput.LEAST_SLACK_CALLS} `chat.postMessage` (the card's outcome, the answer) + "
        f"{throughput.LEAST_ROUND_TRIPS} `SELECT 1` (the claim, the release)"
    )
    report.add(
        f"floor: CPU per decision, the least I/O this design needs ({least_io})",
        ms(median(cpu("least"))),
        f"per bare resume: {ms(median(cpu('bare')))}",
        paired_ratio(scaling, cpu("least"), cpu("bare")),
    )
    report.add(
        f"floor: decisions / s, 1 process, the least I/O this design needs ({least_io})",
        f"{median(per_s('least', 1)):.1f}",
        f"bare resumes / s, 1 process: {median(per_s('bare', 1)):.1f}",
        paired_ratio(scaling, per_s("least", 1), per_s("bare", 1)),
    )
    report.add(
        f"floor: gain from a 2nd process, the least I/O this design needs ({least_io})",
        f"{median(gain('least')):+.0%}",
        f"bare, from a 2nd process: {median(gain('bare')):+.0%}",
        paired_ratio(scaling, gain("least"), gain("bare")),
    )


def redraw_cpu_rows(report: Report, crowd: reviewers.Clicks, count: int) -> None:
    """The CPU spent while the product's and the least's concurrent Approve clicks were
    answered and their cards updated, and the soonest half of them could be at that CPU
    on this machine's cores."""
    cores = os.cpu_count() or 1
    product, least = crowd.redraw_cpu, crowd.least_cpu
    half = f"{least.half_a_round:.0f}"

    def split(use: CpuUse, app: str) -> str:
        return (
            f"{ms(use.per_click(use.machine_s))} (the benchmark's process's "
            f"{ms(use.per_click(use.bench_process_s))}, {app} {ms(use.per_click(use.app_s))})"
        )

    report.add(
        f"machine CPU per Approve click while {count} concurrent reviewers' cards are "
        "redrawn, every process (of which the benchmark's process's: the sandbox Slack and "
        "the watching; the app's)",
        split(product, "the web process's"),
        "the least I/O an Approve needs, bare: " + split(least, "the bare app's"),
        ratio(product.per_click(product.machine_s), least.per_click(least.machine_s)),
    )
    report.add(
        f"cores busy while {count} concurrent reviewers' cards are redrawn (of {cores}; "
        "the product's worker applies the first decisions meanwhile)",
        f"{product.cores_busy:.2f}",
        f"the least I/O an Approve needs, bare: {least.cores_busy:.2f}",
    )
    report.add(
        f"Approve click → card redrawn, p50, the soonest on {cores} cores at that machine "
        f"CPU per click ({half} clicks' CPU over {cores} cores, every core busy from the "
        "first click; an estimate: see docs/benchmarks.md)",
        ms(product.soonest_half_s(cores)),
        f"the least I/O an Approve needs, bare: {ms(least.soonest_half_s(cores))}",
    )
    report.add(
        "Approve click → card redrawn, p50, the soonest the app's one process could do "
        f"it at its CPU per click ({half} clicks' CPU on one core; an estimate)",
        ms(product.soonest_half_by_app_s()),
        f"the bare app doing the least I/O an Approve needs: {ms(least.soonest_half_by_app_s())}",
    )


async def checkpoint_costs(report: Report) -> None:
    """PostgreSQL's CPU per checkpoint read and per resume, prepared or not, on a fresh
    database with nothing else of the benchmark running."""
    async with stage() as on:
        step(
            f"checkpoint reads and resumes, the saver's statements prepared or not "
            f"({prepared.THREADS} threads, x{prepared.ROUNDS})"
        )
        costs = await prepared.measure(on)
    on_, off = costs[True], costs[False]
    for what, server, client in (
        ("checkpoint read (`aget_state`)", "read_server", "read_client"),
        ('resume to the run\'s end (`durability="sync"`)', "resume_server", "resume_client"),
    ):
        with_ = statistics.median(getattr(on_, server))
        without = statistics.median(getattr(off, server))
        report.add(
            f"PostgreSQL CPU per {what}, the saver's statements prepared "
            f"(`DATABASE_PREPARED_STATEMENTS=true`); the caller's CPU in brackets",
            f"{ms(with_)} ({ms(statistics.median(getattr(on_, client)))})",
            f"nothing prepared (the default): {ms(without)} "
            f"({ms(statistics.median(getattr(off, client)))})",
            ratio(with_, without),
        )


async def main(argv: list[str]) -> None:
    args = options(argv)
    if args.profile:
        py_spy()  # before minutes of work: is it there?
    logging.basicConfig(level=logging.WARNING)
    # The sandbox Slack runs here: a 100 ms full collection over the imported modules
    # would land in some figure (each measure also calls stats.settle_heap).
    heap.freeze_startup_objects()
    report = Report(
        parameters=" ".join(
            f"--{k.replace('_', '-')} {v}"
            for k, v in vars(args).items()
            if k not in ("markdown", "profile")
        )
    )
    await clicks_and_cards(report, args)
    await rates(report, args)
    await checkpoint_costs(report)
    report.load_after = os.getloadavg()
    print(report.text())
    if args.markdown:
        args.markdown.write_text(report.markdown())
        step(f"table written to {args.markdown}")


if __name__ == "__main__":
    try:
        # asyncio's own loop, as before the product's processes moved to uvloop: this
        # process is the sandbox Slack, and its loop shapes how fifty concurrent clicks
        # arrive (the Reject ack p99 moved from 1.0-1.3x to 1.5-1.7x the bare app's with
        # the sandbox alone on uvloop). The baselines run in processes of their own on
        # the product's loop (bench.bare_latency, bench.bare_bolt, bench.bare_resumer).
        asyncio.run(main(sys.argv[1:]))
    except BenchError as exc:
        sys.exit(str(exc))
