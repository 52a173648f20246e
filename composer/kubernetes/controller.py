"""The controller: publishes the free pool as ResourceSlices and turns the ResourceClaims
allocated to it into compositions, one reconcile at a time.

Level-triggered and idempotent: each `reconcile` reads what the API server and the
database say now and does what is missing, so a controller killed at any point resumes on
its next pass. A claim's composition is asked for under the idempotency key
`kubernetes:<claim uid>`, so a restart between asking and recording finds the composition
it started instead of composing twice; the claim's record (`KubernetesClaim`) is keyed by
the same uid.

For each claim allocated to this driver: the node's host is found (`names.HOST_ANNOTATION`
on the node, else the node's name), the namespace's tenant (`names.TENANT_LABEL` on the
namespace, else the controller's default tenant), and the exact devices the scheduler
chose are composed onto that host as a specific composition, through
`composition_request`: the console's placement checks, quotas, audit and live events. The
claim's per-device conditions then follow the composition (`claims.verdict`). When a claim
is deleted or deallocated, its composition is decomposed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from composer.choices import CompositionState
from composer.errors import ComposerError, InvalidTransition, SpecError
from composer.kubernetes.api import Conflict, KubeApi
from composer.kubernetes.claims import ClaimView, Verdict, claim_view, status_devices, verdict
from composer.kubernetes.names import (
    CONDITION_RESCHEDULE,
    DRIVER,
    HOST_ANNOTATION,
    TENANT_LABEL,
    device_pk,
)
from composer.kubernetes.slices import pools_free, slices_planned
from composer.models import Composition, KubernetesClaim, Tenant
from composer.services.compositions import composition_decompose, composition_request
from fabric.choices import ComponentState
from fabric.models import Host

__all__ = ["Controller", "Report"]

logger = logging.getLogger(__name__)

PUBLISH_TRIES = 3  # a slice changed by someone else meanwhile: read and plan again
# A claim whose composition could not be made (or ended) is tried again this often while
# it stays allocated: the scheduler may give it the same devices again after a reschedule,
# or the operator may have fixed the cause (a node's host, a quota).
RETRY_S = 30
# Still coming up: the claim's record waits for it before the decompose.
COMING_UP = (
    CompositionState.REQUESTED,
    CompositionState.PLACING,
    CompositionState.BINDING,
    CompositionState.HEALING,
    CompositionState.RESIZING,
)


@dataclass
class Report:
    """What one reconcile did, for the log and the tests."""

    pools: list[str] = field(default_factory=list)  # the pools published now
    slices_written: int = 0
    slices_deleted: int = 0
    attached: list[str] = field(default_factory=list)  # namespace/name of claims composed
    released: list[str] = field(default_factory=list)
    conditions: int = 0  # claims whose status was written
    errors: list[str] = field(default_factory=list)


class Controller:
    """One controller for one driver name; `default_tenant` is the slug of the tenant a
    namespace without `names.TENANT_LABEL` maps to (it must exist)."""

    def __init__(
        self,
        api: KubeApi,
        *,
        default_tenant: str = "kubernetes",
        driver: str = DRIVER,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.api = api
        self.default_tenant = default_tenant
        self.driver = driver
        self.clock = clock

    def reconcile(self) -> Report:
        """Publish, then settle every claim. What fails is reported and left to the next
        pass, one claim's failure never holding up another's (nor the releases); only a
        failure to list the claims ends the pass early."""
        report = Report()
        try:
            self.publish(report)
        except Exception as exc:  # the API server refused a slice: the claims still settle
            logger.exception("kubernetes: publishing the pool failed")
            report.errors.append(f"publishing the pool: {_words(exc)}")
        self.claims_settle(report)
        return report

    def publish(self, report: Report) -> None:
        """Make the published slices those of the free pool now."""
        for attempt in range(PUBLISH_TRIES):
            pools = pools_free()
            plan = slices_planned(self.api.slices_list(), pools, self.driver)
            try:
                for body in plan.create:
                    self.api.slice_create(body)
                for body in plan.replace:
                    self.api.slice_replace(body)
            except Conflict:
                if attempt == PUBLISH_TRIES - 1:
                    raise
                continue
            for name in plan.delete:
                self.api.slice_delete(name)
            report.pools = sorted(pools)
            report.slices_written += len(plan.create) + len(plan.replace)
            report.slices_deleted += len(plan.delete)
            return

    def claims_settle(self, report: Report) -> None:
        """Compose for new claims, write every claim's conditions, release the gone."""
        live: set[str] = set()
        for claim in self.api.claims_list():
            view = claim_view(claim, self.driver)
            if view is None or not view.uid or view.deleting:
                continue
            live.add(view.uid)
            try:
                self._settle(claim, view, report)
            except Conflict:
                pass  # the claim changed since it was listed: the next pass reads it again
            except Exception as exc:
                logger.exception("kubernetes: claim %s/%s", view.namespace, view.name)
                report.errors.append(f"{view.namespace}/{view.name}: {_words(exc)}")
        gone = KubernetesClaim.objects.filter(released_at__isnull=True).exclude(uid__in=live)
        for record in gone.select_related("composition"):
            try:
                if self._release(record):
                    report.released.append(f"{record.namespace}/{record.name}")
            except Exception as exc:
                logger.exception("kubernetes: releasing claim %s", record.uid)
                report.errors.append(f"{record.namespace}/{record.name}: {_words(exc)}")

    def _settle(self, claim: dict[str, Any], view: ClaimView, report: Report) -> None:
        """One claim: its composition asked for when due, its conditions written."""
        record = self._record(view, report)
        # Conditions for the devices now allocated only once their composition is theirs.
        settled = self._verdict(record) if record.devices == _devices(view) else None
        devices = status_devices(claim, view, settled, self.clock(), self.driver)
        if devices != ((claim.get("status") or {}).get("devices") or []):
            version = (claim.get("metadata") or {}).get("resourceVersion")
            self.api.claim_status_set(view.namespace, view.name, devices, version)
            report.conditions += 1

    def _record(self, view: ClaimView, report: Report) -> KubernetesClaim:
        """The claim's record, with a composition asked for when one is due: the first
        time the claim is seen; when it comes back after it was released (deallocated,
        then allocated again); when it is allocated to other devices and the composition
        of the old ones has ended (it is decomposed first: until then the claim waits);
        and, every RETRY_S, when its composition could not be made or ended (the scheduler
        may allocate the same devices again after a reschedule, or the operator fixed the
        cause). Each attempt has its own idempotency key, so a restart never asks twice."""
        found = KubernetesClaim.objects.filter(uid=view.uid).select_related("composition").first()
        if found is None:
            return self._attempt(view, report, 1)
        if found.released_at is not None:
            return self._attempt(view, report, found.attempt + 1)
        if found.devices != _devices(view):
            if not _ended(found.composition):
                self._release(found, mark=False)  # the old devices go first
                return found
            return self._attempt(view, report, found.attempt + 1)
        if _ended(found.composition) and (
            found.attempted_at is None
            or self.clock() - found.attempted_at >= timedelta(seconds=RETRY_S)
        ):
            return self._attempt(view, report, found.attempt + 1)
        return found

    def _attempt(self, view: ClaimView, report: Report, attempt: int) -> KubernetesClaim:
        """Ask for the claim's composition (attempt `attempt`) and record the outcome."""
        composition, error = None, ""
        try:
            composition = self._compose(view, attempt)
            report.attached.append(f"{view.namespace}/{view.name}")
        except ComposerError as exc:  # bad mapping, quota, name: reported on the claim
            error = exc.message
            report.errors.append(f"{view.namespace}/{view.name}: {error}")
        values = {
            "namespace": view.namespace,
            "name": view.name,
            "node": view.node or "",
            "pods": list(view.pods),
            "devices": _devices(view),
            "composition": composition,
            "error": error,
            "attempt": attempt,
            "attempted_at": self.clock(),
            "released_at": None,
        }
        record, _ = KubernetesClaim.objects.update_or_create(uid=view.uid, defaults=values)
        return record

    def _compose(self, view: ClaimView, attempt: int) -> Composition:
        """The specific composition of the claim's devices on its node's host."""
        if not view.node:
            raise SpecError("The claim's allocation names no node.", field="host")
        host = self._host(view.node)
        pins = []
        for pool, device in view.devices:
            pk = device_pk(device)
            if pk is None:
                raise SpecError(
                    f"Device {device} of pool {pool} is not Composer's.", field="devices"
                )
            pins.append({"device": pk})
        return composition_request(
            tenant=self._tenant(view.namespace),
            requested_by=None,
            spec={"host": host.pk, "devices": pins},
            name=f"k8s {view.namespace}/{view.name}"[:90] + f" {view.uid[:8]}",
            # One composition per claim and allocation, whoever asks twice; the allocation
            # as a digest, so that a claim of many devices stays within the key's length.
            idempotency_key=f"kubernetes:{view.uid}:{attempt}:{_digest(view.devices)}",
        )

    def _host(self, node: str) -> Host:
        """The Composer host of `node`: its annotation or label, else its own name."""
        found = self.api.node_get(node) or {}
        meta = found.get("metadata") or {}
        name = (meta.get("annotations") or {}).get(HOST_ANNOTATION) or (
            meta.get("labels") or {}
        ).get(HOST_ANNOTATION, node)
        host = Host.objects.exclude(state=ComponentState.ABSENT).filter(name=name).first()
        if host is None:
            raise SpecError(
                f"Node {node} maps to host {name!r}, which Composer does not know; set the "
                f"{HOST_ANNOTATION} annotation on the node.",
                field="host",
            )
        return host

    def _tenant(self, namespace: str) -> Tenant:
        """The tenant of `namespace`: its label, else the default tenant."""
        found = self.api.namespace_get(namespace) or {}
        labels = (found.get("metadata") or {}).get("labels") or {}
        slug = labels.get(TENANT_LABEL) or self.default_tenant
        tenant = Tenant.objects.filter(slug=slug, is_active=True).first()
        if tenant is None:
            raise SpecError(
                f"Namespace {namespace} maps to tenant {slug!r}, which is not an active tenant.",
                field="tenant",
            )
        return tenant

    def _verdict(self, record: KubernetesClaim) -> Verdict | None:
        """The claim's condition from its composition, as read by `_record` this pass."""
        composition = record.composition
        if composition is None:
            return Verdict(CONDITION_RESCHEDULE, "NotComposed", record.error)
        return verdict(composition.state, composition.failure_reason or "")

    def _release(self, record: KubernetesClaim, *, mark: bool = True) -> bool:
        """Decompose the composition of a claim gone (or of devices it no longer has);
        True once nothing is left to do. With `mark`, the record is marked released."""
        composition = record.composition
        if composition is not None:
            composition.refresh_from_db()
            if composition.state in COMING_UP:
                return False  # decomposed once it is up (or it fails by itself)
            if composition.state in (CompositionState.READY, CompositionState.DEGRADED):
                try:
                    composition_decompose(composition=composition, actor=None)
                except InvalidTransition as exc:
                    logger.info("claim %s: decompose later: %s", record.uid, exc.message)
                    return False
        if mark:
            KubernetesClaim.objects.filter(pk=record.pk).update(released_at=self.clock())
        return True


def _devices(view: ClaimView) -> list[list[str]]:
    """A claim's (pool, device) pairs as its record stores them."""
    return [list(d) for d in view.devices]


def _words(exc: Exception) -> str:
    """An error in a line: a Composer error's own words, else its type and text."""
    return getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"[:500]


def _digest(devices: Sequence[tuple[str, str]]) -> str:
    """A short digest of an allocation's (pool, device) pairs."""
    text = "\n".join(f"{pool}/{device}" for pool, device in devices)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _ended(composition: Composition | None) -> bool:
    """Whether a claim's composition is over (or none was made): a new allocation of the
    claim may be composed."""
    return composition is None or composition.state in (
        CompositionState.REJECTED,
        CompositionState.FAILED,
        CompositionState.RELEASED,
    )
