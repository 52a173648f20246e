"""An in-process API server for the controller's tests: the calls of
`composer.kubernetes.api.KubeApi` on dictionaries, with resourceVersions that move on
every write (a stale replace is a Conflict, as the real server's 409)."""

from __future__ import annotations

import copy
from typing import Any

from composer.kubernetes.api import Conflict


class FakeKube:
    def __init__(self) -> None:
        self.slices: dict[str, dict[str, Any]] = {}
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.writes: list[tuple[str, str]] = []  # (verb, name), in order

    def _stamp(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(self.version)
        return body

    # --- the KubeApi calls ---------------------------------------------------------
    def slices_list(self) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self.slices.values()))

    def slice_create(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        assert name not in self.slices, f"{name} exists"
        self.slices[name] = self._stamp(body)
        self.writes.append(("create", name))

    def slice_replace(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        current = self.slices[name]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict(name)
        self.slices[name] = self._stamp(body)
        self.writes.append(("replace", name))

    def slice_delete(self, name: str) -> None:
        self.slices.pop(name, None)
        self.writes.append(("delete", name))

    def claims_list(self) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self.claims.values()))

    def claim_status_set(
        self, namespace: str, name: str, devices: list[dict[str, Any]], version: str | None
    ) -> None:
        claim = self.claims[(namespace, name)]
        if version is not None and version != claim["metadata"].get("resourceVersion"):
            raise Conflict(name)
        claim.setdefault("status", {})["devices"] = copy.deepcopy(devices)
        self.version += 1
        claim["metadata"]["resourceVersion"] = str(self.version)
        self.writes.append(("status", f"{namespace}/{name}"))

    def node_get(self, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.nodes.get(name))

    def namespace_get(self, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.namespaces.get(name))

    def lease_get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.leases.get((namespace, name)))

    def lease_create(self, namespace: str, body: dict[str, Any]) -> None:
        key = (namespace, body["metadata"]["name"])
        if key in self.leases:
            raise Conflict(key[1])
        self.leases[key] = self._stamp(body)

    def lease_replace(self, namespace: str, body: dict[str, Any]) -> None:
        key = (namespace, body["metadata"]["name"])
        current = self.leases[key]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict(key[1])
        self.leases[key] = self._stamp(body)

    # --- what a test plays: the scheduler and the cluster's admin ------------------
    def node_add(self, name: str, *, host: str | None = None, fabric: str = "sim") -> None:
        annotations = {"composer.dev/host": host} if host else {}
        self.nodes[name] = {
            "metadata": {
                "name": name,
                "labels": {"composer.dev/fabric": fabric},
                "annotations": annotations,
            }
        }

    def namespace_add(self, name: str, tenant: str | None = None) -> None:
        labels = {"composer.dev/tenant": tenant} if tenant else {}
        self.namespaces[name] = {"metadata": {"name": name, "labels": labels}}

    def claim_allocate(
        self,
        namespace: str,
        name: str,
        *,
        uid: str,
        node: str,
        devices: list[tuple[str, str]],
        driver: str = "fabric.composer.dev",
        pod: str = "trainer-0",
    ) -> None:
        """A claim as the scheduler leaves it after allocating `devices` on `node`."""
        claim = self.claims.setdefault(
            (namespace, name),
            {"metadata": {"name": name, "namespace": namespace, "uid": uid}, "status": {}},
        )
        claim["status"]["allocation"] = {
            "devices": {
                "results": [
                    {"request": "gpus", "driver": driver, "pool": pool, "device": device}
                    for pool, device in devices
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": pod, "uid": "pod-uid"}]
        self.version += 1
        claim["metadata"]["resourceVersion"] = str(self.version)

    def claim_deallocate(self, namespace: str, name: str) -> None:
        """What the scheduler does after a reschedule: the allocation is taken back."""
        claim = self.claims[(namespace, name)]
        claim["status"] = {}
        self.version += 1
        claim["metadata"]["resourceVersion"] = str(self.version)

    def claim_delete(self, namespace: str, name: str) -> None:
        self.claims.pop((namespace, name), None)

    def conditions(self, namespace: str, name: str) -> dict[str, list[str]]:
        """{device: [the condition types that are True]} of a claim."""
        status = self.claims[(namespace, name)].get("status") or {}
        return {
            d["device"]: [c["type"] for c in d["conditions"] if c["status"] == "True"]
            for d in status.get("devices") or []
        }
