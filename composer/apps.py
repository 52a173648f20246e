"""App config for the logical world: tenants, jobs, compositions."""

from __future__ import annotations

from django.apps import AppConfig


class ComposerConfig(AppConfig):
    name = "composer"
    verbose_name = "Composer"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The fabric's pages ask who holds a device; compositions answer (fabric never
        # imports composer, so the answer is registered from here).
        from composer.selectors.compositions import device_holder_rows
        from fabric.holders import register_holder_lookup

        register_holder_lookup(device_holder_rows)
        # ...and so does a binding still to undo, until the reconciler unbinds it.
        from composer.selectors.unbinds import unbind_holder_rows

        register_holder_lookup(unbind_holder_rows)

        # The health poll and inventory sync never make a device FREE while a composition
        # holds it: they ask the state its allocations imply.
        from composer.selectors.allocations import allocation_held_states
        from fabric.holders import register_held_state_lookup

        register_held_state_lookup(allocation_held_states)
        # A binding still to undo (`UnbindPending`) holds its device too: BOUND.
        from composer.services.unbinds import unbind_held_states

        register_held_state_lookup(unbind_held_states)

        # A blast radius (what-if pages, alerts) names the compositions and tenants it hurts.
        from composer.selectors.impact import composition_impact
        from fabric.topology.impact import register_contributor

        register_contributor(composition_impact)

        # Tenants see the alerts that hurt their compositions; acknowledgements are events.
        from composer.selectors.alerts import TENANT_ALERT_SCOPE
        from composer.services.health_poll import alert_acknowledged_record
        from fabric.services.alerts import register_ack_listener, register_alert_scope

        register_alert_scope(TENANT_ALERT_SCOPE)
        register_ack_listener(alert_acknowledged_record)

        # Webhooks' signing secrets use the managers' keys: one rotation re-encrypts both.
        from composer.notifications.webhooks import webhooks_secrets_rotate
        from fabric.services.managers.rotate import register_secret_rotation

        register_secret_rotation("webhook signing secret(s)", webhooks_secrets_rotate)
