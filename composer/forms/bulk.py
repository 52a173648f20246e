"""The bulk forms of compositions and alerts (`fabric.forms.bulk.BulkForm`): the ticked ids,
loaded here through the viewer's own scoping, so an id the viewer may not see reads as
missing (never as "not yours", which would say it exists)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from composer.models import Composition
from composer.services.bulk import BULK_MAX
from fabric.forms.bulk import BulkForm
from fabric.models import Alert


class _ScopedBulkForm(BulkForm):
    limit = BULK_MAX

    def __init__(self, data: Any, *, rows: QuerySet[Any], host: str, secure: bool) -> None:
        super().__init__(data, host=host, secure=secure)
        self._rows = rows
        self.rows: list[Any] = []

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        ids = data.get("ids")
        if ids:
            found = {row.pk: row for row in self._rows.filter(pk__in=ids)}
            missing = [str(pk) for pk in ids if pk not in found]
            if missing:
                noun = self.noun if len(missing) == 1 else self.nouns
                self.add_error("ids", f"No {noun} with id {', '.join(missing)}.")
            else:
                self.rows = [found[pk] for pk in ids]
        return data


class BulkDecomposeForm(_ScopedBulkForm):
    """Compositions to decompose."""

    noun, nouns = "composition", "compositions"

    @property
    def compositions(self) -> list[Composition]:
        return self.rows


class BulkAcknowledgeForm(_ScopedBulkForm):
    """Alerts to acknowledge."""

    noun, nouns = "alert", "alerts"

    @property
    def alerts(self) -> list[Alert]:
        return self.rows
