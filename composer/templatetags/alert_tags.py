"""Alert badges, the viewer's open-alert count (the navbar entry and the alert list), and
the words of a blast radius."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from composer.templatetags.composer_tags import badge
from fabric.choices import AlertSeverity, AlertSource, AlertState
from fabric.services.alerts import alerts_visible_to
from fabric.topology.radius import DEFINITION

register = template.Library()

_SEVERITY_STYLE: dict[str, tuple[str, str]] = {
    AlertSeverity.INFO: ("info", "info-circle-fill"),
    AlertSeverity.WARNING: ("warning", "exclamation-triangle-fill"),
    AlertSeverity.CRITICAL: ("danger", "x-octagon-fill"),
}
_SOURCE_LABELS = dict(AlertSource.choices)


@register.filter
def severity_badge(value: str) -> SafeString:
    """A coloured badge for an alert severity (info, warning, critical)."""
    colour, icon = _SEVERITY_STYLE.get(str(value), ("secondary", "question-circle-fill"))
    label = dict(AlertSeverity.choices).get(str(value), str(value) or "—")
    return badge(colour, icon, label, data=("severity", str(value)))


@register.filter
def source_label(value: str) -> str:
    """The words for an alert's source type ("power_feed" -> "Power feed")."""
    return str(_SOURCE_LABELS.get(str(value), str(value).replace("_", " ").capitalize()))


@register.simple_tag(takes_context=True)
def open_alert_count(context: dict[str, Any]) -> int:
    """How many open alerts the signed-in user may see (0 when signed out); one query."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return 0
    return alerts_visible_to(user).filter(state=AlertState.OPEN).count()


@register.simple_tag
def blast_definition() -> str:
    """What "lost" and "degraded" mean in a blast radius: the sentence every page that
    shows one puts near its figures (fabric.topology.radius.DEFINITION)."""
    return DEFINITION
