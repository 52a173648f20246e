"""What one inventory sync did, kind by kind; stored as the sync job's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class KindCounts:
    """What one sync did to one kind of row."""

    reported: int = 0
    added: int = 0
    changed: int = 0
    vanished: int = 0
    returned: int = 0

    @property
    def changes(self) -> int:
        return self.added + self.changed + self.vanished + self.returned


@dataclass
class SyncResult:
    """The outcome of one inventory sync; `as_dict()` is what a job stores as its result."""

    manager_id: int
    manager_name: str
    kinds: dict[str, KindCounts] = field(default_factory=dict)
    bindings: int = 0
    change_records: int = 0
    warnings: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def total_changes(self) -> int:
        return sum(k.changes for k in self.kinds.values())

    def summary(self) -> str:
        """One line for logs and the job message."""
        totals = KindCounts()
        for counts in self.kinds.values():
            totals.added += counts.added
            totals.changed += counts.changed
            totals.vanished += counts.vanished
            totals.returned += counts.returned
        devices = self.kinds.get("devices", KindCounts()).reported
        return (
            f"{devices} devices; added {totals.added}, changed {totals.changed}, "
            f"vanished {totals.vanished}, returned {totals.returned} in {self.duration_s:.1f} s"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "manager_id": self.manager_id,
            "manager": self.manager_name,
            "kinds": {
                name: {
                    "reported": c.reported,
                    "added": c.added,
                    "changed": c.changed,
                    "vanished": c.vanished,
                    "returned": c.returned,
                }
                for name, c in self.kinds.items()
            },
            "bindings": self.bindings,
            "change_records": self.change_records,
            "warnings": self.warnings[:50],
            "duration_s": round(self.duration_s, 3),
            "summary": self.summary(),
        }
