"""The few API server calls the controller makes, behind one protocol.

Why: the controller's logic is tested against an in-process fake (tests/support/kube.py)
and runs against a real server through `ClientApi`, the Python `kubernetes` client. Only
these calls exist, so the RBAC in docs/kubernetes.md is the whole of what it needs.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["ClientApi", "Conflict", "KubeApi", "client_api"]

GROUP, VERSION = "resource.k8s.io", "v1"


class Conflict(Exception):
    """The object changed since it was read (a resourceVersion conflict): read it again."""


class KubeApi(Protocol):
    def slices_list(self) -> list[dict[str, Any]]: ...
    def slice_create(self, body: dict[str, Any]) -> None: ...
    def slice_replace(self, body: dict[str, Any]) -> None: ...  # Conflict when stale
    def slice_delete(self, name: str) -> None: ...
    def claims_list(self) -> list[dict[str, Any]]: ...
    def claim_status_set(
        self, namespace: str, name: str, devices: list[dict[str, Any]], version: str | None
    ) -> None: ...  # Conflict when the claim changed since `version` was read
    def node_get(self, name: str) -> dict[str, Any] | None: ...
    def namespace_get(self, name: str) -> dict[str, Any] | None: ...
    def lease_get(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def lease_create(self, namespace: str, body: dict[str, Any]) -> None: ...  # Conflict
    def lease_replace(self, namespace: str, body: dict[str, Any]) -> None: ...  # Conflict


class ClientApi:
    """`KubeApi` over the `kubernetes` client: custom-object calls on `resource.k8s.io/v1`
    (the same paths serve the built-in API and CRDs of that group), core calls for nodes
    and namespaces."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client  # imported here: only the controller needs it

        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._coordination = client.CoordinationV1Api(api_client)
        self._serialise = api_client.sanitize_for_serialization
        self._error = client.exceptions.ApiException

    def slices_list(self) -> list[dict[str, Any]]:
        answer = self._custom.list_cluster_custom_object(GROUP, VERSION, "resourceslices")
        return list(answer.get("items") or [])

    def slice_create(self, body: dict[str, Any]) -> None:
        self._custom.create_cluster_custom_object(GROUP, VERSION, "resourceslices", body)

    def slice_replace(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        replace = self._custom.replace_cluster_custom_object
        self._conflicting(replace, GROUP, VERSION, "resourceslices", name, body)

    def slice_delete(self, name: str) -> None:
        try:
            self._custom.delete_cluster_custom_object(GROUP, VERSION, "resourceslices", name)
        except self._error as exc:
            if exc.status != 404:  # gone already: what was wanted
                raise

    def claims_list(self) -> list[dict[str, Any]]:
        answer = self._custom.list_cluster_custom_object(GROUP, VERSION, "resourceclaims")
        return list(answer.get("items") or [])

    def claim_status_set(
        self, namespace: str, name: str, devices: list[dict[str, Any]], version: str | None
    ) -> None:
        """`status.devices` as a merge patch of the status, conditional on the claim's
        resourceVersion: another driver's entries written since are never overwritten."""
        body: dict[str, Any] = {"status": {"devices": devices}}
        if version:
            body["metadata"] = {"resourceVersion": version}
        patch = self._custom.patch_namespaced_custom_object_status
        self._conflicting(patch, GROUP, VERSION, namespace, "resourceclaims", name, body)

    def node_get(self, name: str) -> dict[str, Any] | None:
        return self._read(self._core.read_node, name)

    def namespace_get(self, name: str) -> dict[str, Any] | None:
        return self._read(self._core.read_namespace, name)

    def lease_get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._read(self._coordination.read_namespaced_lease, name, namespace)

    def lease_create(self, namespace: str, body: dict[str, Any]) -> None:
        self._conflicting(self._coordination.create_namespaced_lease, namespace, body)

    def lease_replace(self, namespace: str, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        self._conflicting(self._coordination.replace_namespaced_lease, name, namespace, body)

    def _conflicting(self, call: Any, *args: Any) -> None:
        """`call`, a 409 (exists, or changed since read) raised as Conflict."""
        try:
            call(*args)
        except self._error as exc:
            if exc.status == 409:
                raise Conflict(getattr(call, "__name__", "write")) from exc
            raise

    def _read(self, call: Any, *args: Any) -> dict[str, Any] | None:
        try:
            return dict(self._serialise(call(*args)))
        except self._error as exc:
            if exc.status == 404:
                return None
            raise


def client_api(kubeconfig: str | None = None, context: str | None = None) -> ClientApi:
    """A `ClientApi` from a kubeconfig (a path, else the default one), or from the pod's
    service account when running in the cluster and no kubeconfig is given."""
    from kubernetes import client, config

    if kubeconfig is None:
        try:
            config.load_incluster_config()
            return ClientApi(client.ApiClient())
        except config.ConfigException:
            pass
    configuration = client.Configuration()
    config.load_kube_config(
        config_file=kubeconfig, context=context, client_configuration=configuration
    )
    return ClientApi(client.ApiClient(configuration))
