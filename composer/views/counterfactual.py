"""The counterfactual page (operators): the compositions of a period replayed onto
fixed-ratio servers, against what the composable data centre used, with the method.

Tenant members get 404 (`operator_required`): the answer spans every tenant's work.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from composer.counterfactual.report import METHOD, resource_rows
from composer.forms.counterfactual import CounterfactualForm
from composer.models import ServerShape
from composer.selectors.counterfactual import counterfactual
from fabric.views.common import operator_required


@operator_required
@require_GET
def counterfactual_view(request: HttpRequest) -> HttpResponse:
    """The question (period, shapes) and, when it is a good one, the answer."""
    now = timezone.now()
    form = CounterfactualForm(request.GET, now=now)
    context: dict[str, Any] = {
        "form": form,
        "answer": None,
        "rows": [],
        "method": METHOD,
        "errors": [],
        "catalogue": list(ServerShape.objects.all()),
        "section": "counterfactual",
    }
    status = 200
    if form.is_valid():
        data = form.cleaned_data
        answer = counterfactual(start=data["start"], end=data["end"], shapes=data["shape"], now=now)
        context["answer"], context["rows"] = answer, resource_rows(answer.result)
        if not request.GET:  # a first visit: show the defaults in the fields
            context["form"] = CounterfactualForm(
                initial={
                    "start": timezone.localtime(data["start"]),
                    "end": timezone.localtime(data["end"]),
                },
                now=now,
            )
    else:
        # A question that cannot be answered is a 400; an empty catalogue is not a bad
        # question but a state the page explains (how to add shapes), so a plain 200.
        empty = not context["catalogue"] and not request.GET.get("shape")
        status = 200 if empty and set(form.errors) == {"shape"} else 400
        for name, messages in form.errors.items():
            label = form.fields[name].label if name in form.fields else "Period"
            context["errors"].extend(f"{label}: {m}" for m in messages)
    return render(request, "composer/counterfactual.html", context, status=status)
