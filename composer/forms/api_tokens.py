"""The form that makes an API token in the console: a name, and the password again.

The password is asked again because a token outlives the session that makes it: without
it, a session cookie left open or stolen would turn into access to the API until someone
revokes the token. The page also carries a one-time nonce (`nonce_new`, kept in the
session), so that reloading the answer, or going back and sending the form again, makes no
second token, which past the limit would revoke one of the user's others.
"""

from __future__ import annotations

import secrets
from typing import Any

from django import forms
from django.contrib.sessions.backends.base import SessionBase

NONCES = "api_token_nonces"  # the session key
KEPT_NONCES = 8  # forms open at once (tabs) whose nonce still counts


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
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.", code="wrong_password")
        return password
