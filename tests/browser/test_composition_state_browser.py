"""A composition's state badge follows the composition, on its page and in the list, over
the real ASGI app: never "Placing" while its job binds."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from composer.choices import CompositionState, EventType
from composer.models import Composition, Event
from composer.states import composition_transition

# WhiteNoise serves static files to the ASGI handler as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]


def placing(acme: Any, alice: Any, name: str) -> Composition:
    composition = Composition.objects.create(tenant=acme, name=name, spec={}, requested_by=alice)
    return composition_transition(composition, CompositionState.PLACING, reason="Placing")


def move(composition: Composition, to: CompositionState) -> None:
    composition_transition(
        Composition.objects.get(pk=composition.pk), to, reason=f"{to.label} (compose job 1)"
    )


def test_the_page_shows_binding_when_the_job_moved_on_while_the_page_was_drawn(
    asgi_login_page: Any, alice: Any, acme: Any, monkeypatch: Any
) -> None:
    """The composition's page is read from the database as "placing"; before it reaches the
    browser the job moves it to "binding", which the page the user is leaving still hears
    (and stores as seen). The new page must be sent that event, not take it as seen."""
    from playwright.sync_api import expect

    from composer.views import compositions as views

    composition = placing(acme, alice, "llm-serve")
    page = asgi_login_page(alice, "/compositions/")  # live: it hears Acme's events
    page.context.add_init_script(
        "sessionStorage.setItem('test.seenAtLoad',"
        " sessionStorage.getItem('composer.live.seen') || '[]');"
    )
    path = f"/compositions/{composition.pk}/"
    read = views._composition_context
    raced: list[bool] = []

    def read_then_moved_on(request: Any, pk: int) -> Any:
        context = read(request, pk)  # what the page shows: placing
        if request.path == path and not raced:
            raced.append(True)
            move(composition, CompositionState.BINDING)
            time.sleep(1.5)  # the list page, still open, hears it and stores it as seen
        return context

    monkeypatch.setattr(views, "_composition_context", read_then_moved_on)
    page.goto(path)

    binding = Event.objects.filter(
        type=EventType.COMPOSITION_STATE, composition=composition
    ).latest("id")
    heard = [
        entry[0] for entry in json.loads(page.evaluate("sessionStorage.getItem('test.seenAtLoad')"))
    ]
    assert binding.pk in heard, "the previous page did not hear the event: no race to test"
    # Delivered to this page (not only found by a fallback poll), which redraws the badge.
    page.wait_for_function(
        "(id) => window.composerEvents.some((e) => e.id === id)", arg=binding.pk, timeout=10_000
    )
    expect(page.locator("#composition-state")).to_contain_text("Binding")
    move(composition, CompositionState.READY)
    expect(page.locator("#composition-state")).to_contain_text("Ready")


def test_the_list_follows_each_composition_s_state_without_a_reload(
    asgi_login_page: Any, alice: Any, acme: Any
) -> None:
    from playwright.sync_api import expect

    composition = placing(acme, alice, "train-a")
    page = asgi_login_page(alice, "/compositions/")
    page.evaluate("window.reloads = 0; window.addEventListener('load', () => window.reloads++)")
    badge = page.locator(f'tr[data-composition="{composition.pk}"] .badge-status')
    expect(badge).to_have_text("Placing")

    move(composition, CompositionState.BINDING)
    expect(badge).to_have_text("Binding")
    move(composition, CompositionState.READY)
    expect(badge).to_have_text("Ready")
    assert page.evaluate("window.reloads") == 0, "the page reloaded instead of its table"
