"""Composer's models, re-exported through `__all__`."""

from __future__ import annotations

from composer.models.api_tokens import ApiToken
from composer.models.bookings import Booking, BookingHold, Occurrence
from composer.models.compositions import Allocation, Composition, StateChange
from composer.models.events import AlertAudience, ChangeAudience, Event, EventAudience
from composer.models.jobs import Job, JobLogLine
from composer.models.kubernetes import KubernetesClaim, KubernetesController
from composer.models.notifications import (
    DeliveryChannel,
    DeliveryEvent,
    DeliveryStatus,
    NotificationDelivery,
    NotificationRoute,
    Silence,
    Webhook,
)
from composer.models.reconcile import (
    FindingKind,
    FindingOutcome,
    ReconcileFinding,
    ReconcileRun,
    ReconcileStatus,
    ReconcileTrigger,
    UnbindPending,
)
from composer.models.redfish import RedfishSession
from composer.models.shapes import ServerShape
from composer.models.templates import Quota, Template
from composer.models.tenancy import Membership, Tenant
from composer.models.utilisation import KindSample, PoolSample, Resolution, TenantSample

__all__ = [
    "AlertAudience",
    "Allocation",
    "ApiToken",
    "Booking",
    "BookingHold",
    "ChangeAudience",
    "Composition",
    "DeliveryChannel",
    "DeliveryEvent",
    "DeliveryStatus",
    "Event",
    "EventAudience",
    "FindingKind",
    "FindingOutcome",
    "Job",
    "JobLogLine",
    "KindSample",
    "KubernetesClaim",
    "KubernetesController",
    "Membership",
    "NotificationDelivery",
    "NotificationRoute",
    "Occurrence",
    "PoolSample",
    "Quota",
    "ReconcileFinding",
    "ReconcileRun",
    "ReconcileStatus",
    "ReconcileTrigger",
    "RedfishSession",
    "Resolution",
    "ServerShape",
    "Silence",
    "StateChange",
    "Template",
    "Tenant",
    "TenantSample",
    "UnbindPending",
    "Webhook",
]
