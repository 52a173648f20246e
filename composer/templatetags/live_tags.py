"""`{% live_cursor %}`: the newest event id a page reflects, for static/js/live.js.

The page's first websocket resumes from it, so an event that happens between rendering and
connecting is still delivered (docs/events.md).
"""

from __future__ import annotations

from typing import Any

from django import template

from composer.events import newest_event_id, scope_for

register = template.Library()


@register.simple_tag(takes_context=True)
def live_cursor(context: dict[str, Any]) -> str:
    """The newest event id the signed-in user may see ("" when signed out); one or two
    indexed queries."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    return str(newest_event_id(scope_for(user)))
