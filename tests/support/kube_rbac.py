"""The RBAC of docs/kubernetes.md, enforced on the real-server tier.

The API server of the tier (tests/support/kube_server.py) has no RBAC of its own; it asks a
SubjectAccessReview webhook about every request of a user outside `system:masters`. This
webhook answers for the controller's service account with exactly the rules of the docs'
ClusterRole (everywhere) and Role (in its namespace), as Kubernetes' RBAC authorizer
would, and refuses everything else. So the tier's controller runs with only what the docs
tell a cluster admin to grant, and a call the docs forgot is a 403 the test sees.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

from tests.support.kube_cluster import docs_manifests


class Decision(NamedTuple):
    """One request the webhook was asked about, and its answer."""

    user: str
    verb: str
    group: str
    resource: str  # "resourceclaims/status" for a subresource
    namespace: str
    allowed: bool


@dataclass
class RbacWebhook:
    """The webhook: `user`'s rules everywhere (`cluster`) and by namespace (`namespaced`)."""

    user: str
    cluster: list[dict[str, Any]]
    namespaced: dict[str, list[dict[str, Any]]]
    decisions: list[Decision] = field(default_factory=list)
    url: str = ""

    @classmethod
    def from_docs(cls, markdown: Path, user: str) -> RbacWebhook:
        """The docs' ClusterRole and Role, both bound to `user`."""
        manifests = docs_manifests(markdown)
        role = manifests["Role"]
        return cls(
            user=user,
            cluster=list(manifests["ClusterRole"]["rules"]),
            namespaced={role["metadata"]["namespace"]: list(role["rules"])},
        )

    def denied(self) -> list[Decision]:
        return [d for d in self.decisions if not d.allowed]

    def decide(self, review: dict[str, Any]) -> bool:
        spec = review.get("spec") or {}
        attributes = spec.get("resourceAttributes")
        if attributes is None:  # a path that is no resource: nothing in the docs grants it
            self.decisions.append(Decision(spec.get("user", ""), "", "", "", "", False))
            return False
        resource = attributes.get("resource", "")
        if attributes.get("subresource"):
            resource = f"{resource}/{attributes['subresource']}"
        namespace = attributes.get("namespace", "")
        verb, group = attributes.get("verb", ""), attributes.get("group", "")
        rules = self.cluster + (self.namespaced.get(namespace, []) if namespace else [])
        allowed = spec.get("user") == self.user and any(
            _grants(rule, verb, group, resource) for rule in rules
        )
        self.decisions.append(
            Decision(spec.get("user", ""), verb, group, resource, namespace, allowed)
        )
        return allowed

    @contextmanager
    def serving(self) -> Iterator[RbacWebhook]:
        """The webhook on a loopback port (`url`), for as long as the block runs."""
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                allowed = webhook.decide(review)
                review["status"] = {"allowed": allowed}
                if not allowed:
                    review["status"]["reason"] = "not granted by the RBAC of docs/kubernetes.md"
                body = json.dumps(review).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the decisions are kept instead

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def _grants(rule: dict[str, Any], verb: str, group: str, resource: str) -> bool:
    def has(values: list[str], value: str) -> bool:
        return "*" in values or value in values

    return (
        has(rule.get("apiGroups") or [], group)
        and has(rule.get("resources") or [], resource)
        and has(rule.get("verbs") or [], verb)
    )
