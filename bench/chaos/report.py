"""The section of docs/reliability.md that bench_chaos.py writes: machine and date, the
layout and load, what was done to it, and what the product made of it, against the target
(0 stuck beyond 60 s, 0 orphans, 0 doubles, 0 lost, over at least 50 kills)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.chaos.kills import KILLS, LABELS
from bench.chaos.measure import STUCK_AFTER_S, Recovery
from bench.common import busy_note, markers, percentile

START, END = markers("chaos")
TARGET_KILLS = 50


@dataclass
class Outcome:
    """Everything the report needs, gathered by bench_chaos.measure_run."""

    args: Any
    info: dict[str, str]
    layout: str
    duration_s: float
    recoveries: list[Recovery]
    stuck: dict[int, float]
    orphans: list[str]
    missing: list[str]
    doubles: list[str]
    lost: list[int]
    clients: list[dict[str, Any]]
    load: dict[str, int]
    answers: dict[int, int]
    compositions: int
    healed: int  # compositions that went through a heal
    final_states: dict[str, int]
    refusals: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return sum(1 for r in self.recoveries if r.disruption.kind in KILLS)

    @property
    def touched(self) -> set[int]:
        return {pk for r in self.recoveries for pk in r.touched}

    def verdict(self) -> dict[str, bool]:
        return {
            "kills": self.kills >= TARGET_KILLS,
            "stuck": not self.stuck,
            "orphans": not self.orphans,
            "doubles": not self.doubles,
            "lost": sum(self.lost) == 0,
        }


def _stats(values: list[float]) -> str:
    if not values:
        return "- | - | -"
    return " | ".join(f"{percentile(values, q):.1f}" for q in (0.5, 0.99, 1.0))


def _ok(flag: bool) -> str:
    return "met" if flag else "**missed**"


def render(o: Outcome) -> str:
    info, verdict = o.info, o.verdict()
    settled = [r.seconds for r in o.recoveries if r.seconds is not None and not r.unsettled]
    censored = [r for r in o.recoveries if r.unsettled]
    all_waits = [r.seconds for r in o.recoveries if r.seconds is not None]
    each = [wait for r in o.recoveries for wait in r.settled_s]
    lines = [
        START,
        "## Kills, outages and driver faults under load",
        "",
        (
            f"Measured {info['date']} on {info['arch']} ({info['cpu']}, {info['cores']} "
            f"cores), Python {info['python']}, Django {info['django']}, {info['database']}, "
            f"5-minute load average {info['load']}; the run took {o.duration_s / 60:.1f} min "
            f"(`bench/bench_chaos.py --kills {o.args.kills} --seed {o.args.seed}`). "
            + busy_note(info)
        ).strip(),
        "",
        f"Layout: {o.layout}. Simulated binds take {o.args.bind_ms} ms and unbinds "
        f"{o.args.unbind_ms} ms; bursts of {o.args.burst} composes, about "
        f"{o.args.keep} compositions kept composed, {len(o.clients)} websocket clients.",
        "",
        "| result | measured | target | |",
        "|---|---|---|---|",
        f"| process kills | {o.kills} | at least {TARGET_KILLS} | {_ok(verdict['kills'])} |",
        f"| compositions stuck beyond {STUCK_AFTER_S:.0f} s | {len(o.stuck)} | 0 "
        f"| {_ok(verdict['stuck'])} |",
        f"| orphan bindings after the quiet period | {len(o.orphans)} | 0 "
        f"| {_ok(verdict['orphans'])} |",
        f"| double allocations (sampled during the run and at the end) | {len(o.doubles)} | 0 "
        f"| {_ok(verdict['doubles'])} |",
        f"| events lost to websocket clients | {sum(o.lost)} | 0 | {_ok(verdict['lost'])} |",
        "",
        "| disruption | made | compositions touched | recovery p50 (s) | p99 (s) | max (s) "
        "| still transitional at the end |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, label in LABELS.items():
        rows = [r for r in o.recoveries if r.disruption.kind == kind]
        if not rows:
            continue
        waits = [r.seconds for r in rows if r.seconds is not None]
        touched = len({pk for r in rows for pk in r.touched})
        lines.append(
            f"| {label} | {len(rows)} | {touched} | {_stats(waits)} "
            f"| {len({pk for r in rows for pk in r.unsettled_ids})} |"
        )
    lines.append(
        f"| **all** | {len(o.recoveries)} | {len(o.touched)} | {_stats(all_waits)} "
        f"| {len({pk for r in o.recoveries for pk in r.unsettled_ids})} |"
    )
    lines += [
        "",
        f"Recovery is counted for the {len(all_waits)} disruptions that found compositions "
        "mid-step (the others touched none); "
        f"{len(censored)} of them left compositions that never settled before the end of "
        "the run, and their recovery is counted until the end, a lower bound. Over the "
        f"{len(settled)} whose compositions all settled: p50 / p99 / max "
        f"{_stats(settled).replace(' | ', ' / ')} s. Each touched composition that did "
        f"settle ({len(each)} of {sum(len(r.touched) for r in o.recoveries)} touches) took "
        f"p50 / p99 / max {_stats(each).replace(' | ', ' / ')} s after the disruption.",
        "",
        f"Load: {o.compositions} compositions; {o.load['compose']} composes, "
        f"{o.load['decompose']} decomposes and {o.load['heal']} GPU failures (heal bursts) "
        f"accepted ({o.healed} compositions healed), {o.load['faults']} driver-fault "
        "injections (bind timeouts, transient unbind failures), "
        f"{o.load['refused']} requests refused. Final states: "
        + ", ".join(f"{state} {n}" for state, n in sorted(o.final_states.items()))
        + ". API answers: "
        + ", ".join(f"{status}: {n}" for status, n in sorted(o.answers.items()))
        + ".",
        "",
    ]
    if o.stuck:
        worst = sorted(o.stuck.items(), key=lambda kv: -kv[1])[:8]
        lines.append(
            "Stuck (longest stretch in a transitional state): "
            + ", ".join(f"composition {pk} {s:.0f} s" for pk, s in worst)
            + (f", and {len(o.stuck) - len(worst)} more" if len(o.stuck) > len(worst) else "")
            + "."
        )
    if o.orphans or o.missing:
        lines.append(
            f"The fabric and the database disagree: {len(o.orphans)} bindings no allocation "
            f"records, {len(o.missing)} allocations recorded bound that the fabric lacks."
        )
    if o.doubles:
        lines.append("Double allocations: " + "; ".join(sorted(o.doubles)[:8]) + ".")
    reconnects = sum(int(c["reconnects"]) for c in o.clients)
    resyncs = sum(int(c["resyncs"]) for c in o.clients)
    lines.append(
        f"Websocket clients: {reconnects} reconnects, {resyncs} resyncs; events lost per "
        f"client: {', '.join(str(n) for n in o.lost) or 'no clients'}."
    )
    broken = [e for c in o.clients for e in c.get("protocol_errors", [])]
    if broken:
        lines.append(f"Protocol errors seen by the clients: {'; '.join(broken[:5])}.")
    for note in [*o.refusals[:5], *o.errors[:5]]:
        lines.append(f"- {note}")
    lines.append(END)
    return "\n".join(lines)
