"""The *API tokens* pages: the signed-in user's own tokens, a new one, revocations.

Every user has them (operators and tenant members alike: a token is the user's, whatever
the user may do). The list says what each token is for, when and from where it was issued,
and when it was last used; never the key, which only its digest keeps. A new token takes
the password again and a one-time nonce (`composer.forms.api_tokens` says why); its key is
shown in the answer to the POST that issues it, once (rendered, not redirected to, and
never cached), with the tokens it pushed past the limit named. Issuing and revoking go
through the API's services (`composer.services.api_tokens`), so the limit, the audit and
the log are the same. Revoking a token that is not the user's (any more) says so and
changes nothing, whoever holds it.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from composer.forms.api_tokens import ApiTokenForm, nonce_new, nonce_spend
from composer.models import ApiToken
from composer.services.api_tokens import api_token_issue, api_token_revoke
from fabric.views.responses import htmx_redirect, remote_addr

__all__ = [
    "api_token_create_view",
    "api_token_list",
    "api_token_revoke_all_view",
    "api_token_revoke_view",
]


def _limit() -> int:
    return max(1, settings.COMPOSER_API_TOKENS_PER_USER)


def _back(request: HttpRequest) -> HttpResponse:
    return htmx_redirect(request, reverse("composer:api_tokens"))


@login_required
@require_GET
@never_cache
def api_token_list(request: HttpRequest) -> HttpResponse:
    """The user's tokens, newest first."""
    user = request.user
    assert user.is_authenticated  # login_required
    tokens = ApiToken.objects.filter(user=user).order_by("-created_at", "-id")
    context = {"tokens": tokens, "limit": _limit(), "now": timezone.now()}
    return render(request, "composer/api_tokens.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@never_cache
@sensitive_post_parameters("password")
@sensitive_variables("issued", "context")
def api_token_create_view(request: HttpRequest) -> HttpResponse:
    """The form (GET); a new token, its key shown this once (POST)."""
    user = request.user
    assert user.is_authenticated  # login_required
    held = ApiToken.objects.filter(user=user).live().count()
    form = ApiTokenForm(request.POST or None, user=user)
    if request.method == "GET" or not form.is_valid():
        context = {
            "form": form,
            "held": held,
            "limit": _limit(),
            "nonce": nonce_new(request.session),
        }
        status = 400 if request.method == "POST" else 200
        return render(request, "composer/api_token_form.html", context, status=status)
    if not nonce_spend(request.session, request.POST.get("nonce", "")):
        messages.warning(
            request,
            "That form was sent already: no other token was made. A key is shown only once; "
            "if it was not copied, revoke that token and make another.",
        )
        return _back(request)
    issued = api_token_issue(
        user=user,
        remote_addr=remote_addr(request),
        name=form.cleaned_data["name"],
        lifetime=form.lifetime(),
        source="console",
    )
    context = {"issued": issued.token, "key": issued.key, "revoked": issued.revoked}
    return render(request, "composer/api_token_new.html", context, status=201)


@login_required
@require_POST
def api_token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke one of the user's tokens; back to the list."""
    user = request.user
    assert user.is_authenticated  # login_required
    token = ApiToken.objects.filter(user=user, pk=pk).first()
    gone = token is not None and api_token_revoke(
        user=user, token=token, remote_addr=remote_addr(request), source="console"
    )
    if gone:
        messages.success(request, f"API token {pk} revoked: requests that send it answer 401.")
    else:  # revoked meanwhile (another tab, the limit), or never the user's: the same words
        messages.info(request, f"API token {pk} is not one of your tokens: nothing revoked.")
    return _back(request)


@login_required
@require_POST
def api_token_revoke_all_view(request: HttpRequest) -> HttpResponse:
    """Revoke every token of the user; back to the list."""
    user = request.user
    assert user.is_authenticated  # login_required
    gone = api_token_revoke(
        user=user, token=None, remote_addr=remote_addr(request), source="console"
    )
    if gone:
        messages.success(request, f"{gone} API token{'s' if gone != 1 else ''} revoked.")
    else:
        messages.info(request, "You hold no API tokens: nothing revoked.")
    return _back(request)
