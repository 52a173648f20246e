"""Factories of the logical world: users, tenants, memberships, jobs."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from factory.django import DjangoModelFactory

from composer.choices import JobKind, Role
from composer.models import Job, Membership, Tenant

PASSWORD = "correct-horse-battery"


def _set_password(user: User, create: bool, extracted: str | None, **_: object) -> None:
    user.set_password(extracted or PASSWORD)
    if create:
        user.save(update_fields=["password"])


class UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    # Called with the user just built (not the factory): a plain function, not a method.
    password = factory.PostGeneration(_set_password)


class TenantFactory(DjangoModelFactory[Tenant]):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Tenant {n}")
    slug = factory.Sequence(lambda n: f"tenant-{n}")


class MembershipFactory(DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    tenant = factory.SubFactory(TenantFactory)
    role = Role.MEMBER


class JobFactory(DjangoModelFactory[Job]):
    class Meta:
        model = Job

    kind = JobKind.INVENTORY_SYNC
