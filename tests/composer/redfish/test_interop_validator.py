"""DMTF's Redfish Interop Validator checks Composer's Redfish service against the project's
composability profile (composer/redfish/profiles/): the resources, properties and actions
issue #13 promises a Redfish tool, run as an operator against the demo data centre.

Each resource type of the profile is its own case, so a report says which part of the
service is missing or short. One validator run per module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.redfish_conformance import InteropReport, interop_validated
from tests.support.redfish_demo import OPERATOR, DemoService

pytestmark = pytest.mark.django_db  # the demo is committed by the module's fixture

PROFILE = (
    Path(__file__).resolve().parents[3]
    / "composer"
    / "redfish"
    / "profiles"
    / "ComposerComposability.v1_0_0.json"
)
REQUIRED = [
    name
    for name, entry in json.loads(PROFILE.read_text())["Resources"].items()
    if entry.get("ReadRequirement", "Mandatory") == "Mandatory"
]


@pytest.fixture(scope="module")
def report(demo_redfish: DemoService, tmp_path_factory: pytest.TempPathFactory) -> InteropReport:
    log = tmp_path_factory.mktemp("interop-validator") / "validator.log"
    return interop_validated(demo_redfish.url, OPERATOR, demo_redfish.password, PROFILE, log)


def test_the_profile_is_one_dmtf_s_schema_accepts() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from redfish_interop_validator.profile_schema import profile_schema

    errors = list(
        jsonschema.Draft7Validator(profile_schema).iter_errors(json.loads(PROFILE.read_text()))
    )
    assert [error.message for error in errors] == []


@pytest.mark.parametrize("resource", REQUIRED)
def test_each_required_resource_is_served(report: InteropReport, resource: str) -> None:
    assert report.found.get(resource) == "PASS", f"{resource}: {report.found.get(resource)}"


def test_no_requirement_fails(report: InteropReport) -> None:
    """Every property and action the profile asks of the resources served is there."""
    assert report.failed == [], "\n".join(report.failed)
    assert report.passed > 0
