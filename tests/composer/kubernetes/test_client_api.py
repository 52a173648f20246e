"""`ClientApi`, the real `kubernetes` client, against a small HTTP stand-in for the API
server: the REST paths and verbs the controller's RBAC names, a stale write answered 409
and seen as a Conflict, a missing object answered 404 and seen as None, and the claim's
status written as a merge patch on the status subresource."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from composer.kubernetes.api import ClientApi, Conflict

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/composer/leases"


class Server(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.objects: dict[str, dict[str, Any]] = {}  # path -> object
        self.seen: list[tuple[str, str, str]] = []  # (verb, path, content type)
        self.version = 0

    def stamped(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        body.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        return body


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return dict(json.loads(self.rfile.read(length) or b"{}"))

    def _seen(self) -> str:
        path = self.path.split("?")[0]
        self.server.seen.append((self.command, path, self.headers.get("Content-Type", "")))
        return path

    def do_GET(self) -> None:
        path = self._seen()
        if path in (SLICES, CLAIMS):
            items = [o for p, o in self.server.objects.items() if p.startswith(path + "/")]
            self._answer(200, {"items": items, "metadata": {}})
        elif path in self.server.objects:
            self._answer(200, self.server.objects[path])
        else:
            self._answer(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

    def do_POST(self) -> None:
        path, body = self._seen(), self._body()
        target = f"{path}/{body['metadata']['name']}"
        if target in self.server.objects:
            self._answer(409, {"kind": "Status", "code": 409, "reason": "AlreadyExists"})
            return
        self.server.objects[target] = self.server.stamped(body)
        self._answer(201, self.server.objects[target])

    def do_PUT(self) -> None:
        path, body = self._seen(), self._body()
        current = self.server.objects.get(path)
        if current is None:
            self._answer(404, {"kind": "Status", "code": 404})
        elif body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            self._answer(409, {"kind": "Status", "code": 409, "reason": "Conflict"})
        else:
            self.server.objects[path] = self.server.stamped(body)
            self._answer(200, self.server.objects[path])

    def do_PATCH(self) -> None:
        path, body = self._seen(), self._body()
        claim = self.server.objects[path.removesuffix("/status")]
        version = (body.get("metadata") or {}).get("resourceVersion")
        if version and version != (claim.get("metadata") or {}).get("resourceVersion"):
            self._answer(409, {"kind": "Status", "code": 409, "reason": "Conflict"})
            return
        claim.setdefault("status", {}).update(body.get("status") or {})
        self._answer(200, self.server.stamped(claim))

    def do_DELETE(self) -> None:
        path = self._seen()
        if self.server.objects.pop(path, None) is None:
            self._answer(404, {"kind": "Status", "code": 404})
        else:
            self._answer(200, {"kind": "Status", "status": "Success"})


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()


@pytest.fixture
def api(server: Server) -> ClientApi:
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    return ClientApi(client.ApiClient(configuration))


def test_slices_are_created_listed_replaced_and_deleted_on_their_paths(
    api: ClientApi, server: Server
) -> None:
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "composer-h100-0"},
        "spec": {"driver": "fabric.composer.dev"},
    }
    api.slice_create(body)
    (listed,) = api.slices_list()
    assert listed["metadata"]["name"] == "composer-h100-0"

    api.slice_replace(listed)  # the version it read: accepted
    with pytest.raises(Conflict):
        api.slice_replace(listed)  # that version is gone now
    api.slice_delete("composer-h100-0")
    api.slice_delete("composer-h100-0")  # gone already: no error
    assert [(verb, path) for verb, path, _ in server.seen] == [
        ("POST", SLICES), ("GET", SLICES), ("PUT", f"{SLICES}/composer-h100-0"),
        ("PUT", f"{SLICES}/composer-h100-0"), ("DELETE", f"{SLICES}/composer-h100-0"),
        ("DELETE", f"{SLICES}/composer-h100-0"),
    ]  # fmt: skip


def test_a_claim_s_devices_are_written_as_a_merge_patch_of_its_status(
    api: ClientApi, server: Server
) -> None:
    path = "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/gpus"
    server.objects[f"{CLAIMS}/gpus"] = {"metadata": {"name": "gpus", "namespace": "ml"}}
    server.objects[path] = server.objects[f"{CLAIMS}/gpus"]
    assert [c["metadata"]["name"] for c in api.claims_list()] == ["gpus"]

    devices = [{"driver": "fabric.composer.dev", "pool": "p", "device": "gpu-3", "conditions": []}]
    api.claim_status_set("ml", "gpus", devices, None)

    assert server.objects[path]["status"]["devices"] == devices
    assert server.seen[-1] == ("PATCH", f"{path}/status", "application/merge-patch+json")
    read = server.objects[path]["metadata"]["resourceVersion"]
    api.claim_status_set("ml", "gpus", [], read)  # the version read: written
    with pytest.raises(Conflict):  # written by someone since: refused, read it again
        api.claim_status_set("ml", "gpus", devices, read)
    assert server.objects[path]["status"]["devices"] == []


def test_nodes_namespaces_and_leases(api: ClientApi, server: Server) -> None:
    server.objects["/api/v1/nodes/node-1"] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-1", "annotations": {"composer.dev/host": "host-a-01"}},
    }  # fmt: skip
    node = api.node_get("node-1")
    assert node is not None and node["metadata"]["annotations"]["composer.dev/host"] == "host-a-01"
    assert api.node_get("node-9") is None
    assert api.namespace_get("ml") is None

    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "composer"},
        "spec": {"holderIdentity": "a", "renewTime": "2026-12-04T12:00:00.000000Z"},
    }
    assert api.lease_get("composer", "l") is None
    api.lease_create("composer", lease)
    with pytest.raises(Conflict):
        api.lease_create("composer", lease)  # someone created it first
    read = api.lease_get("composer", "l")
    assert read is not None and read["spec"]["holderIdentity"] == "a"
    assert read["spec"]["renewTime"].startswith("2026-12-04T12:00:00")
    api.lease_replace("composer", read)
    with pytest.raises(Conflict):
        api.lease_replace("composer", read)
    assert ("POST", LEASES, "application/json") in server.seen
