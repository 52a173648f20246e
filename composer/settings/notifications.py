"""Settings of the notifications (composer.notifications, docs/notifications.md), read by
`composer.settings.base`: e-mail through Django's mail backend, webhooks' timeouts and
retries, and how long their logs are kept."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from composer.settings.env import env_bool, env_int, env_list, env_str

# Notifications (composer.notifications, docs/notifications.md). E-mail goes through
# Django's mail backend: SMTP by default, configured by these variables; `make run` prints
# messages on the console instead (settings/dev.py).
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT_S", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "composer@localhost")
COMPOSER_NOTIFY_FROM_EMAIL = env_str("COMPOSER_NOTIFY_FROM_EMAIL", "")
# The console's address as people reach it, for links in e-mails and webhook bodies
# (https://composer.example.com); empty: no links.
COMPOSER_CONSOLE_URL = env_str("COMPOSER_CONSOLE_URL", "")
# A webhook POST waits this long for an answer; a failed delivery is tried again after each
# of these waits in turn (seconds), then given up (one attempt more than there are waits).
COMPOSER_WEBHOOK_TIMEOUT_S = env_int("COMPOSER_WEBHOOK_TIMEOUT_S", 5)
_RETRY_S = env_list("COMPOSER_NOTIFY_RETRY_S", ["30", "120", "600", "1800", "7200", "21600"])
if not all(value.isdigit() and int(value) > 0 for value in _RETRY_S):
    raise ImproperlyConfigured(
        "COMPOSER_NOTIFY_RETRY_S must be whole seconds above 0, comma-separated "
        f"(30,120,600); got {','.join(_RETRY_S)!r}"
    )
COMPOSER_NOTIFY_RETRY_S = [int(value) for value in _RETRY_S]
# Tenants' webhooks may post to private, loopback and link-local addresses only when this is
# on (a lab); operators' webhooks always may.
COMPOSER_WEBHOOK_ALLOW_PRIVATE = env_bool("COMPOSER_WEBHOOK_ALLOW_PRIVATE", False)
# Finished deliveries (delivered, failed, cancelled) are kept this long in the logs.
COMPOSER_NOTIFY_RETENTION_DAYS = env_int("COMPOSER_NOTIFY_RETENTION_DAYS", 30)
