"""A real Prometheus scrapes the console: it sees composer_pool_allocated move after a
compose, and loads the alerting rules of docs/monitoring/ (also checked by promtool).

Debian's `prometheus` package provides both binaries (.ci/run installs it); without them
the test is skipped (failed under CI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from composer.embedded import free_port
from fabric.models import FabricManager
from fabric.services.pools import pools_assign, pools_ensure_defaults
from fabric.services.sync import inventory_sync
from tests.conftest import require
from tests.fabric.simulated_world import simulated_manager
from tests.support.compose import composed

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "docs" / "monitoring" / "composer-rules.yml"
PROMETHEUS = os.environ.get("PROMETHEUS_PATH", "/usr/bin/prometheus")
PROMTOOL = os.environ.get("PROMTOOL_PATH", "/usr/bin/promtool")
TOKEN = "prometheus-test-token"
L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


def binaries() -> None:
    for path in (PROMETHEUS, PROMTOOL):
        require(
            bool(shutil.which(path)),
            f"needs {path}: Debian's prometheus package (apt-get install prometheus; "
            ".ci/run installs it)",
        )


@pytest.fixture
def prometheus(live_server: Any, settings: Any, tmp_path: Path) -> Iterator[str]:
    """A Prometheus on loopback scraping the live console every second with the metrics
    token, with the rules loaded; yields its address."""
    binaries()
    settings.COMPOSER_METRICS_TOKEN = TOKEN
    target = urllib.parse.urlsplit(live_server.url).netloc
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [
                    {
                        "job_name": "composer",
                        "metrics_path": "/metrics",
                        "authorization": {"credentials": TOKEN},
                        "static_configs": [{"targets": [target]}],
                    }
                ],
            }
        )
    )
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    address = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not _answers(f"{address}/-/ready"):
            assert process.poll() is None, (tmp_path / "prometheus.log").read_text()
            assert time.monotonic() < deadline, "Prometheus did not become ready"
            time.sleep(0.2)
        yield address
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def api(address: str, path: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{address}/api/v1/{path}{query}", timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def value_when(address: str, query: str, accept: Any, timeout_s: float = 30.0) -> float:
    """Query Prometheus until `accept(value)` holds; return that value."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        result = api(address, "query", query=query)["result"]
        if result:
            last = float(result[0]["value"][1])
            if accept(last):
                return last
        time.sleep(0.5)
    raise AssertionError(f"{query}: last value {last}")


@pytest.fixture
def pooled() -> FabricManager:
    manager = simulated_manager(name="sim-prom", fabric="sim-prom")
    inventory_sync(manager=manager)
    pools_ensure_defaults(manager=manager)
    pools_assign(manager=manager)
    return manager


def test_the_alerting_rules_pass_promtool() -> None:
    binaries()
    result = subprocess.run(
        [PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_each_alerting_rule_fires_when_it_should_and_not_before() -> None:
    """docs/monitoring/composer-rules.test.yml: promtool's unit tests of every rule."""
    binaries()
    tests = RULES.with_name("composer-rules.test.yml")
    result = subprocess.run(
        [PROMTOOL, "test", "rules", str(tests)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = set(re.findall(r"- alert: (\w+)", RULES.read_text()))
    assert alerts <= set(re.findall(r"alertname: (\w+)", tests.read_text()))


def test_prometheus_sees_a_pool_allocated_move_after_a_compose_and_loads_the_rules(
    prometheus: str, pooled: FabricManager, acme: Any, alice: Any
) -> None:
    deadline = time.monotonic() + 30
    while not (targets := api(prometheus, "targets")["activeTargets"]) or any(
        t["health"] != "up" for t in targets
    ):
        assert time.monotonic() < deadline, targets
        time.sleep(0.5)
    assert [t["labels"]["job"] for t in targets] == ["composer"]
    pool = "L40S GPUs, rack A"
    query = f'composer_pool_allocated{{pool="{pool}", unit="devices"}}'
    before = value_when(prometheus, query, lambda v: v >= 0)

    composed(tenant=acme, user=alice, name="scraped", spec=L40S)

    after = value_when(prometheus, query, lambda v: v > before)
    assert after == before + 1
    # The token is what let it in: the same scrape without it is refused.
    unauthorised = urllib.request.Request(targets[0]["scrapeUrl"])
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(unauthorised, timeout=5)
    assert refused.value.code == 401

    groups = api(prometheus, "rules")["groups"]
    alerts = {rule["name"] for group in groups for rule in group["rules"]}
    assert {
        "ComposerPoolNearlyFull",
        "ComposerManagerNotSynced",
        "ComposerComposeSlow",
        "ComposerJobsStuckQueued",
    } <= alerts
    assert all(rule["health"] != "err" for g in groups for rule in g["rules"]), groups
