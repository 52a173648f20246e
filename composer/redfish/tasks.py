"""The TaskService: Composer's jobs as Redfish Tasks, and each task's monitor.

A write that takes long (compose, decompose, applying a reservation) answers `202 Accepted`
with `Location` set to its task monitor, `{TASKS}/{job id}/Monitor`. The monitor answers
202 (the Task, `Location` and `Retry-After`) while the job is queued or running, then the
operation's own answer, as the Redfish specification has it: a compose that made its
system `201 Created` with the system and its `Location`, a decompose `204`, a job that
failed the Redfish error with the job's reason. The Task (`{TASKS}/{job id}`) says where
the job stands: `TaskState`, `PercentComplete`, the job's message (`Description`).

A task's id is its job's id. A tenant's session sees its tenants' jobs only (others: 404,
as for any other tenant's thing); operators see every job, fabric work included. The
collection lists the latest `LISTED` jobs, newest first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from composer.choices import TERMINAL_JOB_STATUSES, CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.redfish import paths
from composer.redfish.answers import Answer
from composer.redfish.caller import Call, Caller
from composer.redfish.composed import row_id, system_body
from composer.redfish.inventory import per_request, per_request_kept
from composer.redfish.paths import MONITOR, TASK_SERVICE, TASKS
from composer.redfish.routes import Route
from composer.services.compositions import COMPOSITION_TARGET
from fabric.redfish_render.build import collection, health_status, ref, refs, resource
from fabric.redfish_render.errors import refuse
from fabric.redfish_render.messages import message

__all__ = ["ROUTES", "task_accepted", "task_body", "task_monitor"]

LISTED = 1000
RETRY_AFTER_S = 1
# A job's status as a Redfish TaskState, and the health it reports.
STATES: dict[str, tuple[str, str]] = {
    JobStatus.QUEUED: ("New", "OK"),
    JobStatus.RUNNING: ("Running", "OK"),
    JobStatus.SUCCEEDED: ("Completed", "OK"),
    JobStatus.FAILED: ("Exception", "Critical"),
    JobStatus.CANCELLED: ("Cancelled", "Warning"),
}


def task_path(job: Job) -> str:
    return paths.task(job.pk)


def task_monitor(job: Job) -> str:
    """Where a client follows `job` until it is done."""
    return f"{task_path(job)}/{MONITOR}"


def _time(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def _created(job: Job) -> list[str]:
    """The system a compose job makes (its composition), once it is one."""
    if job.kind != JobKind.COMPOSE or job.target_type != COMPOSITION_TARGET:
        return []
    return [paths.system(job.target_id)] if job.target_id else []


def task_body(job: Job) -> dict[str, Any]:
    """`job` as a Task. Only what changes when the job moves is in it, so its ETag holds
    while the job stands still."""
    state, health = STATES.get(job.status, ("New", "OK"))
    words = job.error if job.status == JobStatus.FAILED and job.error else job.message
    messages = (
        [message("Base.GeneralError", resolution=words)]
        if job.status == JobStatus.FAILED
        else ([message("Base.Success")] if job.status == JobStatus.SUCCEEDED else [])
    )
    body = resource(
        task_path(job),
        f"{job.get_kind_display()} {job.target_label or job.pk}".strip(),
        "Task",
        TaskState=state,
        TaskStatus=health,
        PercentComplete=100 if job.status == JobStatus.SUCCEEDED else job.progress_percent,
        TaskMonitor=task_monitor(job),
        Messages=messages,
        Links={"CreatedResources": refs(_created(job))},
    )
    if words:
        body["Description"] = words
    if job.started_at:
        body["StartTime"] = _time(job.started_at)
    if job.finished_at:
        body["EndTime"] = _time(job.finished_at)
    return body


def task_accepted(job: Job) -> Answer:
    """The answer of a write whose work runs as `job`: 202, the Task, the monitor."""
    return Answer(
        202,
        task_body(job),
        {"Location": task_monitor(job), "Retry-After": str(RETRY_AFTER_S)},
    )


def _jobs(caller: Caller) -> Any:
    """The jobs the caller sees: every one for an operator, else its active tenants'
    (the scope of every Redfish resource: `Caller.tenant_ids`)."""
    if caller.operator:
        return Job.objects.all()
    return Job.objects.filter(tenant_id__in=caller.tenant_ids)


def _listed(caller: Caller) -> dict[int, Job]:
    return {job.pk: job for job in _jobs(caller).order_by("-pk")[:LISTED]}


def _job(call: Call) -> Job:
    key = call.params["task"]
    pk = row_id(key)
    listed: dict[int, Job] | None = per_request_kept(call, "tasks")
    if listed is not None and pk in listed:
        return listed[pk]
    job = _jobs(call.caller).filter(pk=pk).first() if pk is not None else None
    if job is None:
        raise refuse(404, f"There is no task {key}.", "Base.ResourceNotFound", "Task", key)
    return job


def task_service(call: Call) -> dict[str, Any]:
    return resource(
        TASK_SERVICE,
        "Task service",
        "TaskService",
        Description="Composer's jobs (compose, decompose, heal, sync) as tasks.",
        ServiceEnabled=True,
        CompletedTaskOverWritePolicy="Manual",
        LifeCycleEventOnTaskStateChange=False,
        Status=health_status(),
        Tasks=ref(TASKS),
    )


def task_list(call: Call) -> dict[str, Any]:
    ids = per_request(call, "tasks", _listed)
    return collection(TASKS, "Task", "Tasks", [paths.task(pk) for pk in ids])


def task_get(call: Call) -> dict[str, Any]:
    return task_body(_job(call))


def monitor_get(call: Call) -> Answer:
    """202 while the job runs; then the answer of the operation it did."""
    job = _job(call)
    if job.status not in TERMINAL_JOB_STATUSES:
        return task_accepted(job)
    if job.status != JobStatus.SUCCEEDED:
        reason = job.error or job.message or "The task did not finish."
        raise refuse(409, reason, "Base.GeneralError")
    if job.kind == JobKind.DECOMPOSE:
        return Answer(204)
    if job.kind == JobKind.COMPOSE and job.target_type == COMPOSITION_TARGET and job.target_id:
        composition = Composition.objects.filter(pk=job.target_id).first()
        if composition is not None and composition.state in (
            CompositionState.READY,
            CompositionState.DEGRADED,
        ):
            path = paths.system(composition.pk)
            return Answer(201, system_body(composition, call.caller), {"Location": path})
    return Answer(200, task_body(job))


ROUTES = [
    Route(TASK_SERVICE, get=task_service),
    Route(TASKS, get=task_list),
    Route(f"{TASKS}/{{task}}", get=task_get),
    Route(f"{TASKS}/{{task}}/{MONITOR}", get=monitor_get),
]
