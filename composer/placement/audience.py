"""A stored plan in the words of whoever reads it. Pure Python.

The engine writes each sentence of an explanation, and a rejection's nearest alternative, as
a `Note` with an operator's and a tenant's words: the operator's may name switches,
enclosures and other hosts, fabric internals a tenant does not see (README). A plan is stored
as JSON (`composer.services.compositions.placement_as_dict`): a sentence both audiences read
alike as a string, one with two renderings as `{"operator": ..., "tenant": ...}`.
`plan_for(plan, operator=...)` turns a stored plan back into plain sentences for one
audience; every page, API answer and message that shows a plan goes through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from composer.placement.request import Note

__all__ = ["note_as_json", "note_text", "plan_for"]

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
    return out
