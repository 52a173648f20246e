"""JSON from outside (API bodies, websocket messages), parsed within bounds.

`json.loads` recurses once per level of nesting: `"[" * 100000` ends in a RecursionError
(a 500 from the API, a crashed websocket consumer) rather than in an answer, and a body
nested a few hundred levels deep parses but then costs every recursive walk after it.
Strings may also carry what no column can hold: PostgreSQL refuses NUL in text, and an
unpaired surrogate (`"\\ud800"`, valid JSON) cannot be encoded at all, so either one would
fail deep inside a query.

`loads()` turns all of that into `JSONRefused`, a ValueError whose message says what is
wrong and whose `field` names where (`spec.items[0].model`), before any of it reaches a
serializer, a service or the database.
"""

from __future__ import annotations

import json
import re
from typing import Any

# No request or message of the console nests deeper than a handful of levels.
MAX_DEPTH = 32
SURROGATE = re.compile("[\ud800-\udfff]")


class JSONRefused(ValueError):
    """JSON that is refused as a whole (`field` None) or for one value (`field` names it)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _no_constant(name: str) -> Any:
    raise JSONRefused(f"{name} is not a JSON number.")


def loads(text: str) -> Any:
    """Parse `text` as strict JSON (no NaN or Infinity), nested at most MAX_DEPTH levels deep,
    with no NUL or unpaired surrogate in any string or key; JSONRefused otherwise (a
    ValueError, as is the JSONDecodeError of text that is not JSON at all)."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise JSONRefused(_too_deep()) from None
    check(value)
    return value


def check(value: Any) -> None:
    """JSONRefused when parsed JSON nests deeper than MAX_DEPTH or holds unstorable text.

    Iterative, so it never recurses itself; visits each value once.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node, path)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise JSONRefused(_too_deep())
        if isinstance(node, dict):
            for key, child in node.items():
                where = f"{path}.{key}" if path else key
                _check_text(key, path, key=True)
                stack.append((child, where, depth + 1))
        else:
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(node))


def _check_text(text: str, path: str, *, key: bool = False) -> None:
    if "\x00" in text:
        problem = "a NUL character"
    elif not text.isascii() and SURROGATE.search(text):
        problem = "an unpaired surrogate"  # json.loads joins every pair into one character
    else:
        return
    what = "A key" if key else "The text"
    raise JSONRefused(f"{what} holds {problem}, which cannot be stored.", field=path or None)


def _too_deep() -> str:
    return f"The JSON is nested more than {MAX_DEPTH} levels deep."
