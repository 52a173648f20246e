"""The console's "Test connection": ask a manager what it is, within a time limit.

It runs in the web request, like the other answers an operator waits for on the page
(previews, what-ifs), not as a job: it writes nothing but its audit row, and a test of a
manager not saved yet has entered values (credentials included) that must not be stored
anywhere, which a queued job would need. The driver's `probe()` runs in a thread of its
own so the request waits at most COMPOSER_PROBE_TIMEOUT_S; a probe still running then is
left to finish on its own (its answer is dropped) and the operator reads why.

Whatever happens the answer is a `ProbeOutcome`, never an exception: a DriverError's
message (with any credential value masked out of it) says exactly why it failed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connections

from fabric.choices import ChangeAction
from fabric.credentials import scrub
from fabric.drivers.base import Credentials, DriverError, FabricDriver, ProbeReport
from fabric.drivers.registry import DRIVERS, get_driver, manager_credentials
from fabric.models import FabricManager
from fabric.services.history import change_record
from fabric.services.managers.methods import method_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeOutcome:
    """What a connection test found (`report`), or why it failed (`error`)."""

    ok: bool
    elapsed_ms: int
    service: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)
    composition_methods: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    error: str = ""

    @property
    def count_rows(self) -> list[tuple[str, str, int]]:
        """(kind, label, count) per kind, for the page: "power_feeds" reads "Power feeds"."""
        return [(kind, kind.replace("_", " ").capitalize(), n) for kind, n in self.counts.items()]

    @property
    def method_rows(self) -> list[tuple[str, str]]:
        """(term, plain words) per composition method, for the page."""
        return method_rows(self.composition_methods)

    def summary(self) -> str:
        """One line for the audit trail and messages."""
        if not self.ok:
            return f"failed: {self.error}"
        held = ", ".join(f"{n} {_kind_words(kind, n)}" for kind, n in self.counts.items() if n)
        return f"answered as {self.service}" + (f"; reports {held}" if held else "")


def _kind_words(kind: str, count: int) -> str:
    """ "power_feeds" -> "power feeds", or "power feed" for one ("switches" -> "switch")."""
    words = kind.replace("_", " ")
    if count != 1:
        return words
    return words[:-2] if words.endswith(("ches", "shes")) else words.removesuffix("s")


def probe_timeout_s() -> float:
    """COMPOSER_PROBE_TIMEOUT_S: how long a connection test waits for the manager."""
    return float(getattr(settings, "COMPOSER_PROBE_TIMEOUT_S", 10))


def _run_probe(driver: FabricDriver, box: dict[str, Any]) -> None:
    """The thread's body: probe, keep the answer or the error, close this thread's DB
    connections (a driver may read the database; a thread's connection is its own)."""
    try:
        box["report"] = driver.probe()
    except BaseException as exc:  # handed to the request thread, which decides
        box["error"] = exc
    finally:
        connections.close_all()


def _outcome(
    *, driver: FabricDriver, credentials: Credentials, timeout_s: float, label: str
) -> ProbeOutcome:
    started = time.monotonic()
    box: dict[str, Any] = {}
    thread = threading.Thread(
        target=_run_probe, args=(driver, box), name=f"probe-{label}", daemon=True
    )
    thread.start()
    thread.join(timeout_s)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    if thread.is_alive():
        return ProbeOutcome(
            ok=False,
            elapsed_ms=elapsed_ms,
            error=f"The manager did not answer within {timeout_s:g} s "
            "(COMPOSER_PROBE_TIMEOUT_S): check the endpoint and that it is reachable from "
            "the console's server.",
        )
    error = box.get("error")
    if isinstance(error, DriverError):
        return ProbeOutcome(
            ok=False, elapsed_ms=elapsed_ms, error=scrub(error.message, credentials)
        )
    if error is not None:
        # A driver bug, not the manager's answer: logged for whoever maintains the driver
        # (by type: its text may carry what the driver was sent), shown plainly.
        logger.error(
            "connection test of %s: the driver failed with %s", label, type(error).__name__
        )
        return ProbeOutcome(
            ok=False,
            elapsed_ms=elapsed_ms,
            error=f"The driver failed unexpectedly ({type(error).__name__}); see the "
            "console's log.",
        )
    report: ProbeReport = box["report"]
    return ProbeOutcome(
        ok=True,
        elapsed_ms=elapsed_ms,
        service=scrub(report.service, credentials),
        counts=dict(report.counts),
        composition_methods=tuple(report.composition_methods),
        notes=tuple(scrub(note, credentials) for note in report.notes),
    )


def manager_test_connection(
    *,
    manager: FabricManager,
    credentials: Credentials | None = None,
    actor: Any = None,
    source: str = "console",
    remote_addr: str | None = None,
) -> ProbeOutcome:
    """Probe `manager` (saved, or built from a form's values and not saved) and audit it.

    `credentials` are the entered ones for an unsaved manager or an edit that changes
    them; None uses the stored ones (decrypted). Never raises for what the manager or the
    keys do: a failure is an outcome with the reason. The ChangeRecord of a manager not
    saved yet has target id 0 and its entered name.
    """
    label = str(manager.pk or manager.name)
    if manager.driver not in DRIVERS:
        outcome = ProbeOutcome(
            ok=False,
            elapsed_ms=0,
            error=f"Unknown driver {manager.driver!r}; choose one of {', '.join(sorted(DRIVERS))}.",
        )
    else:
        try:
            values: Credentials = (
                credentials if credentials is not None else manager_credentials(manager)
            )
            driver = get_driver(manager, credentials=values)
        except DriverError as exc:
            outcome = ProbeOutcome(ok=False, elapsed_ms=0, error=exc.message)
        else:
            outcome = _outcome(
                driver=driver, credentials=values, timeout_s=probe_timeout_s(), label=label
            )
    record = change_record(
        manager,
        ChangeAction.TESTED,
        {},
        label=manager.name,
        message=f"connection test {'ok: ' if outcome.ok else ''}{outcome.summary()}",
        actor=actor,
        source=source,
        remote_addr=remote_addr,
    )
    record.target_id = manager.pk or 0
    record.save()
    logger.info(
        "connection test of manager %s: %s in %d ms",
        label,
        "ok" if outcome.ok else "failed",
        outcome.elapsed_ms,
    )
    return outcome
