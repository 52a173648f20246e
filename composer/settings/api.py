"""Settings of the REST API (Django REST framework) and of its OpenAPI schema
(drf-spectacular), read by `composer.settings.base`."""

from __future__ import annotations

REST_FRAMEWORK = {
    # JSON bodies only, bounded (composer.api.parsers); forms and multipart answer 415.
    "DEFAULT_PARSER_CLASSES": ["composer.api.parsers.JSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # `Token <key>`, looked up by its digest; malformed keys refused before the database.
        "composer.api.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "composer.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "composer.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "composer.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Composer API",
    "DESCRIPTION": "Inventory, topology and compositions of a composable data centre.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several models have a `kind` or `state` with different choices: name each enum.
    "ENUM_NAME_OVERRIDES": {
        "DeviceKindEnum": "fabric.choices.DeviceKind",
        "DeviceStateEnum": "fabric.choices.DeviceState",
        "EnclosureKindEnum": "fabric.choices.EnclosureKind",
        "ComponentStateEnum": "fabric.choices.ComponentState",
        "LinkStateEnum": "fabric.choices.LinkState",
        "AlertStateEnum": "fabric.choices.AlertState",
        "HealthEnum": "fabric.choices.Health",
        "JobKindEnum": "composer.choices.JobKind",
        "JobStatusEnum": "composer.choices.JobStatus",
        "CompositionStateEnum": "composer.choices.CompositionState",
        "AllocationStateEnum": "composer.choices.AllocationState",
        "BookingStateEnum": "composer.choices.BookingState",
        "RecurrenceEnum": "composer.choices.Recurrence",
        "OccurrenceStateEnum": "composer.choices.OccurrenceState",
        "SeverityEnum": "fabric.choices.AlertSeverity",
        "SourceTypeEnum": "fabric.choices.AlertSource",
        "AlertRuleEnum": "composer.api.serializers.notifications.RULE_CHOICES",
        "DeliveryEventEnum": "composer.models.notifications.DeliveryEvent",
        "DeliveryChannelEnum": "composer.models.notifications.DeliveryChannel",
        "DeliveryStatusEnum": "composer.models.notifications.DeliveryStatus",
    },
    # The shared error shape and each operation's error responses (composer.api.schema).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "composer.api.schema.add_error_responses",
    ],
}
