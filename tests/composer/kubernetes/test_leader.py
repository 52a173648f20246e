"""Leader election over a Lease: one replica leads and renews; another takes over only
once the Lease has not been renewed for its duration; a write race has one winner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from composer.kubernetes.leader import Elector
from tests.support.kube import FakeKube

T0 = datetime(2026, 12, 4, 12, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def test_one_replica_leads_until_it_stops_renewing_then_another_takes_over() -> None:
    kube, clock = FakeKube(), Clock()
    a = Elector(kube, "composer", "composer-k8s", "replica-a", duration_s=15, clock=clock)
    b = Elector(kube, "composer", "composer-k8s", "replica-b", duration_s=15, clock=clock)

    assert a.lead() and not b.lead()
    clock.now += timedelta(seconds=10)
    assert a.lead() and not b.lead()  # renewed at +10 s
    clock.now += timedelta(seconds=14)
    assert not b.lead()  # renewed 14 s ago: still a's

    clock.now += timedelta(seconds=2)  # 16 s without a renewal: a is gone
    assert b.lead() and not a.lead()
    spec = kube.leases[("composer", "composer-k8s")]["spec"]
    assert spec["holderIdentity"] == "replica-b" and spec["leaseTransitions"] == 1


def test_two_replicas_racing_for_a_new_lease_have_one_winner() -> None:
    kube, clock = FakeKube(), Clock()
    a = Elector(kube, "composer", "lease", "replica-a", clock=clock)
    b = Elector(kube, "composer", "lease", "replica-b", clock=clock)
    seen_by_b = kube.lease_get("composer", "lease")  # None: b read before a wrote

    assert a.lead()
    kube_get = kube.lease_get
    kube.lease_get = lambda namespace, name: seen_by_b  # type: ignore[method-assign]
    assert not b.lead()  # its create is refused: a got there first
    kube.lease_get = kube_get  # type: ignore[method-assign]
    assert kube.leases[("composer", "lease")]["spec"]["holderIdentity"] == "replica-a"


def test_a_standby_whose_clock_is_an_hour_ahead_never_takes_over_a_live_leader() -> None:
    kube, clock_a, clock_b = FakeKube(), Clock(), Clock()
    clock_b.now += timedelta(hours=1)
    a = Elector(kube, "composer", "lease", "replica-a", duration_s=15, clock=clock_a)
    b = Elector(kube, "composer", "lease", "replica-b", duration_s=15, clock=clock_b)

    assert a.lead()
    for _ in range(10):  # a renews every 5 s; b looks as often
        assert not b.lead()
        clock_a.now += timedelta(seconds=5)
        clock_b.now += timedelta(seconds=5)
        assert a.lead()
    assert not b.lead()  # b sees a's last renewal...
    clock_b.now += timedelta(seconds=16)  # ...and none for longer than the Lease: a is gone
    assert b.lead()
