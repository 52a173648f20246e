"""The *API tokens* page: the signed-in user's own tokens, a new one, a revocation.

Every user has it (operators and tenant members alike: a token is the user's, whatever the
user may do). The list says when each token was issued and from where, and when it was
last used; never the key, which only its digest keeps. A new token is shown in the answer
to the POST that issues it, once: that answer is rendered, not redirected to (a redirect
would lose it), and nothing may cache it. Issuing and revoking go through the API's
services (`composer.services.api_tokens`), so the limit, the audit and the log are the
same; a token that is not the user's answers 404, as one that does not exist.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from composer.models import ApiToken
from composer.services.api_tokens import api_token_issue, api_token_revoke
from fabric.views.responses import remote_addr

__all__ = ["api_token_create_view", "api_token_list", "api_token_revoke_view"]


def _page(request: HttpRequest, *, key: str = "", issued: ApiToken | None = None) -> HttpResponse:
    user = request.user
    assert user.is_authenticated  # login_required
    tokens = ApiToken.objects.filter(user=user).order_by("-created_at", "-id")
    context = {
        "tokens": tokens,
        "key": key,
        "issued": issued,
        "limit": max(1, settings.COMPOSER_API_TOKENS_PER_USER),
    }
    return render(request, "composer/api_tokens.html", context)


@login_required
@require_GET
@never_cache
def api_token_list(request: HttpRequest) -> HttpResponse:
    """The user's tokens, newest first."""
    return _page(request)


@login_required
@require_POST
@never_cache
def api_token_create_view(request: HttpRequest) -> HttpResponse:
    """A new token, its key shown on the page this once."""
    token, key = api_token_issue(
        user=request.user, remote_addr=remote_addr(request), source="console"
    )
    return _page(request, key=key, issued=token)


@login_required
@require_POST
def api_token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke one of the user's tokens; back to the list."""
    user = request.user
    assert user.is_authenticated  # login_required
    token = get_object_or_404(ApiToken.objects.filter(user=user), pk=pk)
    api_token_revoke(
        user=request.user,
        token=token,
        remote_addr=remote_addr(request),
        source="console",
    )
    messages.success(request, f"API token {pk} revoked: requests that send it answer 401.")
    return redirect("composer:api_tokens")
