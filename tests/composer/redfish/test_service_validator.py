"""DMTF's Redfish Service Validator passes Composer's Redfish service over the whole tree of
the demo data centre, read as an operator (everything) and as a tenant member (its own
systems and the blocks it may draw from): no failure, no warning.

The CSDL is read in place from `shared/data/redfish-csdl` (or $REDFISH_CSDL); the test
skips, naming that folder, where it is absent (CI has it). One validator run per identity
per module (module-scoped fixtures): each walks every resource.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.redfish_conformance import findings, require_csdl, service_validated
from tests.support.redfish_demo import OPERATOR, TENANT, DemoService

# The demo is committed to the tests' database by the module's fixture and read over HTTP.
pytestmark = pytest.mark.django_db

# What the service root links to: each must be there and validated.
SERVICES = (
    "/redfish/v1/SessionService",
    "/redfish/v1/AccountService",
    "/redfish/v1/CompositionService",
    "/redfish/v1/Systems",
    "/redfish/v1/Chassis",
    "/redfish/v1/Fabrics",
    "/redfish/v1/TaskService",
    "/redfish/v1/EventService",
    "/redfish/v1/Registries",
)


@pytest.fixture(scope="module", params=[OPERATOR, TENANT])
def validated(
    request: pytest.FixtureRequest,
    demo_redfish: DemoService,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    """The validator's run as an operator, then as a tenant member (alice)."""
    require_csdl()
    who = request.param
    log = tmp_path_factory.mktemp(f"service-validator-{who}") / "validator.log"
    with service_validated(demo_redfish.url, who, demo_redfish.password, log) as sut:
        yield sut


def test_no_failure_and_no_warning(validated: Any) -> None:
    failed, warned = findings(validated, "FAIL"), findings(validated, "WARN")
    assert failed == [], "\n".join(failed)
    assert validated.fail_count == 0
    assert warned == [], "\n".join(warned)
    assert validated.pass_count > 0


def test_the_whole_tree_is_validated(validated: Any) -> None:
    """Every top-level service, the blocks and zones, and a composed system (alice's
    own, for the tenant) were read and checked, not only the root."""
    uris = set(validated._resources)
    for service in SERVICES:
        assert service in uris, service
    for below in (
        "/redfish/v1/CompositionService/ResourceBlocks/",
        "/redfish/v1/CompositionService/ResourceZones/",
        "/redfish/v1/Systems/",
    ):
        assert any(uri.startswith(below) for uri in uris), below
