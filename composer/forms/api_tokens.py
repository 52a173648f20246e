"""The form that makes an API token in the console: a name, and the password again.

The password is asked again because a token outlives the session that makes it: without
it, a session cookie left open or stolen would turn into access to the API until someone
revokes the token. The page also carries a one-time nonce (`nonce_new`, kept in the
session), so that reloading the answer, or going back and sending the form again, makes no
second token, which past the limit would revoke one of the user's others. The session is
read when a request starts and saved when it ends, so two sends at once (a double click)
would both find the nonce unspent: spending it also takes a key in the shared cache, which
only the first can add.

Password attempts are counted per user in the shared cache, each before its password is
checked (so that attempts sent at once are all counted), a right one given back: past
`WRONG_PASSWORDS` wrong ones in `WRONG_WINDOW_S` the form refuses every password until the
window ends, so a session left open does not become a way to guess the password either.
When the cache cannot be reached both checks are skipped with a warning (fail open), as
the API's and Redfish's limits do: the session alone still stops a resend one after the
other.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib.sessions.backends.base import SessionBase
from django.core.cache import cache

logger = logging.getLogger(__name__)

NONCES = "api_token_nonces"  # the session key
KEPT_NONCES = 8  # forms open at once (tabs) whose nonce still counts
NONCE_SPENT_S = 3600  # how long a spent nonce's cache key outlives the send
WRONG_PASSWORDS = 5
WRONG_WINDOW_S = 600
LIFETIMES = [
    ("7", "in 7 days"),
    ("30", "in 30 days"),
    ("90", "in 90 days"),
    ("365", "in a year"),
    ("never", "never"),
]


def _attempts_key(user: Any) -> str:
    return f"api-token-password-attempts:{user.pk}"


def _attempt(user: Any) -> int:
    """Count one password attempt of `user`: how many in the window, this one included
    (0 when the cache cannot be reached)."""
    key = _attempts_key(user)
    try:
        if cache.add(key, 1, WRONG_WINDOW_S):
            return 1
        try:
            return int(cache.incr(key))
        except ValueError:  # the window ended between the two calls
            cache.add(key, 1, WRONG_WINDOW_S)
            return 1
    except Exception as exc:  # redis-py raises ConnectionError, TimeoutError, ...
        logger.warning("api token password limit skipped: the cache is unreachable (%s)", exc)
        return 0


def _attempt_right(user: Any) -> None:
    """A right password: its attempt is not held against the user."""
    try:
        cache.decr(_attempts_key(user))
    except Exception:  # gone (the window ended) or the cache is away: nothing to give back
        return


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
    try:
        return bool(cache.add(f"api-token-nonce-spent:{nonce}", 1, NONCE_SPENT_S))
    except Exception as exc:
        logger.warning("api token nonce kept by the session only: the cache is away (%s)", exc)
        return True


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        required=False,
        help_text="What it is for: the script or machine that will hold it (optional).",
        widget=forms.TextInput(attrs={"class": "form-control", "autocomplete": "off"}),
    )
    expires = forms.ChoiceField(
        label="Expires",
        choices=LIFETIMES,
        initial="90",
        help_text="It stops working then; a token for a script that runs for years may never "
        "expire, and is revoked by hand.",
        widget=forms.Select(attrs={"class": "form-select"}),
    )
    password = forms.CharField(
        label="Your password",
        strip=False,
        help_text="Asked again: a token opens the API as you until it expires or is revoked.",
        widget=forms.PasswordInput(
            attrs={"class": "form-control", "autocomplete": "current-password"}
        ),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def lifetime(self) -> timedelta | None:
        """How long the token works (None: until revoked); after `is_valid()`."""
        expires = self.cleaned_data["expires"]
        return None if expires == "never" else timedelta(days=int(expires))

    def clean_password(self) -> str:
        password: str = self.cleaned_data["password"]
        if _attempt(self.user) > WRONG_PASSWORDS:
            raise forms.ValidationError(
                "Too many wrong passwords: try again later (the limit lasts "
                f"{WRONG_WINDOW_S // 60} minutes from the first wrong one).",
                code="throttled",
            )
        if not self.user.check_password(password):
            logger.warning("api token refused: wrong password user_id=%s", self.user.pk)
            raise forms.ValidationError("That is not your password.", code="wrong_password")
        _attempt_right(self.user)
        return password
