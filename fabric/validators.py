"""What text a person may give as a name or a note: one rule for every form, API and service.

Names and free text are shown again on pages, in toasts, in terminals (logs, `curl`) and
in other tools' output. A control character there is never meant: an ANSI escape
(`ESC[31m`) recolours or rewrites a terminal, a NUL cannot be stored by PostgreSQL, an
unpaired surrogate cannot be encoded at all, and a bidirectional override makes a name
read differently from what it is. So they are refused where the text comes in, with a
message that says which character and where, rather than stripped without a word.

Names are one line. Free text (a description, a maintenance reason) may also hold line
breaks and tabs.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from django.core.exceptions import ValidationError

# Bidirectional embeddings, overrides and isolates (Unicode's "Trojan source" characters):
# format characters that reorder what is shown.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# What free text may hold beyond a name: line breaks and tabs.
FREE_TEXT_SPACING = frozenset("\n\r\t")


def text_problem(value: str, *, multiline: bool = False) -> str | None:
    """Why `value` may not be stored as a name (or, `multiline`, as free text), or None.

    Refused: control characters (C0, DEL, C1: terminal escapes and NUL among them; line
    breaks and tabs are allowed in free text), unpaired surrogates, and bidirectional
    overrides; line and paragraph separators in names.
    """
    for position, char in enumerate(value, start=1):
        if multiline and char in FREE_TEXT_SPACING:
            continue
        category = unicodedata.category(char)
        if category == "Cc":
            what = "a control character" + (" (a terminal escape)" if char == "\x1b" else "")
        elif category == "Cs":
            what = "an unpaired surrogate"
        elif char in BIDI_CONTROLS:
            what = "a bidirectional override"
        elif category in ("Zl", "Zp") and not multiline:
            what = "a line break"
        else:
            continue
        return f"Contains {what}, U+{ord(char):04X}, at character {position}; use printable text."
    return None


def validate_name(value: str) -> None:
    """Django validator for one-line names (forms, serializers, model fields)."""
    problem = text_problem(value)
    if problem is not None:
        raise ValidationError(problem, code="unprintable")


def validate_free_text(value: str) -> None:
    """Django validator for free text: a name's rule, line breaks and tabs allowed."""
    problem = text_problem(value, multiline=True)
    if problem is not None:
        raise ValidationError(problem, code="unprintable")


def check_text_fields(
    *, names: Mapping[str, str] | None = None, free_text: Mapping[str, str] | None = None
) -> None:
    """ValidationError naming every field whose text may not be stored (a model's `clean()`,
    a service's checks): `names` hold one-line names, `free_text` notes."""
    errors = {
        field: problem
        for fields, multiline in ((names or {}, False), (free_text or {}, True))
        for field, value in fields.items()
        if (problem := text_problem(value or "", multiline=multiline)) is not None
    }
    if errors:
        raise ValidationError(errors, code="unprintable")
