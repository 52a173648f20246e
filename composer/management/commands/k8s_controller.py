"""`manage.py k8s_controller`: Composer's Kubernetes DRA controller (docs/kubernetes.md)."""

from __future__ import annotations

import os
import signal
import socket
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from composer.kubernetes.api import client_api
from composer.kubernetes.controller import Controller
from composer.kubernetes.leader import Elector
from composer.kubernetes.names import DRIVER
from composer.kubernetes.service import serve, serve_once
from composer.models import Tenant


class Command(BaseCommand):
    help = (
        "Publish the free pool to Kubernetes as ResourceSlices and compose the "
        "ResourceClaims allocated to it onto their nodes' hosts (docs/kubernetes.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--kubeconfig", help="a kubeconfig file (default: in-cluster, else ~/.kube/config)"
        )
        parser.add_argument("--context", help="the kubeconfig context to use")
        parser.add_argument(
            "--tenant",
            default=os.environ.get("COMPOSER_K8S_TENANT", "kubernetes"),
            help="slug of the tenant of namespaces without the composer.dev/tenant label",
        )
        parser.add_argument("--driver", default=DRIVER, help="the DRA driver name")
        parser.add_argument("--interval", type=int, default=5, help="seconds between passes")
        parser.add_argument(
            "--watch",
            type=float,
            default=1.0,
            help="seconds between looks at the console's events (a pass follows a change)",
        )
        parser.add_argument("--once", action="store_true", help="one pass, then exit")
        parser.add_argument(
            "--lease-namespace",
            default="composer",
            help="namespace of the leader-election Lease; empty: no election (one replica)",
        )
        parser.add_argument("--lease-name", default="composer-k8s-controller")
        parser.add_argument("--identity", default=f"{socket.gethostname()}-{os.getpid()}")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["interval"] < 1:
            raise CommandError("--interval: at least 1 second.")
        if not 0.1 <= options["watch"] <= options["interval"]:
            raise CommandError("--watch: from 0.1 seconds to the --interval.")
        slug = options["tenant"]
        if not Tenant.objects.filter(slug=slug, is_active=True).exists():
            raise CommandError(
                f"--tenant: no active tenant has the slug {slug!r}; create it in the console "
                "(Admin → Tenants) or name another."
            )
        api = client_api(options["kubeconfig"], options["context"])
        controller = Controller(api, default_tenant=slug, driver=options["driver"])
        identity = options["identity"]
        # Renewed every pass: the Lease outlives at least three of them.
        duration = max(15, 3 * options["interval"])
        elector = (
            Elector(api, options["lease_namespace"], options["lease_name"], identity, duration)
            if options["lease_namespace"]
            else None
        )
        if options["once"]:
            report = serve_once(controller, elector, identity, options["interval"])
            self.stdout.write(f"{report}\n" if report is not None else "another replica leads\n")
            return
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        self.stdout.write(f"kubernetes controller {identity} for {options['driver']}: running\n")
        serve(controller, elector, identity, options["interval"], stop, watch=options["watch"])
