"""Factories of the logical world: users, tenants, memberships, jobs."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory

from composer.choices import JobKind, Role
from composer.models import Job, Membership, Tenant

PASSWORD = "correct-horse-battery"


class UserFactory(DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")

    @factory.post_generation
    def password(self, create: bool, extracted: str | None, **_: object) -> None:
        self.set_password(extracted or PASSWORD)
        if create:
            self.save(update_fields=["password"])


class TenantFactory(DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Tenant {n}")
    slug = factory.Sequence(lambda n: f"tenant-{n}")


class MembershipFactory(DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    tenant = factory.SubFactory(TenantFactory)
    role = Role.MEMBER


class JobFactory(DjangoModelFactory):
    class Meta:
        model = Job

    kind = JobKind.INVENTORY_SYNC
