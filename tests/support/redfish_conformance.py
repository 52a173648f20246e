"""DMTF's Redfish conformance tools run against a live Redfish service, their findings read
back as lists a test can assert on.

- `service_validated`: the Service Validator (in this process, against the CSDL read in
  place) over the whole tree from the service root; `findings(sut, "FAIL")` lists what it
  found.
- `protocol_validated`: the Protocol Validator (its console script, in a process of its
  own: it configures the root logger and exits) and the rows of its TSV report.
- `interop_validated`: the Interop Validator (in this process) with a profile, and what
  it found.

The tools are dev dependencies; the tests that use them skip where one is missing.
"""

from __future__ import annotations

import csv
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from composer.redfish.oem import SCHEMA_FILE
from tests.support.shared_data import shared_data

CSDL = shared_data("redfish-csdl", env="REDFISH_CSDL")
OEM_SCHEMAS = SCHEMA_FILE.parent  # the CSDL of Composer's OEM extension, served by it
ZONES = "/redfish/v1/CompositionService/ResourceZones"


def require_csdl() -> Path:
    """The CSDL folder, or the test is skipped naming it."""
    if CSDL is None or not (CSDL / "ServiceRoot_v1.xml").is_file():
        pytest.skip(
            "DMTF's CSDL is not here: no shared/data/redfish-csdl beside the repository "
            "(or above it), nor $REDFISH_CSDL"
        )
    return CSDL


@contextmanager
def service_validated(url: str, username: str, password: str, log_path: Path) -> Iterator[Any]:
    """The Service Validator's run over everything reachable from `url`/redfish/v1/, as
    `username` with a session; yields its SystemUnderTest (logged out afterwards)."""
    csdl = require_csdl()
    system_under_test = pytest.importorskip("redfish_service_validator.system_under_test")
    from redfish_service_validator import logger, metadata

    with _validator_log(logger, "redfish_service_validator", log_path):
        sut = system_under_test.SystemUnderTest(
            url, username, password, 30, "Session", None, None, None, [], False
        )
        metadata.parse_schema_files(str(csdl))
        metadata.parse_schema_files(str(OEM_SCHEMAS))  # Composer's own: Oem.Composer
        sut.validate(None, "/redfish/v1/", "/redfish/v1/")
        try:
            yield sut
        finally:
            sut.logout()


def findings(sut: Any, outcome: str) -> list[str]:
    """Every result of the Service Validator's run that is `outcome` (FAIL, WARN), as
    `URI property: message`."""
    return [
        f"{uri} {prop or '(resource)'}: {result['Message']}"
        for uri, resource in sut._resources.items()
        for prop, result in resource["Results"].items()
        if result["Result"] == outcome
    ]


@dataclass(frozen=True)
class Row:
    """One line of a validator's report: which assertion or requirement, on what, and how
    it came out (PASS, FAIL, WARN, NOT_TESTED...)."""

    assertion: str
    method: str
    status: str
    uri: str
    result: str
    message: str

    def __str__(self) -> str:
        return f"{self.assertion} {self.method} {self.uri} ({self.status}): {self.message}"


def _script(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed (pip install the dev dependencies)")
    return found


def _run(argv: list[str], cwd: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )


def protocol_validated(
    url: str, username: str, password: str, report_dir: Path, timeout_s: float = 600
) -> list[Row]:
    """The Protocol Validator's run against `url` as `username`: every row of its report."""
    script = _script("rf_protocol_validator")
    report_dir.mkdir(parents=True, exist_ok=True)
    argv = [script, "-u", username, "-p", password, "-r", url]
    argv += ["--report-dir", str(report_dir), "--report-type", "tsv"]
    done = _run(argv, report_dir, timeout_s)
    (report_dir / "output.txt").write_text(done.stdout + done.stderr)
    reports = sorted(report_dir.glob("*.tsv"))
    assert reports, f"the protocol validator wrote no report:\n{done.stdout}\n{done.stderr}"
    with reports[-1].open(encoding="utf-8", newline="") as tsv:
        lines = list(csv.reader(tsv, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [Row(*line[:6]) for line in lines[1:] if len(line) >= 6]


@dataclass(frozen=True)
class InteropReport:
    """The Interop Validator's findings: per resource type of the profile, whether the
    service has one (PASS, FAIL when required and absent, SKIP when optional and absent),
    and every property or action requirement that did not pass, by URI."""

    found: dict[str, str]
    failed: list[str]
    passed: int


@contextmanager
def _validator_log(module: Any, name: str, log_path: Path) -> Iterator[None]:
    """The validator `module`'s logger pointed at `log_path` (never the `redfish`
    library's own logger, which the drivers keep quiet so that no token is logged)."""
    report = logging.FileHandler(log_path)
    report.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    validator_log = logging.getLogger(f"tests.{name}")
    validator_log.setLevel(logging.INFO)
    validator_log.propagate = False  # its report is the file, not the test's output
    validator_log.addHandler(report)
    module.logger = validator_log
    try:
        yield
    finally:
        validator_log.removeHandler(report)
        report.close()


def interop_validated(
    url: str, username: str, password: str, profile_path: Path, log_path: Path
) -> InteropReport:
    """The Interop Validator's run (in this process) against `url` as `username`, with
    the profile at `profile_path`."""
    pytest.importorskip("redfish_interop_validator")
    from redfish_interop_validator import logger, profile
    from redfish_interop_validator.system_under_test import SystemUnderTest

    with _validator_log(logger, "redfish_interop_validator", log_path):
        profile.load_profile(str(profile_path.parent), profile_path.name)
        sut = SystemUnderTest(url, username, password, 30, "Session", None, None, None, [], False)
        try:
            # The zones first: reached from the root, they are also named in the Systems
            # collection's CollectionCapabilities (RelatedItem), and the tool takes every
            # URI it meets inside a CapabilitiesObject's entry for an annotation's and
            # never validates it, so from the root alone it finds no Zone at all.
            for start in (ZONES, "/redfish/v1/"):
                sut.validate(None, start, start)
            sut.apply_global_checks()
        finally:
            sut.logout()
    found = {
        name: result["Result"].name
        for name, result in sut._service_resource_results["Results"].items()
    }
    failed = [
        f"{uri} {prop}: {result['Message']}"
        for uri, resource in sut._resources.items()
        for prop, result in resource["Results"].items()
        if result["Result"].name in ("FAIL", "WARN")
    ]
    return InteropReport(found=found, failed=failed, passed=sut.pass_count)
