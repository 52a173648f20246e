"""What a resource's write hands back to the view: status, body, headers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """A write's answer. `body` None: no body (204)."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
