"""Operability: Prometheus metrics, liveness and readiness, heartbeats, structured logs.

- `metrics`: the per-process series (jobs run, HTTP requests, events published, live
  websockets), counted where they happen and added up across the processes of a machine
  through prometheus-client's multiprocess mode (PROMETHEUS_MULTIPROC_DIR);
- `collector`: the domain's series (pools, compositions, jobs waiting, alerts, managers'
  sync and poll age, the outbox, the task queues, heartbeats), read from the database and
  Redis at scrape time, so that they are always right whichever process answers;
- `heartbeat`: each worker and beat process says it is alive in Redis (a key with a TTL);
- `readiness`: what /readyz checks; `views`: /metrics, /healthz, /readyz;
- `logs` and `requestid`: JSON log lines and the request id that follows a request into
  the jobs it enqueues.

See docs/monitoring.md.
"""
