"""The catalogue of fixed-ratio server shapes the counterfactual replays work onto."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from fabric.models.base import TimeStampedModel
from fabric.validators import check_text_fields


class ServerShape(TimeStampedModel):
    """A server as one buys it: so many GPUs, cores and GiB of memory in one box, in a fixed
    ratio. Operators keep the catalogue (the admin, `seed_server_shapes`); the counterfactual
    (`composer.counterfactual`) asks how many of these the work that ran would have needed.

    `gpu_model` blank takes GPUs of any model; a name takes the GPUs whose model contains it.
    `machines` is how many machines of this shape the source it was seeded from lists (0 for
    a shape an operator added). No lifecycle: rows are added, changed and deleted, audited.
    """

    name = models.CharField(max_length=100, unique=True)
    gpu_model = models.CharField(
        max_length=100, blank=True, help_text="Blank: GPUs of any model. Else part of a model name."
    )
    gpus = models.PositiveIntegerField(validators=[MaxValueValidator(64)])
    cores = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(4096)])
    memory_gib = models.PositiveIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(64 * 1024)]
    )
    machines = models.PositiveIntegerField(
        default=0, help_text="Machines of this shape in the source it was seeded from."
    )
    source = models.CharField(max_length=200, blank=True, help_text="Where the shape came from.")

    class Meta:
        ordering = ["gpus", "cores", "memory_gib", "name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(cores__gte=1, memory_gib__gte=1),
                name="composer_servershape_not_empty",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """Names are printable text (`fabric.validators`), as every name an operator types."""
        super().clean()
        check_text_fields(
            names={"name": self.name},
            free_text={"gpu_model": self.gpu_model, "source": self.source},
        )

    @property
    def ratio(self) -> str:
        """Its shape in words: "8 GPUs · 96 cores · 512 GiB"."""
        gpus = f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
        return f"{gpus} · {self.cores} cores · {self.memory_gib:,} GiB"
