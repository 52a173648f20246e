"""Reading what a page, an API answer or a websocket message says, in tests."""

from __future__ import annotations

import re


def named(text: str, name: str) -> bool:
    """Whether `text` names `name` itself ("gpu-a-02"), not a longer name it begins
    ("gpu-a-02-1", a device the tenant holds and may see)."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None
