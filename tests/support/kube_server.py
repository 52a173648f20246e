"""A real Kubernetes API server for the controller's integration tier.

Kubernetes' `apiextensions-apiserver`, built from Debian's packaged sources by
`.ci/kube-tier` (`make kube-tier`), on Debian's etcd, both on loopback, with client
certificate authentication. It serves CustomResourceDefinitions, so the tier installs
stand-ins for the objects the controller reads and writes: ResourceSlice, ResourceClaim
(with its status subresource), ResourceClaimTemplate and DeviceClass in `resource.k8s.io/v1`,
and the Lease in `coordination.k8s.io/v1`.

Why this server: kube-apiserver itself is not packaged, and apiextensions-apiserver is the
same generic API server (objects stored in etcd, resourceVersions, 409 on a stale write,
the status subresource, merge patches) serving custom resources under the very paths of the
built-in ones, so the Python client makes the calls it makes against a cluster. It serves no
core group: a node or a namespace reads as not found, which the controller takes as "no
annotation" (the node's name is its host's; the namespace is the default tenant's).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import require
from tests.support.worker import process_stop, spawn_logged

BUILD = "make kube-tier"  # how to get the tier (.ci/kube-tier), named in the skip message
BINARIES = ("apiextensions-apiserver", "etcd")
# Ready but for the informer of core Services (kept for conversion webhooks), which never
# syncs on a server that serves no core group.
READY = "/readyz?exclude=informer-sync"

# The stand-ins: (group, plural, kind, namespaced, with a status subresource).
RESOURCES: tuple[tuple[str, str, str, bool, bool], ...] = (
    ("resource.k8s.io", "resourceslices", "ResourceSlice", False, False),
    ("resource.k8s.io", "resourceclaims", "ResourceClaim", True, True),
    ("resource.k8s.io", "resourceclaimtemplates", "ResourceClaimTemplate", True, False),
    ("resource.k8s.io", "deviceclasses", "DeviceClass", False, False),
    ("coordination.k8s.io", "leases", "Lease", True, False),
)


def tier_folder() -> Path:
    """Where `.ci/kube-tier` leaves the binaries: COMPOSER_KUBE_TIER, else the user's cache."""
    named = os.environ.get("COMPOSER_KUBE_TIER")
    if named:
        return Path(named)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "composer" / "kube-tier"


def binaries_or_skip() -> Path:
    """The folder of the tier's binaries. Skips when they were never built, but fails under
    CI (`CI=true`, as `.ci/run` sets), which must provide them."""
    folder = tier_folder() / "bin"
    missing = [name for name in BINARIES if not os.access(folder / name, os.X_OK)]
    if not missing:
        return folder
    message = (
        f"the real API server tier needs {', '.join(missing)} in {folder}: build them with "
        f"`{BUILD}` (as root: Debian sid by debootstrap, Kubernetes' apiextensions-apiserver "
        "built from Debian's packaged sources with Debian's Go, and Debian's etcd)"
    )
    require(False, message)
    return folder  # not reached: require skips or fails


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports on loopback (all probes held open until each is known)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


CONTROLLER_USER = "system:serviceaccount:composer:composer-k8s-controller"


@dataclass
class Certificates:
    """A CA, the server's certificate for 127.0.0.1, and client certificates (certificate,
    key) by user: `admin`, in the group `system:masters` (which the server authorizes
    without asking anyone), and `controller`, the controller's service account (authorized
    by the webhook the server is given, if any)."""

    ca: Path
    server_cert: Path
    server_key: Path
    clients: dict[str, tuple[Path, Path]]

    @classmethod
    def make(cls, folder: Path) -> Certificates:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        now = datetime.datetime.now(datetime.UTC)

        def name(common: str, group: str | None = None) -> x509.Name:
            parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
            if group:
                parts.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, group))
            return x509.Name(parts)

        def write(stem: str, key: Any, cert: x509.Certificate) -> tuple[Path, Path]:
            cert_path, key_path = folder / f"{stem}.crt", folder / f"{stem}.key"
            cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            key_path.write_bytes(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
            return cert_path, key_path

        def issue(
            subject: x509.Name, key: Any, issuer: x509.Name, signer: Any, **extensions: Any
        ) -> x509.Certificate:
            builder = (
                x509.CertificateBuilder()
                .subject_name(subject)
                .issuer_name(issuer)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
            )
            for extension in extensions.values():
                builder = builder.add_extension(extension, critical=False)
            return builder.sign(signer, hashes.SHA256())

        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = name("composer-test-ca")
        ca = issue(
            ca_name, ca_key, ca_name, ca_key, basic=x509.BasicConstraints(ca=True, path_length=0)
        )
        ca_path, _ = write("ca", ca_key, ca)
        server_key = ec.generate_private_key(ec.SECP256R1())
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        server_cert, server_key_path = write(
            "server", server_key, issue(name("127.0.0.1"), server_key, ca_name, ca_key, san=san)
        )
        clients = {}
        for user, common, group in (
            ("admin", "cluster-admin", "system:masters"),
            ("controller", CONTROLLER_USER, None),
        ):
            key = ec.generate_private_key(ec.SECP256R1())
            clients[user] = write(user, key, issue(name(common, group), key, ca_name, ca_key))
        return cls(ca_path, server_cert, server_key_path, clients)


@dataclass
class KubeServer:
    """A running apiextensions-apiserver on etcd, its CRD stand-ins installed; a kubeconfig
    for each user of `Certificates`."""

    url: str
    kubeconfigs: dict[str, Path]
    certificates: Certificates
    processes: list[subprocess.Popen[bytes]]
    logs: list[Path]

    def log(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in self.logs
        )

    def api_client(self, user: str = "admin") -> Any:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(
            config_file=str(self.kubeconfigs[user]), client_configuration=configuration
        )
        return client.ApiClient(configuration)

    @classmethod
    @contextmanager
    def start(
        cls, folder: Path, *, authorizer: str | None = None, timeout_s: float = 90.0
    ) -> Iterator[KubeServer]:
        """etcd and the API server in `folder` (their data, certificates and logs), ready and
        serving the stand-ins; both stopped afterwards. `authorizer`: the URL of a
        SubjectAccessReview webhook that decides every request but `system:masters`' (by
        default the server asks itself, which serves no such API: only masters may)."""
        binaries = binaries_or_skip()
        certificates = Certificates.make(folder)
        client_port, peer_port, secure_port = free_ports(3)
        etcd_url = f"http://127.0.0.1:{client_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        url = f"https://127.0.0.1:{secure_port}"
        kubeconfigs = {}
        for user, (cert, key) in certificates.clients.items():
            kubeconfigs[user] = folder / f"{user}.kubeconfig"
            kubeconfigs[user].write_text(json.dumps(_kubeconfig(url, certificates.ca, cert, key)))
        authorization = kubeconfigs["admin"]
        if authorizer:
            authorization = folder / "authorizer.kubeconfig"
            authorization.write_text(json.dumps(_webhook_kubeconfig(authorizer)))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder)}
        server = cls(
            url, kubeconfigs, certificates, [], [folder / "etcd.log", folder / "apiserver.log"]
        )
        etcd = [
            str(binaries / "etcd"), "--name", "tier", "--data-dir", str(folder / "etcd"),
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"tier={peer_url}", "--unsafe-no-fsync", "--log-level", "warn",
        ]  # fmt: skip
        apiserver = [
            str(binaries / "apiextensions-apiserver"),
            "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--secure-port", str(secure_port),
            "--tls-cert-file", str(certificates.server_cert),
            "--tls-private-key-file", str(certificates.server_key),
            "--client-ca-file", str(certificates.ca),
            # No core API server to delegate to: its own loopback client, no lookups.
            "--kubeconfig", str(kubeconfigs["admin"]),
            "--authentication-kubeconfig", str(kubeconfigs["admin"]),
            "--authorization-kubeconfig", str(authorization),
            "--authentication-skip-lookup",
            "--authorization-always-allow-paths", "/healthz,/readyz,/livez",
            "--enable-priority-and-fairness=false",
            "--disable-admission-plugins",
            "NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,"
            "ValidatingAdmissionPolicy,MutatingAdmissionPolicy",
        ]  # fmt: skip
        try:
            server.processes.append(spawn_logged(etcd, env=env, log_path=server.logs[0]))
            server.processes.append(spawn_logged(apiserver, env=env, log_path=server.logs[1]))
            server._wait_ready(timeout_s)
            server._install_stand_ins(timeout_s)
            yield server
        finally:
            for process in reversed(server.processes):
                process_stop(process)

    def _wait_ready(self, timeout_s: float) -> None:
        context = ssl.create_default_context(cafile=str(self.certificates.ca))
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes):
                raise RuntimeError(f"the API server tier exited:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + READY, context=context, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError as exc:  # refused while starting, 500 while not ready
                last = str(exc)
            time.sleep(0.3)
        raise RuntimeError(f"the API server was not ready in {timeout_s}s ({last}):\n{self.log()}")

    def _install_stand_ins(self, timeout_s: float) -> None:
        from kubernetes import client

        extensions = client.ApiextensionsV1Api(self.api_client())
        for group, plural, kind, namespaced, status in RESOURCES:
            extensions.create_custom_resource_definition(
                _crd(group, plural, kind, namespaced, status)
            )
        deadline = time.monotonic() + timeout_s
        custom = client.CustomObjectsApi(self.api_client())
        for group, plural, *_ in RESOURCES:
            while True:  # Established, and the path served (discovery catches up)
                try:
                    custom.list_cluster_custom_object(group, "v1", plural)
                    break
                except client.exceptions.ApiException as exc:
                    if exc.status != 404 or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)


def _crd(group: str, plural: str, kind: str, namespaced: bool, status: bool) -> dict[str, Any]:
    """A schema-free CustomResourceDefinition (every field kept as written). A group under
    k8s.io asks for the API-approval annotation; a stand-in says it is unapproved."""
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "annotations": {"api-approved.kubernetes.io": "unapproved, a test stand-in"},
        },
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [version],
        },
    }


def _kubeconfig(url: str, ca: Path, cert: Path, key: Path) -> dict[str, Any]:
    def data(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    return _config(
        {"server": url, "certificate-authority-data": data(ca)},
        {"client-certificate-data": data(cert), "client-key-data": data(key)},
    )


def _webhook_kubeconfig(url: str) -> dict[str, Any]:
    """How the server reaches the authorization webhook (plain HTTP on loopback)."""
    return _config({"server": url}, {})


def _config(cluster: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "tier", "cluster": cluster}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "tier", "context": {"cluster": "tier", "user": "user"}}],
        "current-context": "tier",
    }
