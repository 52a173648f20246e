"""Lapsed holds free their devices without waiting on beat: every request and preview
releases them first, the reconciler finds any left, and one failing hold never keeps the
others held."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import CompositionState
from composer.models import Composition, FindingKind, FindingOutcome, StateChange
from composer.placement.request import Placement
from composer.services import hold_lapse
from composer.services.compositions import composition_preview, composition_request
from composer.services.holds import composition_hold, holds_expire
from composer.services.reconcile import reconcile_run
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager

pytestmark = pytest.mark.django_db


def named_hold(tenant: Any, user: Any, device: Device, name: str) -> Composition:
    spec = {"devices": [{"device": device.name}]}
    held = composition_hold(tenant=tenant, requested_by=user, spec=spec, name=name, ttl_s=60)
    assert held.state == CompositionState.HELD
    return held


def lapse(*holds: Composition) -> None:
    """Their time is up, a minute ago (each a second apart: the first is the oldest)."""
    past = timezone.now() - timedelta(minutes=1)
    for index, held in enumerate(holds):
        Composition.objects.filter(pk=held.pk).update(
            hold_expires_at=past + timedelta(seconds=index)
        )


def break_release(monkeypatch: pytest.MonkeyPatch, broken: Composition, why: str) -> None:
    """Releasing `broken` raises RuntimeError(`why`); every other release works."""
    real = hold_lapse.composition_hold_release

    def release(*, composition: Composition, **kwargs: Any) -> Composition:
        if composition.pk == broken.pk:
            raise RuntimeError(why)
        return real(composition=composition, **kwargs)

    monkeypatch.setattr(hold_lapse, "composition_hold_release", release)


def gpus() -> list[Device]:
    return list(Device.objects.filter(kind="gpu").order_by("name"))


def test_a_request_takes_a_lapsed_holds_device_without_the_sweep(
    synced: FabricManager, acme: Any, alice: Any, globex: Any, carol: Any
) -> None:
    device = gpus()[0]
    held = named_hold(acme, alice, device, "h")
    lapse(held)
    spec = {"devices": [{"device": device.name}]}
    plan = composition_preview(tenant=globex, spec=spec)
    assert isinstance(plan, Placement)
    held.refresh_from_db()
    assert held.state == CompositionState.RELEASED
    last = StateChange.objects.filter(composition=held).last()
    assert last is not None and last.source == "hold lapse before placing"
    assert last.reason.startswith("Hold lapsed at ")
    taken = composition_request(tenant=globex, requested_by=carol, spec=spec, name="g")
    assert taken.state != CompositionState.REJECTED
    assert list(taken.allocations.values_list("device_id", flat=True)) == [device.pk]


def test_a_hold_still_in_its_time_is_left_alone_by_a_request(
    synced: FabricManager, acme: Any, alice: Any, globex: Any, carol: Any
) -> None:
    device = gpus()[0]
    held = named_hold(acme, alice, device, "h")
    spec = {"devices": [{"device": device.name}]}
    taken = composition_request(tenant=globex, requested_by=carol, spec=spec, name="g")
    assert taken.state == CompositionState.REJECTED
    held.refresh_from_db()
    assert held.state == CompositionState.HELD


def test_one_hold_that_fails_to_release_does_not_keep_the_others(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = (named_hold(acme, alice, d, f"h{i}") for i, d in enumerate(gpus()[:2]))
    lapse(first, second)
    break_release(monkeypatch, first, "boom")
    with caplog.at_level(logging.ERROR, logger="composer.services.hold_lapse"):
        assert holds_expire() == 1
        assert holds_expire() == 0  # the broken one fails again, alone
    assert Composition.objects.get(pk=first.pk).state == CompositionState.HELD
    assert Composition.objects.get(pk=second.pk).state == CompositionState.RELEASED
    failures = [r for r in caplog.records if "could not be released" in r.getMessage()]
    assert failures and failures[0].exc_info is not None


def test_the_reconciler_releases_a_hold_past_expiry_and_reports_one_it_cannot(
    synced: FabricManager, acme: Any, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = (named_hold(acme, alice, d, f"h{i}") for i, d in enumerate(gpus()[:2]))
    lapse(first, second)
    break_release(monkeypatch, first, "secret detail")
    run = reconcile_run()
    assert run is not None
    findings = {f.composition_id: f for f in run.findings.filter(kind=FindingKind.HELD_LAPSED)}
    assert findings[second.pk].outcome == FindingOutcome.REPAIRED
    assert findings[first.pk].outcome == FindingOutcome.REPORTED
    assert "RuntimeError" in findings[first.pk].detail
    assert "secret detail" not in findings[first.pk].detail
    assert Device.objects.get(pk=gpus()[1].pk).state == DeviceState.FREE
    last = StateChange.objects.filter(composition=second).last()
    assert last is not None and last.source == "reconciliation"
