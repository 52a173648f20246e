"""docs/monitoring/: the Grafana dashboard and the alerting rules name only series the
console serves, and docs/monitoring.md describes every alert."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.support.metrics import scrape

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[3] / "docs"
DASHBOARD = DOCS / "monitoring" / "grafana-dashboard.json"
RULES = DOCS / "monitoring" / "composer-rules.yml"
SERIES = re.compile(r"\bcomposer_[a-z_]+")
SUFFIXES = ("_bucket", "_count", "_sum", "_total")


def served(client: Client) -> set[str]:
    """Every sample name the console can serve (families are declared before any sample)."""
    families = scrape(client).families
    names = set(families)
    for name, family in families.items():
        if family.type in ("histogram", "counter"):
            names |= {name + suffix for suffix in SUFFIXES}
    return names


def test_the_dashboard_is_grafana_json_whose_panels_query_served_series(
    client: Client, synced: Any
) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] == "Composer"
    graphs = [p for p in dashboard["panels"] if p["type"] == "timeseries"]
    assert len(graphs) >= 20
    names = served(client)
    queried = set()
    for panel in graphs:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            queried |= set(SERIES.findall(target["expr"]))
    assert queried and queried <= names, queried - names
    # A panel for each family of the list.
    for family in (
        "composer_pool_allocated",
        "composer_pool_stranded",
        "composer_compositions",
        "composer_job_duration_seconds_bucket",
        "composer_driver_call_duration_seconds_bucket",
        "composer_manager_sync_age_seconds",
        "composer_alerts_open",
        "composer_devices",
        "composer_websockets_connected",
        "composer_outbox_events_pending",
        "composer_celery_queue_length",
        "composer_heartbeat_age_seconds",
    ):
        assert family in queried, family


def test_the_rules_query_served_series_and_the_guide_names_each_alert(
    client: Client, synced: Any
) -> None:
    text = RULES.read_text()
    # Served only while a family cannot be read (test_metrics shows it then).
    assert set(SERIES.findall(text)) <= served(client) | {"composer_metrics_collect_error"}
    guide = (DOCS / "monitoring.md").read_text()
    alerts = re.findall(r"- alert: (\w+)", text)
    assert len(alerts) >= 10
    for alert in alerts:
        assert f"`{alert}`" in guide, alert


def test_the_guide_lists_exactly_the_labels_each_served_series_has(
    client: Client, synced: Any
) -> None:
    client.get("/healthz")  # an HTTP request observed, so its series have samples
    families = scrape(client).families
    guide = (DOCS / "monitoring.md").read_text()
    rows = re.findall(r"^\| (`composer_[^|]+) \| [a-z, ]+ \| ([a-z_, ]*) \|", guide, re.M)
    assert len(rows) > 20
    checked = 0
    for names, labels in rows:
        listed = {label.strip() for label in labels.split(",") if label.strip()}
        for name in re.findall(r"`(composer_\w+)`", names):
            family = families.get(name.removesuffix("_total"))
            if family is None or not family.samples:
                continue
            served = {k for s in family.samples for k in s.labels} - {"le", "quantile"}
            assert served == listed, (name, served, listed)
            checked += 1
    assert checked > 15
