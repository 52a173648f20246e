"""What a Kubernetes ResourceClaim became: the composition Composer made for it
(composer.kubernetes.controller)."""

from __future__ import annotations

from django.db import models

__all__ = ["KubernetesClaim", "KubernetesController"]


class KubernetesClaim(models.Model):
    """One ResourceClaim allocated to Composer's devices, and its composition. Keyed by the
    claim's uid, so a controller restarted mid-attach finds what it started instead of
    composing twice; `released_at` is set when the claim went away and the composition was
    taken down."""

    uid = models.CharField(max_length=64, unique=True)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    node = models.CharField(max_length=253)
    pods = models.JSONField(default=list, blank=True)
    devices = models.JSONField(default=list, blank=True)  # [[pool, device], ...]
    composition = models.OneToOneField(
        "composer.Composition",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="kubernetes_claim",
    )
    error = models.TextField(blank=True)  # why no composition could be asked for
    # Compositions asked for so far (a claim rescheduled is composed anew), and when last.
    attempt = models.PositiveIntegerField(default=1)
    attempted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["released_at"], name="composer_k8sclaim_live")]

    def __str__(self) -> str:
        return f"claim {self.namespace}/{self.name} ({self.uid})"


class KubernetesController(models.Model):
    """One running controller (`manage.py k8s_controller`), as its last pass left it: the
    fabric managers page shows whether it is alive, which replica leads and the last error,
    so an operator sees a stalled controller before tenants' pods wait on it."""

    identity = models.CharField(max_length=253, unique=True)
    driver = models.CharField(max_length=253)
    interval_s = models.PositiveIntegerField(default=5)
    is_leader = models.BooleanField(default=False)
    last_pass_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    pools = models.PositiveIntegerField(default=0)  # pools published at the last pass
    claims = models.PositiveIntegerField(default=0)  # claims composed and not released
    started_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["identity"]

    def __str__(self) -> str:
        return f"kubernetes controller {self.identity}"
