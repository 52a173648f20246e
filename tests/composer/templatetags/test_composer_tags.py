"""The console's template filters: no database needed."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest

from composer.templatetags import composer_tags as tags


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (80, "80 GiB"),
        (0, "0 GiB"),
        (1024, "1 TiB"),
        (1536, "1.5 TiB"),
        (4096, "4 TiB"),
        (None, "—"),
    ],
)
def test_gib_uses_binary_units(value: object, text: str) -> None:
    assert tags.gib(value) == text


@pytest.mark.parametrize(
    ("value", "text"), [(960, "960 GB"), (7680, "7.68 TB"), (15360, "15.36 TB"), ("x", "—")]
)
def test_gb_uses_decimal_units(value: object, text: str) -> None:
    assert tags.gb(value) == text


def test_tb_and_bandwidth() -> None:
    assert tags.tb(960) == "0.96 TB"
    assert tags.gbps(64.0) == "64 GB/s"
    assert tags.gbps(31.5) == "31.5 GB/s"


def test_percent_and_bar_widths() -> None:
    assert tags.percent(1, 3) == "33.3%"
    assert tags.percent(5, 0) == "0%"
    assert tags.percent(42.5) == "42.5%"
    assert tags.css_percent(12.345) == "12.35%"
    assert tags.css_percent(140) == "100.00%"
    assert tags.css_percent(-1) == "0.00%"


def test_duration() -> None:
    assert tags.duration(None) == "—"
    assert tags.duration(1.24) == "1.2 s"
    assert tags.duration(64) == "1 min 4 s"
    assert tags.duration(timedelta(hours=2, minutes=5)) == "2 h 5 min"


def test_device_size_follows_the_kind() -> None:
    gpu = SimpleNamespace(kind="gpu", memory_gib=80, capacity_gb=0)
    nvme = SimpleNamespace(kind="nvme", memory_gib=0, capacity_gb=3840)
    nic = SimpleNamespace(kind="nic", memory_gib=0, capacity_gb=0)
    assert tags.device_size(gpu) == "80 GiB"
    assert tags.device_size(nvme) == "3.84 TB"
    assert tags.device_size(nic) == "—"


def test_badges_carry_colour_and_label() -> None:
    assert "text-bg-danger" in tags.health_badge("critical")
    assert "Critical" in tags.health_badge("critical")
    assert "text-bg-primary" in tags.status_badge("bound")
    assert "Succeeded" in tags.status_badge("succeeded")
    assert "&lt;b&gt;" in tags.status_badge("<b>")  # unknown values are escaped, not trusted


def test_change_rows_mask_secrets() -> None:
    rows = tags.change_rows(
        {
            "health": ["ok", "warning"],
            "password": ["old-pw", "new-pw"],
            "settings": [{"api_token": "t1"}, {"api_token": "t2", "fabric": "x"}],
        }
    )
    assert ("health", "ok", "warning") in rows
    assert ("password", tags.MASK, tags.MASK) in rows
    (settings,) = [r for r in rows if r[0] == "settings"]
    assert settings[2] == {"api_token": tags.MASK, "fabric": "x"}
    assert tags.change_rows("odd") == [("", None, "odd")]


def test_job_duration_runs_on_until_the_job_finishes() -> None:
    from django.utils import timezone

    start = timezone.now() - timedelta(seconds=75)
    running = SimpleNamespace(started_at=start, finished_at=None)
    done = SimpleNamespace(started_at=start, finished_at=start + timedelta(seconds=3))
    queued = SimpleNamespace(started_at=None, finished_at=None)
    assert tags.job_duration(running).startswith("1 min")
    assert tags.job_duration(done) == "3.0 s"
    assert tags.job_duration(queued) == "—"


@pytest.mark.parametrize(
    ("value", "text", "html"),
    [
        ("gpu-a-0", "A-0", "gpu-<mark>a-0</mark>"),
        ("sw-a:p0 ↔ host-a:up0", "-a", "sw<mark>-a</mark>:p0 ↔ host<mark>-a</mark>:up0"),
        ("<b>x</b>", "b", "&lt;<mark>b</mark>&gt;x&lt;/<mark>b</mark>&gt;"),
        ("a.b", ".", "a<mark>.</mark>b"),  # the text is not a pattern
        ("plain", "", "plain"),
        (None, "x", ""),
    ],
)
def test_mark_match_marks_every_occurrence_and_escapes_the_rest(
    value: object, text: str, html: str
) -> None:
    assert tags.mark_match(value, text) == html


@pytest.mark.parametrize(
    ("kind", "measure", "value", "number", "unit", "amount"),
    [
        ("gpu", "count", 1.25, "1.25", "GPUs", "1.25 GPUs"),
        ("gpu", "count", 1, "1", "GPUs", "1 GPU"),
        ("gpu", "count", 0.125, "0.125", "GPUs", "0.125 GPUs"),
        ("nvme", "count", 2, "2", "NVMe drives", "2 NVMe drives"),
        ("nvme", "tb", 3.84, "3.84", "TB", "3.84 TB"),
        ("cxl_memory", "gib", 2048, "2,048", "GiB", "2 TiB"),
        ("banana", "count", 3, "3", "devices", "3 devices"),
        ("gpu", "count", None, "—", "GPUs", "—"),
    ],
)
def test_quota_figures_keep_thousandths_and_name_their_unit(
    kind: str, measure: str, value: object, number: str, unit: str, amount: str
) -> None:
    """A GPU share is counted in thousandths: the figures never round it away."""
    line = SimpleNamespace(kind=kind, measure=measure)
    assert tags.quota_number(value) == number
    assert tags.quota_unit(line) == unit
    assert tags.quota_amount(value, line) == amount
