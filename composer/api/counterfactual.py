"""GET /api/v1/counterfactual/: the compositions of a period replayed onto fixed-ratio
servers, against what the composable data centre used (operators only).

The parameters are the page's form (`composer.forms.counterfactual`), so a bad one is a 400
naming it; the figures are the page's (`composer.counterfactual.report`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from composer.counterfactual.report import METHOD, result_body
from composer.forms.counterfactual import DEFAULT_DAYS, MAX_DAYS, CounterfactualForm
from composer.selectors.counterfactual import counterfactual
from fabric.api.permissions import IsOperatorOr404


class ShapeUsedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    gpu_model = serializers.CharField(help_text="Blank: GPUs of any model.")
    gpus = serializers.IntegerField()
    cores = serializers.IntegerField()
    memory_gib = serializers.IntegerField()


class ShapeCountSerializer(serializers.Serializer):
    shape = serializers.CharField(help_text="The shape's name.")
    servers = serializers.IntegerField()


class ResourceRowSerializer(serializers.Serializer):
    """One resource: the fixed servers at their peak and on average, and composable use."""

    resource = serializers.ChoiceField(choices=["gpus", "cores", "memory_gib"])
    label = serializers.CharField()  # type: ignore[assignment]
    fixed_capacity_at_peak = serializers.FloatField(help_text="Installed on the servers open.")
    fixed_used_at_peak = serializers.FloatField(help_text="What the compositions then needed.")
    fixed_idle_at_peak = serializers.FloatField()
    fixed_idle_share_at_peak = serializers.FloatField(help_text="Idle over installed, 0 to 1.")
    fixed_idle_average = serializers.FloatField(help_text="Idle, averaged over the period.")
    composable_peak = serializers.FloatField(help_text="The most used at once, composed.")
    composable_average = serializers.FloatField(help_text="Used, averaged over the period.")


class CounterfactualSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    shapes = ShapeUsedSerializer(many=True)
    servers_at_peak = serializers.IntegerField(
        help_text="The most fixed-ratio servers open at once: what the work needed."
    )
    peak_at = serializers.DateTimeField(allow_null=True, help_text="When that peak came first.")
    servers_by_shape_at_peak = ShapeCountSerializer(many=True)
    servers_average = serializers.FloatField(help_text="Servers open, averaged over the period.")
    resources = ResourceRowSerializer(many=True)
    compositions = serializers.IntegerField(help_text="Compositions up in the period.")
    split_compositions = serializers.IntegerField(
        help_text="Compositions bigger than one server, given whole servers of their own."
    )
    unplaced = serializers.ListField(
        child=serializers.CharField(),
        help_text="Compositions no chosen shape can hold (GPUs of another model, or none).",
    )
    method = serializers.CharField(help_text="How the figures are reached, in words.")


@extend_schema(
    summary="Fixed-ratio counterfactual",
    description=(
        "The compositions that were up in the period (ready to released), each with the most "
        "it held at once (GPUs, a share as its fraction; cores; host plus CXL memory), "
        "replayed in time order onto fixed-ratio servers of the chosen catalogue shapes by "
        "best fit: how many servers the same work would have needed at peak, what stood "
        "idle on them at that peak and on average, and beside it what the composable data "
        "centre used at its own peak and on average. Operators only."
    ),
    parameters=[
        OpenApiParameter(
            "start",
            {"type": "string", "format": "date-time"},
            description=f"From (default: {DEFAULT_DAYS} days before `end`).",
        ),
        OpenApiParameter(
            "end",
            {"type": "string", "format": "date-time"},
            description=f"To (default: now); after `start`, at most {MAX_DAYS} days later.",
        ),
        OpenApiParameter(
            "shape",
            {"type": "array", "items": {"type": "integer", "minimum": 1}},
            explode=True,
            description="Server shape ids, repeated (default: every shape in the catalogue).",
        ),
    ],
    responses=CounterfactualSerializer,
    examples=[
        OpenApiExample(
            "Two 8-GPU servers at peak",
            response_only=True,
            status_codes=["200"],
            value={
                "start": "2026-11-27T00:00:00Z",
                "end": "2026-12-04T00:00:00Z",
                "shapes": [
                    {
                        "id": 3,
                        "name": "PAI MISC 8x 96c 512 GiB",
                        "gpu_model": "",
                        "gpus": 8,
                        "cores": 96,
                        "memory_gib": 512,
                    }
                ],
                "servers_at_peak": 2,
                "peak_at": "2026-12-01T09:00:00Z",
                "servers_by_shape_at_peak": [{"shape": "PAI MISC 8x 96c 512 GiB", "servers": 2}],
                "servers_average": 1.25,
                "resources": [
                    {
                        "resource": "gpus",
                        "label": "GPUs",
                        "fixed_capacity_at_peak": 16,
                        "fixed_used_at_peak": 10,
                        "fixed_idle_at_peak": 6,
                        "fixed_idle_share_at_peak": 0.375,
                        "fixed_idle_average": 4.5,
                        "composable_peak": 10,
                        "composable_average": 5.5,
                    }
                ],
                "compositions": 5,
                "split_compositions": 0,
                "unplaced": [],
                "method": "Every composition that was up at some time in the period counts…",
            },
        )
    ],
)
class CounterfactualView(APIView):
    """GET /api/v1/counterfactual/?start=&end=&shape=: the replay's answer."""

    permission_classes = [IsOperatorOr404]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = CounterfactualForm(request.query_params)
        if not form.is_valid():
            raise ValidationError(
                {name: [str(m) for m in msgs] for name, msgs in form.errors.items()}
            )
        data = form.cleaned_data
        answer = counterfactual(start=data["start"], end=data["end"], shapes=data["shape"])
        body = {
            "start": answer.start,
            "end": answer.end,
            "shapes": [
                {
                    "id": s.pk,
                    "name": s.name,
                    "gpu_model": s.gpu_model,
                    "gpus": s.gpus,
                    "cores": s.cores,
                    "memory_gib": s.memory_gib,
                }
                for s in answer.shapes
            ],
            **result_body(answer.result),
            "method": " ".join(METHOD),
        }
        return Response(CounterfactualSerializer(body).data)
