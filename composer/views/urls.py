"""The composer's pages, mounted at the site root.

The simulator's fault page comes from its own app (`fabric.simulator.console.urls`), included by
name only where that optional app is installed: the product never imports it.
"""

from __future__ import annotations

from django.apps import apps
from django.urls import include, path

from composer.views import (
    alerts,
    api_tokens,
    audit,
    bookings,
    bulk,
    calendar,
    composition_list,
    compositions,
    counterfactual,
    dashboard,
    holds,
    jobs,
    managers,
    notification_edit,
    notifications,
    pools,
    quotas,
    reconcile,
    resize,
    search,
    templates,
    utilisation,
)

app_name = "composer"
urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("pools/", pools.pool_list, name="pool_list"),
    path("pools/<slug:slug>/", pools.pool_detail, name="pool_detail"),
    path("utilisation/", utilisation.utilisation, name="utilisation"),
    path("compositions/", composition_list.composition_list, name="composition_list"),
    path("templates/", templates.template_list, name="composition_templates"),
    path("compositions/new/", compositions.composition_create, name="composition_create"),
    path(
        "compositions/decompose/",
        bulk.compositions_decompose_bulk,
        name="compositions_decompose_bulk",
    ),
    path("bookings/", bookings.booking_list, name="booking_list"),
    path("calendar/", calendar.calendar_page, name="calendar"),
    path("bookings/new/", bookings.booking_create, name="booking_create"),
    path("bookings/<int:pk>/", bookings.booking_detail, name="booking_detail"),
    path("bookings/<int:pk>/cancel/", bookings.booking_cancel_view, name="booking_cancel"),
    path(
        "bookings/<int:pk>/occurrences/<int:occurrence>/cancel/",
        bookings.occurrence_cancel_view,
        name="occurrence_cancel",
    ),
    path("compositions/quotas/", quotas.composition_quotas, name="composition_quotas"),
    path(
        "compositions/preview/",
        compositions.composition_preview_view,
        name="composition_preview",
    ),
    path("compositions/<int:pk>/", compositions.composition_detail, name="composition_detail"),
    path("compositions/<int:pk>/live/", compositions.composition_live, name="composition_live"),
    path(
        "compositions/<int:pk>/decompose/",
        compositions.composition_decompose_view,
        name="composition_decompose",
    ),
    path(
        "compositions/<int:pk>/apply/",
        holds.composition_hold_apply_view,
        name="composition_hold_apply",
    ),
    path(
        "compositions/<int:pk>/release/",
        holds.composition_hold_release_view,
        name="composition_hold_release",
    ),
    path(
        "compositions/<int:pk>/resize/",
        resize.composition_resize,
        name="composition_resize",
    ),
    path(
        "compositions/<int:pk>/resize/preview/",
        resize.composition_resize_preview,
        name="composition_resize_preview",
    ),
    path(
        "compositions/<int:pk>/heal/",
        compositions.composition_heal_view,
        name="composition_heal",
    ),
    path("account/api-tokens/", api_tokens.api_token_list, name="api_tokens"),
    path("account/api-tokens/new/", api_tokens.api_token_create_view, name="api_token_create"),
    path(
        "account/api-tokens/revoke/",
        api_tokens.api_token_revoke_all_view,
        name="api_token_revoke_all",
    ),
    path(
        "account/api-tokens/<int:pk>/revoke/",
        api_tokens.api_token_revoke_view,
        name="api_token_revoke",
    ),
    path("alerts/", alerts.alert_list, name="alert_list"),
    path("alerts/count/", alerts.alert_count, name="alert_count"),
    path("alerts/acknowledge/", bulk.alerts_acknowledge_bulk, name="alerts_acknowledge_bulk"),
    path(
        "alerts/<int:pk>/acknowledge/",
        alerts.alert_acknowledge_view,
        name="alert_acknowledge",
    ),
    path("notifications/routes/", notifications.route_list, name="route_list"),
    path("notifications/routes/new/", notification_edit.route_create_view, name="route_create"),
    path(
        "notifications/routes/<int:pk>/edit/",
        notification_edit.route_edit_view,
        name="route_edit",
    ),
    path(
        "notifications/routes/<int:pk>/delete/",
        notification_edit.route_delete_view,
        name="route_delete",
    ),
    path("notifications/webhooks/", notifications.webhook_list, name="webhook_list"),
    path(
        "notifications/webhooks/new/",
        notification_edit.webhook_create_view,
        name="webhook_create",
    ),
    path("notifications/webhooks/<int:pk>/", notifications.webhook_detail, name="webhook_detail"),
    path(
        "notifications/webhooks/<int:pk>/edit/",
        notification_edit.webhook_edit_view,
        name="webhook_edit",
    ),
    path(
        "notifications/webhooks/<int:pk>/delete/",
        notification_edit.webhook_delete_view,
        name="webhook_delete",
    ),
    path(
        "notifications/webhooks/<int:pk>/test/",
        notifications.webhook_test_view,
        name="webhook_test",
    ),
    path(
        "notifications/webhooks/<int:pk>/secret/",
        notifications.webhook_secret_view,
        name="webhook_secret",
    ),
    path("notifications/silences/", notifications.silence_list, name="silence_list"),
    path(
        "notifications/silences/new/",
        notification_edit.silence_create_view,
        name="silence_create",
    ),
    path(
        "notifications/silences/<int:pk>/end/",
        notifications.silence_end_view,
        name="silence_end",
    ),
    path("jobs/", jobs.job_list, name="job_list"),
    path("audit/", audit.audit_list, name="audit_list"),
    path("search/", search.search_view, name="search"),
    path("jobs/<int:pk>/", jobs.job_detail, name="job_detail"),
    path("jobs/<int:pk>/progress/", jobs.job_progress, name="job_progress"),
    path("managers/<int:pk>/sync/", managers.manager_sync, name="manager_sync"),
    path("reconcile/", reconcile.reconcile_list, name="reconcile_list"),
    path("counterfactual/", counterfactual.counterfactual_view, name="counterfactual"),
    path("reconcile/run/", reconcile.reconcile_now, name="reconcile_now"),
    *(
        [path("", include("fabric.simulator.console.urls"))]
        if apps.is_installed("fabric.simulator")
        else []
    ),
]
