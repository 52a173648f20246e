"""The base of every bulk form: the ticked ids, the list to go back to, errors in words.

A bulk page reads the same form on GET (the confirmation) and POST (the change), so a bad
value is the same error naming its field in both.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.utils.http import url_has_allowed_host_and_scheme

from fabric.forms.domains import BadIds, parse_ids


class BulkForm(forms.Form):
    """`ids` (several, or comma-separated) and `next`, the list to go back to (a path on this
    site only); subclasses name what the ids are of and how many may go at once."""

    noun: ClassVar[str] = "element"
    nouns: ClassVar[str] = "elements"
    limit: ClassVar[int] = 200

    ids = forms.CharField(required=False, label="Elements")
    next = forms.CharField(required=False, max_length=2000)

    def __init__(self, data: Any, *, host: str, secure: bool) -> None:
        super().__init__(data)
        self._host = host
        self._secure = secure
        self.fields["ids"].label = self.nouns.capitalize()

    def clean_ids(self) -> list[int]:
        raw = self.data.getlist("ids") if hasattr(self.data, "getlist") else self.data.get("ids")
        values = [str(v) for v in (raw if isinstance(raw, list | tuple) else [raw or ""])]
        try:
            return parse_ids(values, limit=self.limit, noun=self.noun, nouns=self.nouns)
        except BadIds as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_next(self) -> str:
        target = self.cleaned_data.get("next") or ""
        safe = url_has_allowed_host_and_scheme(
            target, allowed_hosts={self._host}, require_https=self._secure
        )
        return target if target and safe and target.startswith("/") else ""

    def error_list(self) -> list[str]:
        """The errors as lines naming their field in the operator's words."""
        return [
            f"{self[name].label if name in self.fields else name}: {message}"
            if name != "__all__"
            else str(message)
            for name, messages in self.errors.items()
            for message in messages
        ]
