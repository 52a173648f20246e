"""What the notification services (routes, webhooks) share when they check and save a row
of theirs: the model's own checks gathered with theirs, by field, and the one rule of a
name per owner, kept by the database and said in the operator's words."""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction

__all__ = ["raise_with_model_checks", "save_named"]


def raise_with_model_checks(
    obj: models.Model, errors: dict[str, str], *, exclude: Iterable[str]
) -> None:
    """Run the model's own checks on `obj` (not on the fields in `exclude` nor those
    `errors` already names), add what they find to `errors` by field (a check of several
    fields under "name"), and raise them all together, if any."""
    try:
        obj.full_clean(exclude=[*exclude, *errors])
    except ValidationError as exc:
        for name, messages in exc.message_dict.items():
            errors.setdefault(name if name != "__all__" else "name", " ".join(messages))
    if errors:
        raise ValidationError(errors)


def save_named(obj: models.Model, noun: str) -> None:
    """Save `obj`; a second row of its owner with its name (the database's unique
    constraint, which also settles two saves racing) is an error on "name"."""
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError:
        raise ValidationError(
            {"name": f"Another {noun} of the same owner has this name."}
        ) from None
