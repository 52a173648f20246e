"""A tenant sees its quotas before it asks: on the dashboard (its tenants' quotas, what each
uses, what is left) and beside the request form (the tenant picked there), with the figures
the request's quota check enforces; never another tenant's. Operators get a short summary."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from composer.choices import Role
from composer.models import Quota, Tenant
from composer.selectors.quotas import quota_usage
from composer.services.compositions import composition_request
from fabric.models import FabricManager
from tests.factories.composer import MembershipFactory
from tests.support.api import count_queries
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db

DASHBOARD = reverse("composer:dashboard")
FORM = reverse("composer:composition_create")
PANEL = reverse("composer:composition_quotas")
HTMX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def quotas(acme: Any, globex: Any) -> dict[str, Quota]:
    return {
        "acme_gpu": Quota.objects.create(tenant=acme, kind="gpu", max_count=4),
        "acme_mem": Quota.objects.create(tenant=acme, kind="cxl_memory", max_memory_gib=512),
        "acme_nvme": Quota.objects.create(tenant=acme, kind="nvme", max_count=2, max_storage_tb=10),
        "globex_gpu": Quota.objects.create(tenant=globex, kind="gpu", model="B200", max_count=7),
    }


@pytest.fixture
def acme_holds(synced: FabricManager, quotas: dict[str, Quota], acme: Any, alice: Any) -> None:
    """Acme holds a whole GPU, a quarter of another and 256 GiB of CXL memory."""
    composition_request(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "count": 1}], "memory_gib": 256},
        name="whole",
    )
    composition_request(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "share": 250}]},
        name="quarter",
    )


def _rows(html: str) -> dict[tuple[str, str], dict[str, str]]:
    """The quota table's rows by (quota id, measure): the unit and the text of each figure."""
    rows = {}
    for match in re.finditer(
        r'<tr class="quota-row[^"]*" data-quota="(\d+)" data-measure="(\w+)">(.*?)</tr>',
        html,
        re.S,
    ):
        cells = {
            name: re.sub(r"<[^>]+>", " ", text)
            for name, text in re.findall(
                r'<td class="num quota-(used|booked|left|limit)">(.*?)</td>', match.group(3), re.S
            )
        }
        unit = re.search(r'<span class="quota-unit">in ([^<]*)</span>', match.group(3))
        cells["unit"] = unit.group(1) if unit else ""
        rows[(match.group(1), match.group(2))] = {k: " ".join(v.split()) for k, v in cells.items()}
    return rows


def _card(html: str) -> str:
    """The dashboard's "Your quotas" card."""
    assert 'id="quota-card"' in html
    return html.split('id="quota-card"', 1)[1].split('id="pool-capacity"', 1)[0]


def test_a_member_sees_its_quotas_with_what_it_uses_and_what_is_left(
    acme_holds: None, quotas: dict[str, Quota], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    card = _card(client_as(alice).get(DASHBOARD).content.decode())
    rows = _rows(card)
    gpu, mem, nvme = (str(quotas[name].pk) for name in ("acme_gpu", "acme_mem", "acme_nvme"))

    def row(unit: str, *figures: str) -> dict[str, str]:
        named = zip(("used", "booked", "left", "limit"), figures, strict=True)
        return {"unit": unit, **dict(named)}

    # A 250/1000 share counts as a quarter of a GPU, as the request's quota check counts it.
    assert rows[(gpu, "count")] == row("GPUs", "1.25", "0", "2.75", "4")
    assert rows[(mem, "gib")] == row("GiB", "256", "0", "256", "512")
    # An NVMe quota limiting drives and TB has a row for each.
    assert rows[(nvme, "count")] == row("NVMe drives", "0", "0", "2", "2")
    assert rows[(nvme, "tb")] == row("TB", "0", "0", "10", "10")
    assert len(rows) == 4
    assert 'aria-label="GPU: 31.2% of the limit in use"' in card


def test_the_figures_are_the_ones_the_quota_check_enforces(
    acme_holds: None, quotas: dict[str, Quota], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    usage = quota_usage([quotas["acme_gpu"], quotas["acme_mem"]])
    [entry] = client_as(alice).get(DASHBOARD).context["member_quotas"]
    lines = {(use.quota.pk, line.measure): line for use in entry.quotas for line in use.lines}
    assert lines[(quotas["acme_gpu"].pk, "count")].used == usage[quotas["acme_gpu"].pk]["count"]
    assert lines[(quotas["acme_mem"].pk, "gib")].used == 256
    assert lines[(quotas["acme_gpu"].pk, "count")].left == 2.75


def test_what_is_booked_ahead_is_shown_and_taken_from_what_is_left(
    acme_holds: None, quotas: dict[str, Quota], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    """A nightly booking of two GPUs: the card shows them booked, and "left" is what the
    request's quota check lets a composition made now ask for (it stands beside them)."""
    from datetime import timedelta

    from django.utils import timezone

    from composer.errors import QuotaExceeded
    from composer.services.bookings import booking_request
    from composer.services.composition_checks import composition_check_quotas

    start = (timezone.now() + timedelta(days=1)).replace(microsecond=0)
    booking_request(
        tenant=quotas["acme_gpu"].tenant,
        requested_by=alice,
        name="nightly",
        spec={"items": [{"kind": "gpu", "count": 2}]},
        starts_at=start,
        ends_at=start + timedelta(hours=8),
        time_zone="UTC",
        recurrence="daily",
        until=(start + timedelta(days=2)).date(),
    )
    rows = _rows(_card(client_as(alice).get(DASHBOARD).content.decode()))
    gpu = rows[(str(quotas["acme_gpu"].pk), "count")]
    assert (gpu["used"], gpu["booked"], gpu["left"], gpu["limit"]) == ("1.25", "2", "0.75", "4")
    acme = quotas["acme_gpu"].tenant
    ask = {"items": [{"kind": "gpu", "count": 1}], "memory_gib": 0, "storage_tb": 0}
    with pytest.raises(QuotaExceeded, match=r"by 0\.25"):
        composition_check_quotas(tenant=acme, spec=ask)


@pytest.mark.parametrize("who", TENANTS)
def test_no_member_sees_another_tenants_quotas(
    who: str,
    acme_holds: None,
    quotas: dict[str, Quota],
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    user = persona(who)
    client = client_as(user)
    own = {"alice": "acme", "bob": "acme", "carol": "globex"}[who]
    card = _card(client.get(DASHBOARD).content.decode())
    shown = {int(pk) for pk, _ in _rows(card)}
    assert shown == {q.pk for name, q in quotas.items() if name.startswith(own)}
    other = "Globex" if own == "acme" else "Acme"
    assert other not in card and ("B200" in card) == (own == "globex")
    # The form's panel: another tenant's is a 404, as if it did not exist.
    foreign = quotas["globex_gpu" if own == "acme" else "acme_gpu"].tenant
    assert client.get(PANEL, {"tenant": foreign.pk}, **HTMX).status_code == 404
    mine = quotas[f"{own}_gpu"].tenant
    assert client.get(PANEL, {"tenant": mine.pk}, **HTMX).status_code == 200


def test_a_tenant_without_quotas_is_told_that_nothing_limits_it(
    acme: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    card = _card(client.get(DASHBOARD).content.decode())
    assert "Acme has no quotas: nothing limits what it may request but what is free." in card
    assert "<table" not in card
    panel = client.get(FORM).content.decode()
    assert 'id="quota-panel-empty"' in panel
    assert "Acme has no quotas: nothing limits this request but what is free." in panel


def test_a_member_of_two_tenants_sees_each_and_the_form_shows_the_one_picked(
    quotas: dict[str, Quota],
    acme: Any,
    globex: Any,
    alice: Any,
    client_as: Callable[[Any], Client],
) -> None:
    MembershipFactory(user=alice, tenant=globex, role=Role.MEMBER)
    client = client_as(alice)
    html = client.get(DASHBOARD).content.decode()
    card = _card(html)
    assert '<div class="quota-tenant-name">Acme</div>' in card
    assert '<div class="quota-tenant-name">Globex</div>' in card
    assert {int(pk) for pk, _ in _rows(card)} == {q.pk for q in quotas.values()}

    form = client.get(FORM).content.decode()
    # The first tenant is the one the select shows picked; the panel asks for itself again,
    # with the select's value, when the select changes.
    assert f'id="quota-panel" data-tenant="{acme.pk}"' in form
    select = re.search(r'<select name="tenant"[^>]*>', form)
    assert select is not None and 'id="id_tenant"' in select.group(0)
    panel_tag = re.search(r'<div class="card console-card" id="quota-panel"[^>]*>', form)
    assert panel_tag is not None
    assert f'hx-get="{PANEL}"' in panel_tag.group(0)
    assert 'hx-include="#id_tenant"' in panel_tag.group(0)
    assert 'hx-sync="this:replace"' in panel_tag.group(0)
    panel = client.get(PANEL, {"tenant": globex.pk}, **HTMX).content.decode()
    assert "Quotas of Globex" in panel and "GPU (B200)" in panel
    assert {int(pk) for pk, _ in _rows(panel)} == {quotas["globex_gpu"].pk}
    # A form sent back with errors (no htmx) shows the panel of the tenant it was sent for.
    sent_back = client.post(FORM, {"tenant": globex.pk, "name": ""}).content.decode()
    assert f'id="quota-panel" data-tenant="{globex.pk}"' in sent_back


def test_the_request_form_shows_what_is_left_before_asking(
    acme_holds: None, quotas: dict[str, Quota], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    form = client_as(alice).get(FORM).content.decode()
    assert "Quotas of Acme" in form
    rows = _rows(form.split('id="quota-panel"', 1)[1])
    assert rows[(str(quotas["acme_gpu"].pk), "count")]["left"] == "2.75"
    assert "A request that asks for more than is <strong>left</strong> is refused." in form


def test_a_used_up_quota_says_none_left_and_a_lowered_one_by_how_much_it_is_over(
    acme_holds: None, quotas: dict[str, Quota], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    Quota.objects.filter(pk=quotas["acme_mem"].pk).update(max_memory_gib=256)
    Quota.objects.filter(pk=quotas["acme_gpu"].pk).update(max_count=1)
    acme = quotas["acme_gpu"].tenant
    panel = client_as(alice).get(PANEL, {"tenant": acme.pk}, **HTMX).content.decode()
    rows = _rows(panel)
    assert rows[(str(quotas["acme_mem"].pk), "gib")]["left"] == "0 none left"
    assert rows[(str(quotas["acme_gpu"].pk), "count")]["left"] == "0 over by 0.25"
    assert panel.count('class="quota-row quota-full"') == 2


def test_a_quota_without_a_limit_shows_its_use_and_no_limit(
    acme: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    quota = Quota.objects.create(tenant=acme, kind="cxl_memory")
    rows = _rows(_card(client_as(alice).get(DASHBOARD).content.decode()))
    assert rows[(str(quota.pk), "gib")] == {
        "unit": "GiB",
        "used": "0",
        "booked": "0",
        "left": "no limit",
        "limit": "none",
    }


@pytest.mark.parametrize("value", ["", "acme", "²", "-1"])
def test_the_panel_names_the_field_for_a_tenant_that_is_not_an_id(
    value: str, acme: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(PANEL, {"tenant": value}, **HTMX)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Tenant: choose the tenant whose quotas to show." in html
    # The panel says which value it answered, so the page does not ask for it again and again;
    # and it still carries how to ask, so picking a tenant next redraws it.
    assert f'data-tenant="{escape(value)}"' in html and "hx-get=" in html


def test_the_panel_is_a_404_for_a_tenant_that_does_not_exist(
    acme: Any, alice: Any, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    for user in (alice, admin_user):
        client = client_as(user)
        assert client.get(PANEL, {"tenant": "99999999999999999999999"}).status_code == 404
        assert client.get(PANEL, {"tenant": acme.pk + 1000}).status_code == 404


def test_the_panel_needs_a_login(acme: Any, client: Client) -> None:
    response = client.get(PANEL, {"tenant": acme.pk})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_operators_see_every_tenants_panel_and_a_summary_on_the_dashboard(
    acme_holds: None,
    quotas: dict[str, Quota],
    globex: Any,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(admin_user)
    response = client.get(DASHBOARD)
    html = response.content.decode()
    assert 'id="quota-card"' not in html
    summary = html.split('id="quota-summary"', 1)[1].split("</ul>", 1)[0]
    # Acme's fullest quota is its CXL memory (half used), before Globex's unused GPUs.
    assert summary.index("Acme") < summary.index("Globex")
    assert "CXL memory: 256 GiB of 512 GiB" in summary
    assert "GPU (B200): 0 GPUs of 7 GPUs" in summary
    panel = client.get(PANEL, {"tenant": globex.pk}, **HTMX)
    assert panel.status_code == 200 and "Quotas of Globex" in panel.content.decode()


def test_the_operators_summary_shows_the_fullest_tenants_and_links_the_rest(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    for n in range(8):
        tenant = Tenant.objects.create(name=f"T{n}", slug=f"t{n}")
        Quota.objects.create(tenant=tenant, kind="gpu", max_count=8)
    html = client_as(admin_user).get(DASHBOARD).content.decode()
    summary = html.split('id="quota-summary"', 1)[1].split("</ul>", 1)[0]
    assert summary.count("list-group-item py-2") == 7  # six tenants and the link
    assert "2 more tenants with quotas" in summary


def test_no_summary_when_no_tenant_has_quotas(
    acme: Any, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    assert 'id="quota-summary"' not in client_as(admin_user).get(DASHBOARD).content.decode()


@pytest.mark.parametrize("page", ["dashboard", "form", "panel", "operator"])
def test_the_quotas_cost_the_same_queries_for_one_quota_and_many(
    page: str,
    acme: Any,
    globex: Any,
    alice: Any,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    MembershipFactory(user=alice, tenant=globex, role=Role.MEMBER)
    Quota.objects.create(tenant=acme, kind="gpu", max_count=4)
    client = client_as(admin_user if page == "operator" else alice)
    url, data = {
        "dashboard": (DASHBOARD, {}),
        "operator": (DASHBOARD, {}),
        "form": (FORM, {}),
        "panel": (PANEL, {"tenant": acme.pk}),
    }[page]
    client.get(url, data)  # sessions, caches
    few = count_queries(lambda: client.get(url, data))
    for model in ("a", "b", "c", "d", "e"):
        Quota.objects.create(tenant=acme, kind="gpu", model=model, max_count=1)
        Quota.objects.create(tenant=globex, kind="nvme", model=model, max_storage_tb=1)
    Quota.objects.create(tenant=acme, kind="cxl_memory", max_memory_gib=64)
    many = count_queries(lambda: client.get(url, data))
    assert many == few
