"""Composer: the logical world (tenants, jobs, compositions) and the project wiring."""

from __future__ import annotations

from composer.celery import app as celery_app

__all__ = ["celery_app"]
