"""Adding, changing, enabling, disabling and deleting fabric managers: every change audited.

Each write is one transaction that also writes a ChangeRecord (who, what, when, from
where). A change of credentials is recorded as words ("stored", "replaced", "removed"),
never as values; settings are recorded masked (`fabric.secrets.mask_secrets`), and stored
settings never hold a secret the console was given (`settings_check` sends secrets, at any
depth, to the credentials).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError, Q

from fabric.choices import ChangeAction, DeviceState
from fabric.holders import held_states
from fabric.models import (
    Alert,
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.secrets import mask_secrets
from fabric.services.history import change_record
from fabric.services.managers.input import (
    CredentialsInput,
    ManagerInput,
    credentials_check,
    credentials_ciphertext,
    manager_build,
    stored_credentials_check,
)

logger = logging.getLogger(__name__)

# Fields an operator sets, in the order a ChangeRecord lists them.
AUDITED_FIELDS = ("name", "driver", "endpoint", "settings", "is_enabled", "health_poll_interval_s")


class ManagerInUse(Exception):
    """A manager cannot be deleted: something still depends on it. `message` says what and
    what to do instead (disable it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _credential_field(entered: CredentialsInput) -> str:
    return "token" if entered.token else "password"


def _audited(manager: FabricManager, name: str) -> Any:
    """A field's value as a ChangeRecord holds it: settings masked (`mask_secrets`), so a
    secret stored before the console refused them never reaches an audit row."""
    value = getattr(manager, name)
    return mask_secrets(value) if name == "settings" else value


def manager_create(
    *,
    data: ManagerInput,
    credentials: CredentialsInput | None = None,
    actor: Any = None,
    source: str = "console",
    remote_addr: str | None = None,
) -> FabricManager:
    """Add a fabric manager (credentials encrypted) and record who added it.

    Raises ValidationError naming each field at fault; nothing is saved then.
    """
    entered = credentials or CredentialsInput()
    manager, values = _checked(data=data, entered=entered, manager=None)
    manager.credentials_ciphertext = credentials_ciphertext(
        values or {}, field_name=_credential_field(entered)
    )
    with transaction.atomic():
        manager.save()
        changes = {name: (None, _audited(manager, name)) for name in AUDITED_FIELDS}
        if manager.credentials_ciphertext:
            changes["credentials"] = (None, "stored")
        change_record(
            manager,
            ChangeAction.ADDED,
            changes,
            message="fabric manager added",
            actor=actor,
            source=source,
            remote_addr=remote_addr,
        ).save()
    logger.info("fabric manager %s added (driver %s)", manager.pk, manager.driver)
    return manager


def manager_update(
    *,
    manager: FabricManager,
    data: ManagerInput,
    credentials: CredentialsInput | None = None,
    actor: Any = None,
    source: str = "console",
    remote_addr: str | None = None,
) -> list[str]:
    """Change a manager's fields and, when given, its credentials; returns what changed.

    Blank credentials keep the stored ones; `clear` removes them. Only the fields that
    changed are written (a sync or a poll may be writing the manager's other columns), and
    one ChangeRecord lists them. Raises ValidationError naming each field at fault.
    """
    entered = credentials or CredentialsInput()
    built, values = _checked(data=data, entered=entered, manager=manager)
    ciphertext = (
        None
        if values is None
        else credentials_ciphertext(values, field_name=_credential_field(entered))
    )
    with transaction.atomic():
        current = FabricManager.objects.select_for_update().get(pk=manager.pk)
        changes: dict[str, tuple[Any, Any]] = {
            name: (_audited(current, name), _audited(built, name))
            for name in AUDITED_FIELDS  # compared as stored, recorded masked
            if getattr(current, name) != getattr(built, name)
        }
        fields = list(changes)
        if ciphertext is not None and (ciphertext or current.credentials_ciphertext):
            before = "stored" if current.credentials_ciphertext else None
            changes["credentials"] = (before, "replaced" if ciphertext else "removed")
            current.credentials_ciphertext = ciphertext
            fields.append("credentials_ciphertext")
        if not fields:
            return []
        for name in AUDITED_FIELDS:
            setattr(current, name, getattr(built, name))
        current.save(update_fields=[*fields, "updated_at"])
        change_record(
            current,
            ChangeAction.CHANGED,
            changes,
            # The history pages mask the "credentials" entry (its key looks secret); the
            # message says in words what happened to them.
            message="fabric manager changed"
            + (f"; credentials {changes['credentials'][1]}" if "credentials" in changes else ""),
            actor=actor,
            source=source,
            remote_addr=remote_addr,
        ).save()
    manager.refresh_from_db()
    logger.info("fabric manager %s changed: %s", manager.pk, ", ".join(sorted(changes)))
    return sorted(changes)


def manager_set_enabled(
    *,
    manager: FabricManager,
    enabled: bool,
    actor: Any = None,
    source: str = "console",
    remote_addr: str | None = None,
) -> bool:
    """Enable or disable a manager; returns False when it already was so (nothing written).

    A disabled manager keeps its inventory and history but is neither synchronised nor
    polled, and a sync cannot be started for it.
    """
    with transaction.atomic():
        updated = FabricManager.objects.filter(pk=manager.pk, is_enabled=not enabled).update(
            is_enabled=enabled
        )
        if not updated:
            manager.refresh_from_db()
            return False
        change_record(
            manager,
            ChangeAction.CHANGED,
            {"is_enabled": (not enabled, enabled)},
            message="fabric manager enabled" if enabled else "fabric manager disabled",
            actor=actor,
            source=source,
            remote_addr=remote_addr,
        ).save()
    manager.refresh_from_db()
    logger.info("fabric manager %s %s", manager.pk, "enabled" if enabled else "disabled")
    return True


@dataclass(frozen=True)
class DeleteCheck:
    """What deleting a manager would take with it, or why it may not be deleted."""

    devices: int
    hosts: int
    switches: int
    enclosures: int
    refusal: str = ""

    @property
    def allowed(self) -> bool:
        return not self.refusal


def manager_delete_check(*, manager: FabricManager) -> DeleteCheck:
    """Whether `manager` may be deleted now, and what its inventory counts.

    Refused while any of its devices is bound to a host, reserved or holding memory
    slices, or held by a composition that is not released (asked of the composition layer
    through `fabric.holders`): deleting the manager would orphan those bindings.
    """
    devices = Device.objects.filter(manager=manager)
    busy = devices.filter(
        Q(bound_host__isnull=False)
        | Q(state__in=[DeviceState.BOUND, DeviceState.RESERVED])
        | Q(allocated_gib__gt=0)
    ).count()
    held = len(held_states(list(devices.values_list("pk", flat=True))))
    counts = {
        "devices": devices.count(),
        "hosts": Host.objects.filter(manager=manager).count(),
        "switches": Switch.objects.filter(manager=manager).count(),
        "enclosures": Enclosure.objects.filter(manager=manager).count(),
    }
    reasons = []
    if busy:
        reasons.append(f"{busy} of its devices {'is' if busy == 1 else 'are'} bound or reserved")
    if held:
        reasons.append(f"{held} of its devices {'is' if held == 1 else 'are'} held by compositions")
    refusal = ""
    if reasons:
        refusal = (
            f"Fabric manager {manager.name} cannot be deleted: {' and '.join(reasons)}. "
            "Decompose those compositions first, or disable the manager instead: it then "
            "keeps its inventory and history but is neither synchronised nor polled."
        )
    return DeleteCheck(refusal=refusal, **counts)


def manager_delete(
    *,
    manager: FabricManager,
    actor: Any = None,
    source: str = "console",
    remote_addr: str | None = None,
) -> DeleteCheck:
    """Delete a manager and the inventory it reported; the ChangeRecord stays.

    Raises ManagerInUse (nothing deleted) when its devices are bound or held
    (`manager_delete_check`), or when the records of past compositions still refer to its
    devices (their history would be lost: disable it instead).
    """
    with transaction.atomic():
        locked = FabricManager.objects.select_for_update().get(pk=manager.pk)
        check = manager_delete_check(manager=locked)
        if not check.allowed:
            raise ManagerInUse(check.refusal)
        record = change_record(
            locked,
            ChangeAction.DELETED,
            {
                "devices": (check.devices, None),
                "hosts": (check.hosts, None),
                "switches": (check.switches, None),
                "enclosures": (check.enclosures, None),
            },
            message="fabric manager deleted with the inventory it reported",
            actor=actor,
            source=source,
            remote_addr=remote_addr,
        )
        pk = locked.pk
        try:
            with transaction.atomic():
                # Dependency order: what refers to the manager's rows goes first.
                for model in (Alert, Link, Port, Device, Enclosure, Host, Switch, PowerFeed, Rack):
                    model.objects.filter(manager=locked).delete()
                locked.delete()
        except ProtectedError as exc:
            kinds = sorted({str(obj._meta.verbose_name_plural) for obj in exc.protected_objects})
            raise ManagerInUse(
                f"Fabric manager {manager.name} cannot be deleted: records of "
                f"{', '.join(str(kind) for kind in kinds)} still refer to what it reported, "
                "and would lose their history. Disable the manager instead: it then keeps "
                "its inventory and history but is neither synchronised nor polled."
            ) from None
        record.target_id = pk
        record.save()
    logger.info("fabric manager %s deleted", pk)
    return check


def _checked(
    *, data: ManagerInput, entered: CredentialsInput, manager: FabricManager | None
) -> tuple[FabricManager, dict[str, str] | None]:
    """The built manager and the credentials to store, with every field's errors at once
    (a form shows them all, not the first one)."""
    errors: dict[str, list[str]] = {}
    built: FabricManager | None = None
    values: dict[str, str] | None = None
    try:
        built = manager_build(data=data, manager=manager)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    try:
        values = credentials_check(entered)
        if manager is not None and built is not None:
            stored_credentials_check(manager=manager, endpoint=built.endpoint, entered=entered)
    except ValidationError as exc:
        for name, messages in exc.message_dict.items():
            errors.setdefault(name, []).extend(messages)
    if errors or built is None:
        raise ValidationError(errors)
    return built, values
