"""Job.queued_at: when a job last entered the queue (jobs already there: their creation)."""

import django.utils.timezone
from django.db import migrations, models
from django.db.models import F


def from_creation(apps, schema_editor):  # type: ignore[no-untyped-def]
    """The best known time for existing jobs: when they were created."""
    Job = apps.get_model("composer", "Job")
    Job.objects.update(queued_at=F("created_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("composer", "0014_reconcile_held_lapsed"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="queued_at",
            field=models.DateTimeField(
                default=django.utils.timezone.now,
                help_text="When it last entered the queue (created, retried or taken over): "
                "how long it has waited counts from here, not from its creation.",
            ),
        ),
        migrations.RunPython(from_creation, migrations.RunPython.noop),
    ]
