"""A stored plan in the words of whoever reads it. Pure Python.

The engine writes each sentence of an explanation, and a rejection's nearest alternative, as
a `Note` with an operator's and a tenant's words: the operator's may name switches,
enclosures and other hosts, fabric internals a tenant does not see (README). A plan is stored
as JSON (`composer.services.compositions.placement_as_dict`): a sentence both audiences read
alike as a string, one with two renderings as `{"operator": ..., "tenant": ...}`.
`plan_for(plan, operator=...)` turns a stored plan back into plain sentences for one
audience; every page, API answer and message that shows a plan goes through it.

The funnel counts candidates before and after each constraint. A step that counts hosts
(its name starts with "hosts:", as the engine names them) counts the whole fabric's hosts,
which are the operators' to know: a tenant reads such a step without its counts, only
whether any host was left after it (`[name, None, None]`, or `[name, None, 0]` for the step
that left none). Steps that count devices keep their counts: pool availability is a
tenant's to see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from composer.placement.request import Note

__all__ = ["HOST_STEP", "note_as_json", "note_text", "plan_for"]

HOST_STEP = "hosts:"  # how the engine begins the name of a funnel step that counts hosts

# The parts of a stored plan that hold sentences.
_SENTENCES = ("explanation",)
_SENTENCE = ("nearest",)


def note_as_json(note: Note) -> str | dict[str, str]:
    """How a Note is stored: a string when both audiences read the same words."""
    if note.tenant is None or note.tenant == note.operator:
        return note.operator
    return {"operator": note.operator, "tenant": note.tenant}


def note_text(value: Any, *, operator: bool) -> str:
    """A stored sentence (a string, or the two renderings) for an operator or a tenant."""
    if isinstance(value, Mapping):
        key = "operator" if operator else "tenant"
        return str(value.get(key) or "")
    return "" if value is None else str(value)


def plan_for(plan: Mapping[str, Any] | None, *, operator: bool) -> dict[str, Any]:
    """`plan` (as stored) with its sentences in the audience's words; {} for no plan."""
    if not plan:
        return {}
    out = dict(plan)
    for key in _SENTENCES:
        if key in out:
            texts = (note_text(v, operator=operator) for v in out[key] or ())
            out[key] = [text for text in texts if text]
    for key in _SENTENCE:
        if key in out:
            out[key] = note_text(out[key], operator=operator)
    if not operator and "funnel" in out:
        out["funnel"] = [_step_for_tenant(step) for step in out["funnel"] or ()]
    return out


def _step_for_tenant(step: Any) -> Any:
    """A funnel step as a tenant reads it: a host-counting step without the counts."""
    if not (isinstance(step, list | tuple) and step and str(step[0]).startswith(HOST_STEP)):
        return step
    left = step[2] if len(step) > 2 else None
    return [step[0], None, 0 if left == 0 else None]
