"""The Celery application: configured from Django settings under the CELERY_ namespace."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")

app = Celery("composer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["composer", "fabric"])
