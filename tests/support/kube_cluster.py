"""What the Kubernetes tier plays against the real API server (`tests/support/kube_server.py`):
the cluster's admin (the docs' manifests applied), the claim controller (a pod's claim made
from its template) and the scheduler (the claim's allocation written to its status)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.support.kube_server import RESOURCES, KubeServer


def docs_manifests(markdown: Path) -> dict[str, dict[str, Any]]:
    """The example manifests of a doc's ```yaml blocks, by kind (the first of each)."""
    found: dict[str, dict[str, Any]] = {}
    for block in re.findall(r"```yaml\n(.*?)```", markdown.read_text(), flags=re.S):
        for document in yaml.safe_load_all(block):
            if isinstance(document, dict) and "kind" in document:
                found.setdefault(document["kind"], document)
    return found


class Cluster:
    """The stand-in cluster through the `kubernetes` client: what the admin applies, the
    claims a pod's template makes, and the scheduler's allocations."""

    def __init__(self, server: KubeServer) -> None:
        from kubernetes import client

        self.custom = client.CustomObjectsApi(server.api_client())

    def apply(self, manifest: dict[str, Any]) -> None:
        group, version = manifest["apiVersion"].split("/")
        plural = next(p for _, p, kind, *_ in RESOURCES if kind == manifest["kind"])
        namespace = manifest["metadata"].get("namespace")
        if namespace:
            self.custom.create_namespaced_custom_object(group, version, namespace, plural, manifest)
        else:
            self.custom.create_cluster_custom_object(group, version, plural, manifest)

    def slices(self) -> list[dict[str, Any]]:
        answer = self.custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")
        return list(answer["items"])

    def published(self, model_prefix: str = "") -> list[tuple[str, str]]:
        """(pool, device) of every published device whose model starts so, in pool order."""
        return sorted(
            (s["spec"]["pool"]["name"], d["name"])
            for s in self.slices()
            for d in s["spec"]["devices"]
            if str(d["attributes"]["model"]["string"]).startswith(model_prefix)
        )

    def pod_scheduled(
        self, pod: dict[str, Any], template: dict[str, Any], node: str
    ) -> dict[str, Any]:
        """What happens to `pod` (a manifest whose first claim is made from `template`) on
        its way to `node`: the resource claim controller makes its claim from the template,
        and the scheduler allocates the template's request (its count of published devices
        whose model its CEL selector names), writing the allocation to the claim's status.
        Returns the claim as created."""
        source = pod["spec"]["resourceClaims"][0]
        assert source["resourceClaimTemplateName"] == template["metadata"]["name"]
        namespace = template["metadata"]["namespace"]
        request = template["spec"]["spec"]["devices"]["requests"][0]
        count, prefix = request["exactly"]["count"], _model_prefix(request["exactly"])
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"{pod['metadata']['name']}-{source['name']}",
                         "namespace": namespace},
            "spec": template["spec"]["spec"],
        }  # fmt: skip
        claim = dict(
            self.custom.create_namespaced_custom_object(
                "resource.k8s.io", "v1", namespace, "resourceclaims", body
            )
        )
        chosen = self.published(prefix)[:count]
        assert len(chosen) == count, f"{count} {prefix} devices asked, {self.slices()}"
        self.allocate(
            claim, request=request["name"], node=node, devices=chosen, pod=pod["metadata"]["name"]
        )
        return claim

    def allocate(
        self,
        claim: dict[str, Any],
        *,
        request: str,
        node: str,
        devices: list[tuple[str, str]],
        pod: str,
    ) -> None:
        """The scheduler's allocation of `devices` to `request` on `node`, written to the
        claim's status."""
        meta = claim["metadata"]
        status = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": request, "driver": "fabric.composer.dev", "pool": p,
                         "device": d}
                        for p, d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node]}
                        ]}
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": f"{pod}-uid"}],
        }  # fmt: skip
        self.custom.patch_namespaced_custom_object_status(
            "resource.k8s.io", "v1", meta["namespace"], "resourceclaims", meta["name"],
            {"status": status},
        )  # fmt: skip

    def claim(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(
            self.custom.get_namespaced_custom_object(
                "resource.k8s.io", "v1", namespace, "resourceclaims", name
            )
        )

    def conditions(self, namespace: str, name: str) -> dict[str, list[str]]:
        """{device: [the condition types that are True]} of a claim, as the server has it."""
        status = self.claim(namespace, name).get("status") or {}
        return {
            d["device"]: [c["type"] for c in d["conditions"] if c["status"] == "True"]
            for d in status.get("devices") or []
        }

    def claim_delete(self, namespace: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(
            "resource.k8s.io", "v1", namespace, "resourceclaims", name
        )

    def clear(self) -> None:
        """No slice, claim or lease left from an earlier test."""
        for group, plural, _, namespaced, _ in RESOURCES:
            listed = self.custom.list_cluster_custom_object(group, "v1", plural)["items"]
            for item in listed:
                meta = item["metadata"]
                if namespaced:
                    self.custom.delete_namespaced_custom_object(
                        group, "v1", meta["namespace"], plural, meta["name"]
                    )
                else:
                    self.custom.delete_cluster_custom_object(group, "v1", plural, meta["name"])


def _model_prefix(exactly: dict[str, Any]) -> str:
    """The model a request's CEL selectors ask for (`...model.startsWith("H100")`), else ""."""
    for selector in exactly.get("selectors") or []:
        found = re.search(r'\.model\.startsWith\("([^"]*)"\)', selector["cel"]["expression"])
        if found:
            return found.group(1)
    return ""
