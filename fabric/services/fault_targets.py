"""What a fault can be aimed at, by the names an operator knows: one resolver for every door.

The fault page, `POST /api/v1/simulator/faults/` and `manage.py sim_fault` all resolve their
target here (through the simulated driver's `fault_inject`), so an element that one accepts
the others accept too. A target is given as

- the element's name, as the console shows it everywhere: `gpu-a-01-1`, `cxl-spine-1`,
  `pdu-a-1`; a link by its two ends, `cxl-spine-1 <-> mem-a-01`, or with the ports,
  `cxl-spine-1:p03 <-> mem-a-01:p0` (the name of each of two parallel links:
  `fabric.topology.names`), either way round, `<->` or `↔`;
- the manager's external id;
- the console's id (a number), when no element has that name.

`fault_targets` lists the same names for the page's suggestions. Reads only; nothing here
touches the simulated fabric itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import models

from fabric.choices import DeviceKind, DeviceState, FaultTarget
from fabric.models import Device, Enclosure, FabricManager, Link, Port, PowerFeed, Switch
from fabric.topology.names import link_names

__all__ = [
    "FAULT_MODELS",
    "FaultTargetOption",
    "fault_target_name",
    "fault_target_resolve",
    "fault_targets",
]

FAULT_MODELS: dict[str, type[models.Model]] = {
    FaultTarget.DEVICE: Device,
    FaultTarget.LINK: Link,
    FaultTarget.SWITCH: Switch,
    FaultTarget.ENCLOSURE: Enclosure,
    FaultTarget.POWER_FEED: PowerFeed,
}
MAX_ID = 2**63 - 1  # a console id beyond a bigint matches nothing (and must not reach SQL)
SUGGESTIONS_PER_KIND = 1000
_LINK_SEPARATOR = re.compile(r"\s*(?:<->|↔)\s*")
_PORTS = ("a_port__switch", "a_port__host", "a_port__enclosure")
_PORTS_B = ("b_port__switch", "b_port__host", "b_port__enclosure")


@dataclass(frozen=True, slots=True)
class FaultTargetOption:
    """One element a fault can be aimed at: its kind, console id, the name to type, and a
    hint for the suggestion list ("GPU · H100 PCIe 80GB")."""

    kind: str
    id: int
    external_id: str
    name: str
    hint: str = ""


def _kind_label(kind: str) -> str:
    return str(FaultTarget(kind).label) if kind in FaultTarget.values else kind


def _end(port: Port) -> tuple[str, str]:
    owner = port.switch or port.host or port.enclosure
    return (owner.name if owner is not None else "?", port.name)


def _links(manager_ids: Iterable[int]) -> list[Link]:
    return list(
        Link.objects.filter(manager_id__in=list(manager_ids), is_present=True)
        .select_related("a_port", "b_port", *_PORTS, *_PORTS_B)
        .order_by("pk")
    )


def _link_names(links: Sequence[Link]) -> dict[int, str]:
    """Each link's name (`fabric.topology.names.link_names`), by id."""
    return link_names({link.pk: (_end(link.a_port), _end(link.b_port)) for link in links})


def fault_target_name(obj: models.Model) -> str:
    """The name an operator knows `obj` by (a link's as in `_link_names`)."""
    if isinstance(obj, Link):
        return _link_names(_links([obj.manager_id])).get(obj.pk) or str(obj)
    return str(getattr(obj, "name", "") or getattr(obj, "external_id", ""))


def fault_targets(*, managers: Sequence[FabricManager]) -> dict[str, list[FaultTargetOption]]:
    """Every element of `managers` a fault can be aimed at, by kind, sorted by name (at
    most SUGGESTIONS_PER_KIND each): what the fault page suggests. Six queries."""
    ids = [m.pk for m in managers]
    out: dict[str, list[FaultTargetOption]] = {}
    devices = (
        Device.objects.filter(manager_id__in=ids)
        .exclude(state=DeviceState.ABSENT)
        .order_by("name")
        .values_list("pk", "external_id", "name", "kind", "model")[:SUGGESTIONS_PER_KIND]
    )
    out[FaultTarget.DEVICE] = [
        FaultTargetOption(
            FaultTarget.DEVICE, pk, ext, name, " · ".join(filter(None, [_device_kind(kind), model]))
        )
        for pk, ext, name, kind, model in devices
    ]
    links = _links(ids)
    names = _link_names(links)
    out[FaultTarget.LINK] = sorted(
        (
            FaultTargetOption(FaultTarget.LINK, link.pk, link.external_id, names[link.pk])
            for link in links
        ),
        key=lambda option: option.name,
    )[:SUGGESTIONS_PER_KIND]
    for kind, model in (
        (FaultTarget.SWITCH, Switch),
        (FaultTarget.ENCLOSURE, Enclosure),
        (FaultTarget.POWER_FEED, PowerFeed),
    ):
        rows = model._default_manager.filter(manager_id__in=ids).order_by("name")
        out[kind] = [
            FaultTargetOption(kind, pk, ext, name)
            for pk, ext, name in rows.values_list("pk", "external_id", "name")[
                :SUGGESTIONS_PER_KIND
            ]
        ]
    return out


def _device_kind(kind: str) -> str:
    return str(DeviceKind(kind).label) if kind in DeviceKind.values else kind


def fault_target_resolve(
    *, manager: FabricManager, target_type: str, target_id: int | str
) -> models.Model:
    """Find the console row a fault is aimed at (see the module docstring for the forms a
    target may take). Raises ValidationError naming `target_type` or `target_id`."""
    model = FAULT_MODELS.get(str(target_type))
    if model is None:
        raise ValidationError(
            {"target_type": f"Must be one of {', '.join(FaultTarget.values)}; got {target_type!r}."}
        )
    rows = model._default_manager.filter(manager=manager)
    kind = _kind_label(str(target_type)).lower()
    obj: models.Model | None = None
    if isinstance(target_id, int) and not isinstance(target_id, bool):
        obj = rows.filter(pk=target_id).first() if 0 < target_id <= MAX_ID else None
    elif isinstance(target_id, str) and target_id.strip():
        key = target_id.strip()
        if not key.isprintable():
            raise ValidationError({"target_id": "A name has no control characters."})
        obj = rows.filter(external_id=key).first()
        if obj is None:
            obj = _link_by_name(manager, key) if model is Link else _by_name(rows, key, kind)
        number = _console_id(key)
        if obj is None and number is not None:
            obj = rows.filter(pk=number).first()
    else:
        raise ValidationError({"target_id": f"Give the {kind}'s name, external id or console id."})
    if obj is None:
        example = " (its two ends, e.g. cxl-spine-1 <-> mem-a-01)" if model is Link else ""
        raise ValidationError(
            {
                "target_id": f"No {kind} {str(target_id)[:200]!r} on fabric manager "
                f"{manager.name}; give its name{example} or external id, or run an inventory "
                "sync if it was added recently."
            }
        )
    return obj


def _console_id(key: str) -> int | None:
    """`key` as a console id when it is one ("12"; not "²", not 40 digits)."""
    if key.isascii() and key.isdigit() and len(key) <= 19 and 0 < int(key) <= MAX_ID:
        return int(key)
    return None


def _by_name(rows: models.QuerySet[models.Model], key: str, kind: str) -> models.Model | None:
    matches = list(rows.filter(name=key)[:2])
    if len(matches) > 1:
        raise ValidationError(
            {"target_id": f"Several {kind}s are named {key!r}; use the external id."}
        )
    return matches[0] if matches else None


def _link_by_name(manager: FabricManager, key: str) -> Link | None:
    """The link `key` names by its ends ("a <-> b", "a:p1 <-> b:p2", either way round)."""
    sides = _LINK_SEPARATOR.split(key)
    if len(sides) != 2 or not all(sides):
        return None
    wanted = [
        tuple(side.strip().rsplit(":", 1)) if ":" in side else (side.strip(),) for side in sides
    ]

    def matches(end: tuple[str, str], want: tuple[str, ...]) -> bool:
        return end[0] == want[0] and (len(want) == 1 or end[1] == want[1])

    found = []
    for link in _links([manager.pk]):
        a, b = _end(link.a_port), _end(link.b_port)
        if (matches(a, wanted[0]) and matches(b, wanted[1])) or (
            matches(a, wanted[1]) and matches(b, wanted[0])
        ):
            found.append(link)
    if len(found) > 1:
        names = _link_names(_links([manager.pk]))
        raise ValidationError(
            {
                "target_id": f"{len(found)} links join {sides[0]} and {sides[1]}; name the ports: "
                + ", ".join(names[link.pk] for link in found[:4])
                + "."
            }
        )
    return found[0] if found else None
