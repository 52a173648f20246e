"""Settings shared by every environment; everything site-specific comes from the environment.

See docs/configuration.md for the variables and their defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from composer.settings.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("COMPOSER_VAR_DIR", str(BASE_DIR / "var")))

# Django's debug mode (tracebacks and the URL map on error pages, templates re-read, every
# SQL statement kept in memory): a developer's opt-in, never on by default, not even for the
# demo that `make run` starts, and never in production.
DEBUG = env_bool("COMPOSER_DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "fabric.apps.FabricConfig",
    "composer.apps.ComposerConfig",
]
# The simulator (fabric/simulator/: the simulated manager's state and driver, the demo data
# centre, fault injection, the simulated world served as Redfish): one optional app. On by
# default here, for the demo, `make run` and the tests; production settings leave it out
# unless COMPOSER_SIMULATOR asks for it, and the product runs the same without it. Last,
# after the fabric admin its fault actions are added to.
SIMULATOR_APP = "fabric.simulator.apps.SimulatorConfig"
COMPOSER_SIMULATOR = env_bool("COMPOSER_SIMULATOR", True)
if COMPOSER_SIMULATOR:
    INSTALLED_APPS.append(SIMULATOR_APP)

MIDDLEWARE = [
    # A request id for each request (into its log lines and the jobs it enqueues) and the
    # HTTP series: first, so that it times and tags everything after it.
    "composer.monitoring.middleware.RequestMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # An API method an endpoint does not have (405), a body that is not JSON (415): both
    # before authentication (composer.api).
    "composer.api.middleware.ApiMethodsFirst",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "composer.urls"
WSGI_APPLICATION = "composer.wsgi.application"
ASGI_APPLICATION = "composer.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "composer.context_processors.console",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'composer.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share one file: wait for a lock rather than fail. A transaction
    # takes the write lock when it begins (IMMEDIATE): one that read first and wanted to
    # write later could otherwise not wait for another writer (SQLite refuses at once with
    # "database is locked", since waiting could deadlock).
    DATABASES["default"].setdefault("OPTIONS", {}).update(timeout=20, transaction_mode="IMMEDIATE")
    DATABASES["default"]["CONN_MAX_AGE"] = 0
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # libpq waits for an unreachable server as long as the operating system lets it (minutes
    # for a host that drops packets): give up after this many seconds instead.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env_int("COMPOSER_DB_CONNECT_TIMEOUT_S", 5)
    )
# A connection pool (psycopg_pool) in web processes on PostgreSQL. Under ASGI each request
# runs its sync code in a thread of its own, and Django's connections are per thread, so
# CONN_MAX_AGE reuses nothing there: every request opened a new PostgreSQL connection
# (a few milliseconds, the largest single cost of a small request). The pool hands each
# request a connection already open and takes it back at the end of the request. On by
# default only where composer/asgi.py set COMPOSER_ASGI while these settings loaded: never
# in Celery workers, whose prefork children would inherit a pool whose threads did not
# survive the fork (a worker keeps its one connection between tasks by itself, see
# composer/celery.py), nor in commands. COMPOSER_DB_POOL=0 turns it off, =1 on elsewhere.
DATABASE_POOL = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "COMPOSER_DB_POOL", env_bool("COMPOSER_ASGI", False)
)
if DATABASE_POOL:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # required by Django with a pool
    # The pool checks a connection before handing it out (one empty query, a fraction of a
    # millisecond): one the server dropped while it sat idle (a restart, a failover) is
    # replaced instead of failing the request that drew it.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("COMPOSER_DB_POOL_CHECK", True)
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        # Per process: the connections it keeps open when idle, the most it opens (the
        # requests, websocket handlers and threads using the database at once), and how
        # long one waits for a connection when all are busy before it fails.
        "min_size": env_int("COMPOSER_DB_POOL_MIN_SIZE", 2),
        "max_size": env_int("COMPOSER_DB_POOL_MAX_SIZE", 20),
        "timeout": env_int("COMPOSER_DB_POOL_TIMEOUT_S", 10),
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "composer:dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

# Shared by every web process (throttle counters, for one) when a Redis is named; a
# process-local cache otherwise, so that commands run without Redis still work.
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # Short timeouts: a request that uses the cache (the token throttle) fails open
            # when Redis is away, and should learn it at once rather than hang.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
        if env_str("REDIS_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# Live events go out as Redis pub/sub messages on "<prefix>:<group>" (composer.fanout).
# Pub/sub channels are shared by every database number of a Redis server: deployments
# (or test runs) sharing one server need different prefixes.
COMPOSER_EVENTS_CHANNEL_PREFIX = env_str("COMPOSER_EVENTS_CHANNEL_PREFIX", "composer.events")

# Live events (composer.events, docs/events.md) ride the Redis pub/sub layer: one PUBLISH
# per group, fanned out in each web process to its connections; under the same prefix.
CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": COMPOSER_EVENTS_CHANNEL_PREFIX},
    }
}
# Events fan out through composer.fanout's hub (one subscription per web process); off,
# they take the channel layer's group_send (slower with many connections; see
# docs/events.md). For comparison and as an escape hatch.
COMPOSER_EVENTS_HUB = env_bool("COMPOSER_EVENTS_HUB", True)
# Each websocket replays from the database what it missed, and re-reads its user's scope,
# every heartbeat; and looks this far back for events that committed out of id order.
COMPOSER_EVENTS_HEARTBEAT_S = env_int("COMPOSER_EVENTS_HEARTBEAT_S", 20)
COMPOSER_EVENTS_SETTLE_S = env_int("COMPOSER_EVENTS_SETTLE_S", 30)

CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "inventory-sync-all": {
        "task": "composer.tasks.inventory_sync_all_task",
        "schedule": env_int("COMPOSER_SYNC_INTERVAL_S", 300),
    },
    # Failure domains counted under another definition of the blast radius (an upgrade
    # changed it): recounted from the console's tables, not at the next sync.
    "failure-domains-recount": {
        "task": "composer.tasks.failure_domains_recount_task",
        "schedule": 60,
    },
    # Jobs whose worker died (their lease expired) are taken over and resumed: within
    # COMPOSER_JOB_LEASE_S plus this tick of the death.
    "jobs-lease-sweep": {
        "task": "composer.tasks.jobs_lease_sweep_task",
        "schedule": env_int("COMPOSER_JOB_LEASE_SWEEP_S", 2),
    },
    # The reconciler: fabric bindings against the database, bindings still to undo,
    # unfinished compositions, health, allocated GiB (composer.services.reconcile).
    # `expires`: a run queued while no worker ran is dropped, the next one comes soon.
    "reconcile": {
        "task": "composer.tasks.reconcile_task",
        "schedule": env_int("COMPOSER_RECONCILE_INTERVAL_S", 30),
        "options": {"expires": env_int("COMPOSER_RECONCILE_INTERVAL_S", 30)},
    },
    # The outbox: events whose publish after commit failed (Redis away) go out now.
    "events-publish-pending": {
        "task": "composer.tasks.events_publish_pending_task",
        "schedule": env_int("COMPOSER_EVENTS_SWEEP_S", 5),
    },
    # Health: a tick that polls each fabric manager whose own interval is up.
    "health-poll-due": {
        "task": "composer.tasks.health_poll_due_task",
        "schedule": env_int("COMPOSER_HEALTH_TICK_S", 5),
    },
    "health-samples-prune": {
        "task": "composer.tasks.health_samples_prune_task",
        "schedule": crontab(minute=17),
    },
    "inventory-changes-prune": {
        "task": "composer.tasks.inventory_changes_prune_task",
        "schedule": crontab(minute=29),
    },
    # Holds (composer.services.holds) past their time give their claimed devices back:
    # within this tick of the moment they lapse.
    "composition-holds-expire": {
        "task": "composer.tasks.composition_holds_expire_task",
        "schedule": env_int("COMPOSER_HOLD_SWEEP_S", 10),
    },
    # The clock of bookings (composer.services.booking_clock): occurrences composed ahead of
    # their start, warned before their end, decomposed at it. `expires`: ticks queued while
    # no worker ran are dropped; the next one catches up with what was missed.
    "bookings-tick": {
        "task": "composer.tasks.bookings_tick_task",
        "schedule": env_int("COMPOSER_BOOKING_TICK_S", 30),
        "options": {"expires": env_int("COMPOSER_BOOKING_TICK_S", 30)},
    },
    # The job outbox (composer.services.dispatch): QUEUED jobs the broker does not hold
    # (refused while Redis was away, or lost with a Redis restart) are sent again.
    "jobs-dispatch": {
        "task": "composer.tasks.jobs_dispatch_task",
        "schedule": env_int("COMPOSER_JOB_DISPATCH_S", 5),
    },
    # The notifications' outbox (composer.notifications.delivery): retries whose back-off
    # is over, deliveries the broker refused or lost, attempts whose worker died.
    "notifications-dispatch": {
        "task": "composer.tasks.notifications_dispatch_task",
        "schedule": env_int("COMPOSER_NOTIFY_DISPATCH_S", 5),
    },
    "notifications-prune": {
        "task": "composer.tasks.notifications_prune_task",
        "schedule": crontab(minute=41),
    },
    # Utilisation history (composer.services.utilisation): a sample a minute, its rollups.
    "utilisation-tick": {
        "task": "composer.tasks.utilisation_tick_task",
        "schedule": crontab(),
        "options": {"expires": 60},
    },
}
# Housekeeping (beat's periodic tasks and the health polls) runs on a queue of its own,
# consumed by a worker of its own: behind a backlog of slow compose jobs on the default
# queue, the outbox sweeps would expire unrun and live events go out late. Job tasks
# (compose, decompose, heal, inventory sync) stay on the default queue ("celery").
COMPOSER_HOUSEKEEPING_QUEUE = "housekeeping"
COMPOSER_HOUSEKEEPING_TASKS = [
    "composer.tasks.composition_holds_expire_task",
    "composer.tasks.events_publish_pending_task",
    "composer.tasks.health_poll_due_task",
    "composer.tasks.health_poll_task",
    "composer.tasks.jobs_dispatch_task",
    "composer.tasks.failure_domains_recount_task",
    "composer.tasks.health_samples_prune_task",
    "composer.tasks.inventory_changes_prune_task",
    "composer.tasks.inventory_sync_all_task",
    "composer.tasks.jobs_lease_sweep_task",
    "composer.tasks.reconcile_task",
    "composer.tasks.notifications_dispatch_task",
    "composer.tasks.notifications_prune_task",
    "composer.tasks.utilisation_tick_task",
    "composer.tasks.bookings_tick_task",
]
CELERY_TASK_ROUTES = {
    name: {"queue": COMPOSER_HOUSEKEEPING_QUEUE} for name in COMPOSER_HOUSEKEEPING_TASKS
}
# A QUEUED job whose message went out this long ago and that no worker started is sent
# again (a Redis restarted without persistence loses its messages; a duplicate is a no-op).
COMPOSER_JOB_REDISPATCH_S = env_int("COMPOSER_JOB_REDISPATCH_S", 60)
# A RUNNING job's lease (composer.lease): its worker renews it every third of this; once
# it expires (the worker died), the job is taken over and resumes from its last step.
COMPOSER_JOB_LEASE_S = env_int("COMPOSER_JOB_LEASE_S", 10)
# A job whose worker died this many times is failed (and its composition rolled back)
# instead of being taken over again: the job itself may be what kills its worker.
COMPOSER_JOB_MAX_RESUMES = env_int("COMPOSER_JOB_MAX_RESUMES", 3)
# The machine list the server-shape catalogue is seeded from (`seed_server_shapes`): Alibaba's
# PAI trace (cluster-trace-gpu-v2020), read where it lies, never copied. Empty: the first
# shared/data/alibaba-gpu-v2020/pai_machine_spec.csv found beside the repository or above it.
COMPOSER_SERVER_SHAPES_CSV = env_str("COMPOSER_SERVER_SHAPES_CSV", "")

# The reconciler (composer.services.reconcile): a composition left unfinished with no queued
# or running job is finished (rolled back, decompose queued again) once untouched this long;
# its runs are kept this long.
COMPOSER_RECONCILE_GRACE_S = env_int("COMPOSER_RECONCILE_GRACE_S", 30)
COMPOSER_RECONCILE_RETENTION_HOURS = env_int("COMPOSER_RECONCILE_RETENTION_HOURS", 168)
# An unbind that fails transiently (rollback, heal, orphan) is tried this many times in all,
# waiting COMPOSER_UNBIND_BACKOFF_MS, then twice that, ... in between (3 tries: 0.75 s); what
# still fails is held by an UnbindPending row the reconciler retries.
COMPOSER_UNBIND_ATTEMPTS = env_int("COMPOSER_UNBIND_ATTEMPTS", 3)
COMPOSER_UNBIND_BACKOFF_MS = env_int("COMPOSER_UNBIND_BACKOFF_MS", 250)
# How many devices a compose job binds at once:
# a fabric manager binds devices independently, so slow binds need not wait for each other...
COMPOSER_BIND_PARALLELISM = env_int("COMPOSER_BIND_PARALLELISM", 4)
# ...once the first bind took this long: each parallel bind opens a database connection of
# its own, which costs more than the whole bind on a fast manager.
COMPOSER_BIND_PARALLEL_AFTER_MS = env_int("COMPOSER_BIND_PARALLEL_AFTER_MS", 20)
# Health polling (fabric.health.poll): a new fabric manager's poll interval (each manager
# has its own), how often a poll stores a sample of every element (in between, only those
# unwell or changed), and how long samples are kept before health_samples_prune deletes them.
COMPOSER_HEALTH_POLL_INTERVAL_S = env_int("COMPOSER_HEALTH_POLL_INTERVAL_S", 30)
COMPOSER_HEALTH_SAMPLE_INTERVAL_S = env_int("COMPOSER_HEALTH_SAMPLE_INTERVAL_S", 60)
# Least seconds between two polls of one manager asked for by its pushed events (a storm).
COMPOSER_HEALTH_EVENT_POLL_MIN_S = env_int("COMPOSER_HEALTH_EVENT_POLL_MIN_S", 15)
COMPOSER_HEALTH_RETENTION_HOURS = env_int("COMPOSER_HEALTH_RETENTION_HOURS", 24)
# Utilisation history: minute samples are kept this many days, hourly and daily rollups these.
COMPOSER_UTILISATION_MINUTES_DAYS = env_int("COMPOSER_UTILISATION_MINUTES_DAYS", 8)
COMPOSER_UTILISATION_ROLLUPS_DAYS = env_int("COMPOSER_UTILISATION_ROLLUPS_DAYS", 366)

# Operability (composer.monitoring, docs/monitoring.md). How often inventories sync (beat's
# schedule above): the metrics compare each manager's sync age with it.
COMPOSER_SYNC_INTERVAL_S = env_int("COMPOSER_SYNC_INTERVAL_S", 300)
# Bookings: an occurrence is composed this long before its window starts, and its tenant
# is warned this long before it ends (composer.services.booking_clock).
COMPOSER_BOOKING_LEAD_S = env_int("COMPOSER_BOOKING_LEAD_S", 120)
COMPOSER_BOOKING_WARN_S = env_int("COMPOSER_BOOKING_WARN_S", 600)

# Worker and beat processes write a heartbeat to Redis every COMPOSER_HEARTBEAT_INTERVAL_S;
# one older than COMPOSER_HEARTBEAT_STALE_S is a dead process (/readyz,
# composer_processes_alive), one older than COMPOSER_HEARTBEAT_TTL_S is forgotten.
COMPOSER_HEARTBEAT_INTERVAL_S = env_int("COMPOSER_HEARTBEAT_INTERVAL_S", 5)
COMPOSER_HEARTBEAT_STALE_S = env_int("COMPOSER_HEARTBEAT_STALE_S", 30)
COMPOSER_HEARTBEAT_TTL_S = env_int("COMPOSER_HEARTBEAT_TTL_S", 600)
# /readyz fails when a live event stays unpublished, or a queued job unsent, this long.
COMPOSER_READY_OUTBOX_MAX_AGE_S = env_int("COMPOSER_READY_OUTBOX_MAX_AGE_S", 60)
# /metrics and /readyz ask the database once, giving up after this many seconds, before they
# read it (composer.monitoring.dbprobe): with the database away they answer at once.
COMPOSER_MONITORING_DB_TIMEOUT_S = env_int("COMPOSER_MONITORING_DB_TIMEOUT_S", 2)
# Who may read /metrics: an address in these networks ("*": any) and, when set, the bearer
# token (composer.monitoring.access).
COMPOSER_METRICS_ALLOWED_NETWORKS = env_list(
    "COMPOSER_METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"]
)
COMPOSER_METRICS_TOKEN = env_str("COMPOSER_METRICS_TOKEN", "")
# Log lines as plain text or one JSON object each (web, workers and beat alike).
COMPOSER_LOG_FORMAT = env_str("COMPOSER_LOG_FORMAT", "plain").strip().lower() or "plain"
if COMPOSER_LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(
        f"COMPOSER_LOG_FORMAT must be plain or json; got {COMPOSER_LOG_FORMAT!r}"
    )

# The largest request body read: a bigger form is refused (400) and a bigger API body
# answers 413 before it is read (composer.api.parsers).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("COMPOSER_MAX_BODY_BYTES", 1024 * 1024)

# The REST API's and its schema's settings; the notifications' (mail, webhooks).
from composer.settings.api import *  # noqa: E402, F403
from composer.settings.notifications import *  # noqa: E402, F403

COMPOSER_DEMO_PASSWORD = env_str("COMPOSER_DEMO_PASSWORD", "demo")
# Fernet keys that encrypt fabric managers' credentials (fabric/credentials.py), newest
# first: the first encrypts, any of them decrypts, so keys rotate with `manage.py
# rotate_credentials`. Without one, credentials cannot be saved (`make run` makes one).
COMPOSER_CREDENTIALS_KEYS = env_list("COMPOSER_CREDENTIALS_KEYS", [])
# How long the console's "Test connection" waits for a manager's answer (in the request).
COMPOSER_PROBE_TIMEOUT_S = env_int("COMPOSER_PROBE_TIMEOUT_S", 10)
# Multiplies the simulated fabric manager's latencies: 1.0 realistic, 0.0 no waiting (tests).
COMPOSER_SIMULATOR_LATENCY_SCALE = float(env_str("COMPOSER_SIMULATOR_LATENCY_SCALE", "1.0"))
# The account of the simulated world served as Redfish (`manage.py simulator_redfish`);
# empty: the simulator's demo account (docs/drivers.md).
COMPOSER_SIMULATOR_REDFISH_USERNAME = env_str("COMPOSER_SIMULATOR_REDFISH_USERNAME", "")
COMPOSER_SIMULATOR_REDFISH_PASSWORD = env_str("COMPOSER_SIMULATOR_REDFISH_PASSWORD", "")

# Composer's Redfish service (docs/redfish.md): a session unused this long ends, and one
# user holds at most this many sessions at once (the oldest past it are refused, not cut).
COMPOSER_REDFISH_SESSION_TIMEOUT_S = env_int("COMPOSER_REDFISH_SESSION_TIMEOUT_S", 1800)
COMPOSER_REDFISH_SESSIONS_PER_USER = env_int("COMPOSER_REDFISH_SESSIONS_PER_USER", 32)
# API tokens one user holds at once (README, "The API"): issuing one more revokes the least
# recently used.
COMPOSER_API_TOKENS_PER_USER = env_int("COMPOSER_API_TOKENS_PER_USER", 10)
# Wrong passwords a minute from one address before Redfish sign-ins answer 429.
COMPOSER_REDFISH_AUTH_FAILURES = env_int("COMPOSER_REDFISH_AUTH_FAILURES", 30)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "()": "composer.monitoring.logs.PlainFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
        },
        "json": {"()": "composer.monitoring.logs.JsonFormatter"},
    },
    "filters": {"request_id": {"()": "composer.monitoring.requestid.RequestIdFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": COMPOSER_LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
