"""The controller against a real API server (tests/support/kube_server.py): Kubernetes'
apiextensions-apiserver on etcd, client certificates, the DRA objects as CRD stand-ins, and
the `kubernetes` client the command ships with. The test plays the cluster's admin (the
docs' DeviceClass and ResourceClaimTemplate), the claim controller (a claim from the
template for a pod) and the scheduler (the claim's allocation, written to its status).

Skipped on a machine without the tier's binaries (`make kube-tier` builds them); CI builds
them and runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from composer.choices import CompositionState, JobKind
from composer.kubernetes.api import ClientApi, Conflict
from composer.kubernetes.controller import Controller, Report
from composer.kubernetes.leader import Elector
from composer.models import Composition, Job, KubernetesClaim, KubernetesController
from composer.services.health_poll import health_poll_run
from fabric.choices import DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager, Host
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from fabric.simulator.faults import fault_inject
from tests.fabric.simulated_world import simulated_manager
from tests.support.kube_cluster import Cluster, docs_manifests
from tests.support.kube_rbac import RbacWebhook
from tests.support.kube_server import CONTROLLER_USER, KubeServer, binaries_or_skip
from tests.support.worker import ROOT, WorkerProcess, process_env, process_stop, spawn_logged

DOCS = ROOT / "docs" / "kubernetes.md"


def test_without_the_binaries_the_tier_says_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COMPOSER_KUBE_TIER", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr("tests.conftest.IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="make kube-tier"):
        binaries_or_skip()
    monkeypatch.setattr("tests.conftest.IN_CI", True)  # CI must provide it
    with pytest.raises(pytest.fail.Exception, match="apiextensions-apiserver, etcd"):
        binaries_or_skip()


@pytest.fixture(scope="module")
def rbac() -> Iterator[RbacWebhook]:
    """The docs' RBAC, the only rights of the controller's credentials."""
    with RbacWebhook.from_docs(DOCS, CONTROLLER_USER).serving() as webhook:
        yield webhook


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, rbac: RbacWebhook) -> Iterator[KubeServer]:
    folder = tmp_path_factory.mktemp("kube-tier")
    with KubeServer.start(folder, authorizer=rbac.url) as running:
        yield running


@pytest.fixture
def cluster(server: KubeServer, rbac: RbacWebhook) -> Iterator[Cluster]:
    """The stand-in cluster, emptied, with the docs' DeviceClass and ResourceClaimTemplate.
    Afterwards: the controller was never refused a call (the docs' RBAC is enough)."""
    cluster = Cluster(server)
    cluster.clear()
    manifests = docs_manifests(DOCS)
    cluster.apply(manifests["DeviceClass"])
    cluster.apply(manifests["ResourceClaimTemplate"])
    rbac.decisions.clear()
    yield cluster
    assert not rbac.denied(), rbac.denied()


CLAIM = ("ml", "trainer-0-gpus")  # the claim the docs' pod gets


def the_docs_pod_is_scheduled(cluster: Cluster, node: str) -> dict[str, Any]:
    """The docs' pod on `node`: its claim made from the docs' template, allocated two of the
    published H100s. Returns the claim as created."""
    manifests = docs_manifests(DOCS)
    claim = cluster.pod_scheduled(manifests["Pod"], manifests["ResourceClaimTemplate"], node)
    assert (claim["metadata"]["namespace"], claim["metadata"]["name"]) == CLAIM
    return claim


@pytest.mark.django_db
def test_slices_claims_faults_and_release_through_a_real_api_server(
    server: KubeServer, cluster: Cluster, django_capture_on_commit_callbacks: Any
) -> None:
    from django.core.management import call_command

    call_command("seed_demo", verbosity=0)
    api = ClientApi(server.api_client("controller"))

    def run() -> Any:  # one pass, the jobs it queues run as a worker would (eager)
        with django_capture_on_commit_callbacks(execute=True):
            return Controller(api, default_tenant="acme").reconcile()

    first = run()

    # Slices appear for the demo's free GPUs: one pool per model, on the fabric's nodes.
    free_gpus = Device.objects.filter(kind="gpu", state=DeviceState.FREE)
    assert {f"gpu-{pk}" for pk in free_gpus.values_list("pk", flat=True)} == {
        name for _, name in cluster.published() if name.startswith("gpu-")
    }
    pools = {s["spec"]["pool"]["name"] for s in cluster.slices()}
    assert {p for p in pools if "h100" in p} and first.pools == sorted(pools)
    for published in cluster.slices():
        assert published["spec"]["driver"] == "fabric.composer.dev"
        (term,) = published["spec"]["nodeSelector"]["nodeSelectorTerms"]
        assert term["matchExpressions"][0]["key"] == "composer.dev/fabric"
        device = published["spec"]["devices"][0]
        assert device["bindsToNode"] is True
        assert device["bindingConditions"] == ["FabricDeviceReady"]

    # A pod's claim allocated to two of them: a ready composition on the node's host.
    host = Host.objects.order_by("name").first()
    assert host is not None
    claim = the_docs_pod_is_scheduled(cluster, node=host.name)
    run()
    record = KubernetesClaim.objects.get(uid=claim["metadata"]["uid"])
    composition = record.composition
    assert composition is not None and composition.host == host
    assert composition.state == CompositionState.READY, composition.failure_reason
    assert (record.namespace, record.name, record.pods) == ("ml", "trainer-0-gpus", ["trainer-0"])
    run()
    conditions = cluster.conditions(*CLAIM)
    assert len(conditions) == 2
    assert set(map(tuple, conditions.values())) == {("FabricDeviceReady",)}
    assert not set(conditions) & {name for _, name in cluster.published()}  # no longer offered

    # A fault on a bound GPU: the claim's devices are failed, with the reason.
    bound = composition.allocations.order_by("pk").first()
    assert bound is not None and bound.device is not None
    manager = bound.device.manager
    fault_inject(manager=manager, target_type="device", target_id=bound.device.name, action="fail")
    health_poll_run(manager=manager)
    run()
    conditions = cluster.conditions(*CLAIM)
    assert set(map(tuple, conditions.values())) == {("FabricDeviceFailed",)}, conditions

    # The claim deleted: its composition released.
    cluster.claim_delete(*CLAIM)
    report = run()
    composition.refresh_from_db()
    assert report.released == ["ml/trainer-0-gpus"]
    assert composition.state == CompositionState.RELEASED
    run()  # given back: the healthy device offered again, the failed one not
    offered = {name for _, name in cluster.published()}
    assert set(conditions) - offered == {f"gpu-{bound.device_id}"}


@pytest.mark.django_db
def test_stale_writes_are_conflicts_other_drivers_entries_stay_and_one_replica_leads(
    server: KubeServer, cluster: Cluster, synced: FabricManager, acme: Any
) -> None:
    api = ClientApi(server.api_client("controller"))
    Controller(api).publish(Report())
    (written,) = [s for s in api.slices_list() if "h100" in s["spec"]["pool"]["name"]]
    changed = {**written, "metadata": {**written["metadata"], "labels": {"by": "someone"}}}
    api.slice_replace(changed)  # as read: accepted
    with pytest.raises(Conflict):
        api.slice_replace(written)  # read before that write: refused

    claim = the_docs_pod_is_scheduled(cluster, node="host-a-01")
    theirs = {"driver": "nic.example.com", "pool": "p", "device": "nic-0", "conditions": []}
    meta = claim["metadata"]
    cluster.custom.patch_namespaced_custom_object_status(
        "resource.k8s.io", "v1", "ml", "resourceclaims", meta["name"],
        {"status": {"devices": [theirs]}},
    )  # fmt: skip
    with pytest.raises(Conflict):  # the claim changed since it was created
        api.claim_status_set("ml", meta["name"], [], meta["resourceVersion"])
    Controller(api, default_tenant="acme").reconcile()
    devices = cluster.claim("ml", meta["name"])["status"]["devices"]
    assert devices[0] == theirs and len(devices) == 3

    replicas = [Elector(api, "composer", "controller", name) for name in ("a", "b")]
    assert [replica.lead() for replica in replicas] == [True, False]
    assert [replica.lead() for replica in replicas] == [True, False]  # renewed, still held


def test_the_controller_s_credentials_may_do_only_what_the_docs_grant(
    server: KubeServer, rbac: RbacWebhook
) -> None:
    from kubernetes import client

    custom = client.CustomObjectsApi(server.api_client("controller"))
    rbac.decisions.clear()
    custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceclaims")  # granted
    with pytest.raises(client.exceptions.ApiException) as refused:
        custom.list_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses")
    assert refused.value.status == 403
    with pytest.raises(client.exceptions.ApiException) as refused:
        custom.delete_namespaced_custom_object("resource.k8s.io", "v1", "ml", "resourceclaims", "x")
    assert refused.value.status == 403
    # (A grant may come from the server's cache of the webhook's answers, not asked again.)
    assert [(d.verb, d.resource) for d in rbac.denied()] == [
        ("list", "deviceclasses"),
        ("delete", "resourceclaims"),
    ]


# --- A controller killed in the middle of an attach ------------------------------------------


def controller_process(
    server: KubeServer, redis_url: str, log: Path, identity: str
) -> subprocess.Popen[bytes]:
    """`manage.py k8s_controller` on the test database, the Redis the worker reads, and the
    stand-in cluster, a pass a second."""
    env = process_env(redis_url, connection.settings_dict)
    argv = [
        sys.executable, "manage.py", "k8s_controller",
        "--kubeconfig", str(server.kubeconfigs["controller"]), "--tenant", "acme",
        "--interval", "1", "--watch", "0.2", "--identity", identity,
    ]  # fmt: skip
    return spawn_logged(argv, env=env, log_path=log)


def wait_until(
    what: Callable[[], Any], why: str, log: Callable[[], str], timeout_s: float = 60
) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"{why} after {timeout_s}s\n{log()}")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_controller_killed_mid_attach_resumes_without_binding_twice(
    server: KubeServer, cluster: Cluster, acme: Any, redis_url: str, tmp_path: Path
) -> None:
    manager: FabricManager = simulated_manager()
    inventory_sync(manager=manager)
    # Binds take eight seconds in the worker: the controller is killed once they started,
    # and its successor's first pass comes while they still run (it starts in about three).
    fabric = store.fabric_get("sim")
    for operation in store.OPERATIONS:
        store.latency_set(fabric=fabric, operation=operation, ms=0)
    store.latency_set(fabric=fabric, operation="bind", ms=8000)
    host = Host.objects.order_by("name").first()
    assert host is not None
    logs = [tmp_path / "controller-1.log", tmp_path / "controller-2.log"]

    def log() -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in logs if p.exists())

    slow = {"COMPOSER_TEST_LATENCY_SCALE": "1"}
    with WorkerProcess.start(redis_url=redis_url, database=connection.settings_dict, env=slow):
        first = controller_process(server, redis_url, logs[0], identity="replica-0")
        try:
            wait_until(lambda: cluster.published("H100"), "no H100 published", log)
            claim = the_docs_pod_is_scheduled(cluster, node=host.name)
            uid = claim["metadata"]["uid"]

            def binding() -> Any:
                return Composition.objects.filter(
                    kubernetes_claim__uid=uid, state=CompositionState.BINDING
                ).first()

            composition = wait_until(binding, "the claim's composition never started binding", log)
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        killed_at = timezone.now()
        composition.refresh_from_db()
        assert composition.state == CompositionState.BINDING  # killed mid-attach
        assert not any(cluster.conditions(*CLAIM).values())

        # Restarted in place (the same identity, as a restarted container: its Lease is its own).
        second = controller_process(server, redis_url, logs[1], identity="replica-0")
        try:

            def passed() -> bool:
                return KubernetesController.objects.filter(
                    identity="replica-0", last_pass_at__gt=killed_at
                ).exists()

            wait_until(passed, "the restarted controller never passed", log)
            composition.refresh_from_db()  # its first pass found the attach still under way
            assert composition.state == CompositionState.BINDING, log()
            conditions = wait_until(
                lambda: (
                    (c := cluster.conditions(*CLAIM))
                    and set(map(tuple, c.values())) == {("FabricDeviceReady",)}
                    and c
                ),
                "the claim's devices never became ready",
                log,
            )
        finally:
            process_stop(second)

    assert len(conditions) == 2
    assert Composition.objects.count() == 1
    assert Job.objects.filter(kind=JobKind.COMPOSE).count() == 1
    record = KubernetesClaim.objects.get(uid=uid)
    assert (record.composition, record.attempt) == (composition, 1)
    bindings = get_driver(manager).bindings()
    assert len(bindings) == 2 and {b.host_id for b in bindings} == {host.external_id}
