"""The form that makes an API token in the console: a name, and the password again.

The password is asked again because a token outlives the session that makes it: without
it, a session cookie left open or stolen would turn into access to the API until someone
revokes the token. The page also carries a one-time nonce (`nonce_new`, kept in the
session), so that reloading the answer, or going back and sending the form again, makes no
second token, which past the limit would revoke one of the user's others.

Wrong passwords are counted per user in the shared cache: past `WRONG_PASSWORDS` in
`WRONG_WINDOW_S` the form refuses every password until the window ends, so a session left
open does not become a way to guess the password either. When the cache cannot be reached
the count is skipped with a warning (fails open), as the API's and Redfish's limits do.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django import forms
from django.contrib.sessions.backends.base import SessionBase
from django.core.cache import cache

logger = logging.getLogger(__name__)

NONCES = "api_token_nonces"  # the session key
KEPT_NONCES = 8  # forms open at once (tabs) whose nonce still counts
WRONG_PASSWORDS = 5
WRONG_WINDOW_S = 600


def _wrong_key(user: Any) -> str:
    return f"api-token-wrong-passwords:{user.pk}"


def _wrong_count(user: Any) -> int:
    try:
        return int(cache.get(_wrong_key(user)) or 0)
    except Exception as exc:  # redis-py raises ConnectionError, TimeoutError, ...
        logger.warning("api token password limit skipped: the cache is unreachable (%s)", exc)
        return 0


def _wrong_counted(user: Any) -> None:
    logger.warning("api token refused: wrong password user_id=%s", user.pk)
    try:
        if not cache.add(_wrong_key(user), 1, WRONG_WINDOW_S):
            cache.incr(_wrong_key(user))
    except Exception as exc:
        logger.warning("api token wrong password not counted: the cache is unreachable (%s)", exc)


def nonce_new(session: SessionBase) -> str:
    """A nonce for one form, remembered in `session`."""
    nonce = secrets.token_urlsafe(16)
    session[NONCES] = [*session.get(NONCES, [])[-(KEPT_NONCES - 1) :], nonce]
    return nonce


def nonce_spend(session: SessionBase, nonce: str) -> bool:
    """Whether `nonce` was one of the session's and unused; it is used from now on."""
    kept = list(session.get(NONCES, []))
    if nonce not in kept:
        return False
    kept.remove(nonce)
    session[NONCES] = kept
    return True


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        required=False,
        help_text="What it is for: the script or machine that will hold it (optional).",
        widget=forms.TextInput(attrs={"class": "form-control", "autocomplete": "off"}),
    )
    password = forms.CharField(
        label="Your password",
        strip=False,
        help_text="Asked again: a token opens the API as you until it is revoked.",
        widget=forms.PasswordInput(
            attrs={"class": "form-control", "autocomplete": "current-password"}
        ),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password: str = self.cleaned_data["password"]
        if _wrong_count(self.user) >= WRONG_PASSWORDS:
            raise forms.ValidationError(
                f"Too many wrong passwords: try again in {WRONG_WINDOW_S // 60} minutes.",
                code="throttled",
            )
        if not self.user.check_password(password):
            _wrong_counted(self.user)
            raise forms.ValidationError("That is not your password.", code="wrong_password")
        return password
