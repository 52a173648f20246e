"""`POST /api/v1/simulator/faults/`: fault injection for demos and tests (operators only).

Only fabric managers that use the simulated driver accept faults. The answer is 202: the
fault is in the simulated fabric at once, and a health poll is queued, which opens (or
closes) the alert and pushes it to the browsers a moment later; 200 when the action
changed nothing. The target is resolved as on the fault page
(`fabric.services.fault_targets`). In the optional simulator app, routed by
`fabric.simulator.console.api_urls`: a console without the app answers this path with the API's
JSON 404.
"""

from __future__ import annotations

import logging
from typing import Any

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from composer.api.errors import ErrorSerializer
from fabric.api.permissions import IsOperatorOr404
from fabric.choices import FaultAction, FaultTarget
from fabric.models import FabricManager
from fabric.simulator.console.faults import simulator_fault

logger = logging.getLogger(__name__)


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string"}], "example": "cxl-spine-1"})
class _IdOrName(serializers.Field):
    """A console id (a JSON number) or a name / external id (a string)."""

    default_error_messages = {"invalid": "Give a console id (a number) or a name."}

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int):
            return data
        if isinstance(data, str) and data.strip():
            return data.strip()
        self.fail("invalid")
        raise AssertionError  # unreachable: fail() raises

    def to_representation(self, value: Any) -> Any:
        return value


class FaultRequestSerializer(serializers.Serializer):
    target_type = serializers.ChoiceField(choices=FaultTarget.choices)
    target_id = _IdOrName(help_text="The element's console id, external id or name.")
    action = serializers.ChoiceField(choices=FaultAction.choices)
    manager = _IdOrName(
        required=False,
        help_text="Fabric manager id or name; may be left out when only one is simulated.",
    )

    def validate_manager(self, value: int | str) -> FabricManager:
        lookup: dict[str, int | str] = {"pk": value} if isinstance(value, int) else {"name": value}
        manager = FabricManager.objects.filter(**lookup).first()
        if manager is None:
            raise serializers.ValidationError(f"No fabric manager {value!r}.")
        return manager

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "manager" not in attrs:
            simulated = list(FabricManager.objects.filter(driver="simulated")[:2])
            if len(simulated) != 1:
                raise serializers.ValidationError(
                    {
                        "manager": "Name the fabric manager: "
                        f"{'none' if not simulated else 'several'} use the simulated driver."
                    }
                )
            attrs["manager"] = simulated[0]
        return attrs


class FaultResultSerializer(serializers.Serializer):
    target_type = serializers.CharField()
    target_id = serializers.IntegerField(help_text="The element's console id.")
    target_name = serializers.CharField(
        help_text="The element's name (a link's two ends: `cxl-spine-1 <-> mem-a-01`)."
    )
    action = serializers.CharField()
    before = serializers.CharField(help_text='The element\'s own fault before: "none", …')
    after = serializers.CharField()
    changed = serializers.BooleanField(
        help_text="False when the action changed nothing (recovering an element with no "
        "fault, failing a failed one): nothing is recorded."
    )
    message = serializers.CharField(help_text="What happened, in words for a person.")
    manager = serializers.IntegerField()
    change_record = serializers.IntegerField(
        allow_null=True, help_text="The audit record of the injection; null when unchanged."
    )
    health_poll = serializers.CharField(help_text='"queued": the alert follows the poll.')


class SimulatorFaultView(GenericAPIView):
    """Inject a fault into a simulated fabric, or recover from one."""

    permission_classes = [IsOperatorOr404]
    serializer_class = FaultRequestSerializer

    @extend_schema(
        summary="Inject or clear a simulated fault",
        description=(
            "Fails, degrades or recovers one device, link, switch, enclosure or power feed "
            "of a simulated fabric manager, writes an audit record and queues a health poll "
            "of that manager, which opens or closes the alert (with its blast radius) and "
            "pushes it to every browser that may see it (202). An action that changes "
            "nothing (recovering an element with no fault, failing a failed one) answers "
            "200 with `changed` false and records nothing (the poll still runs, so the "
            "console catches up with a change made elsewhere). The target is a "
            "name (a link by its two ends, `cxl-spine-1 <-> mem-a-01`), an external id or "
            "a console id, resolved as on the fault page. Operators only; other users get "
            "404. Bad input answers 400 naming the field; a manager that is not simulated "
            "answers 400 on `manager`."
        ),
        request=FaultRequestSerializer,
        responses={
            200: FaultResultSerializer,
            202: FaultResultSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Bad input; `field` names it."),
            401: OpenApiResponse(ErrorSerializer, description="No credentials."),
            404: OpenApiResponse(ErrorSerializer, description="Not an operator."),
        },
        examples=[
            OpenApiExample(
                "Fail a switch",
                request_only=True,
                value={"target_type": "switch", "target_id": "cxl-spine-1", "action": "fail"},
            ),
            OpenApiExample(
                "Injected",
                response_only=True,
                status_codes=["202"],
                value={
                    "target_type": "switch",
                    "target_id": 4,
                    "target_name": "cxl-spine-1",
                    "action": "fail",
                    "before": "none",
                    "after": "failed",
                    "changed": True,
                    "message": "Switch cxl-spine-1 failed (it was running normally). A health "
                    "poll is queued: alerts and compositions follow in a moment.",
                    "manager": 1,
                    "change_record": 812,
                    "health_poll": "queued",
                },
            ),
        ],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        done = simulator_fault(
            manager=data["manager"],
            target_type=data["target_type"],
            target_id=data["target_id"],
            action=data["action"],
            actor=request.user,
            remote_addr=request.META.get("REMOTE_ADDR") or None,
            source="api",
        )
        outcome = done.outcome
        logger.info(
            "fault %s on %s %s through the API by user %s: %s",
            outcome.action,
            outcome.target_type,
            outcome.target_id,
            request.user.pk,
            "injected" if outcome.changed else "nothing changed",
        )
        body = {
            "target_type": outcome.target_type,
            "target_id": outcome.target_id,
            "target_name": outcome.target_name,
            "action": outcome.action,
            "before": outcome.before or "none",
            "after": outcome.after or "none",
            "changed": outcome.changed,
            "message": done.message(),
            "manager": data["manager"].pk,
            "change_record": outcome.record.pk if outcome.record is not None else None,
            "health_poll": "queued",
        }
        code = status.HTTP_202_ACCEPTED if outcome.changed else status.HTTP_200_OK
        return Response(FaultResultSerializer(body).data, status=code)
