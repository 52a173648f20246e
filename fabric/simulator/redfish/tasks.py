"""The served world's TaskService: a write that takes long is answered 202 with a task monitor.

A real manager answers a composition that takes seconds with `202 Accepted` and a task
monitor (the `Location` header) that the client reads until the work is done, as the
Redfish driver does (`Session.follow`). The served world does the same for a PATCH of a
system whose modelled latency (the simulator's "bind" latency, as scaled) is at least the
server's `task_after_s` (None: never; 0: always): the work runs on a thread of its own, and

- the monitor (`/redfish/v1/TaskService/Tasks/{id}/Monitor`) answers 202 with the Task and
  `Location` while it runs, then the operation's own answer (200 and the system; a refusal's
  409 or 503), as the Redfish specification has it; an injected timeout loses that answer
  (the operation happened, the client hears nothing);
- the Task (`/redfish/v1/TaskService/Tasks/{id}`) says its state, `Running` then
  `Completed` or `Exception` with the refusal's message.

The last KEEP tasks are held, in the serving process only (a restart forgets them).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connections

from fabric.drivers.base import DriverError
from fabric.redfish_render.build import Resource, collection, ref, resource
from fabric.simulator import store
from fabric.simulator.redfish import paths, writes
from fabric.simulator.redfish.common import status

SERVICE = f"{paths.V1}/TaskService"
TASKS = f"{SERVICE}/Tasks"
KEEP = 100
Answer = tuple[int, Any, dict[str, str]]


def render(tree: dict[str, Resource]) -> None:
    """The TaskService and an empty Tasks collection (`Tasks.find` answers it as it is:
    tasks come and go without the world changing)."""
    tree[SERVICE] = resource(
        SERVICE,
        "Task service",
        "TaskService",
        ServiceEnabled=True,
        CompletedTaskOverWritePolicy="Oldest",
        LifeCycleEventOnTaskStateChange=False,
        Status=status(),
        Tasks=ref(TASKS),
    )
    tree[TASKS] = collection(TASKS, "Task", "Tasks", [])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Task:
    """One long write: its state, and the answer its monitor gives once done."""

    task_id: str
    what: str
    started_at: str = field(default_factory=_now)
    ended_at: str = ""
    answer: Answer | None = None  # None while it runs
    lost: bool = False  # an injected timeout: the answer is never given

    @property
    def path(self) -> str:
        return f"{TASKS}/{self.task_id}"

    @property
    def monitor(self) -> str:
        return f"{self.path}/Monitor"

    def body(self) -> Resource:
        """The Task resource as it is now."""
        failed = self.answer is not None and self.answer[0] >= 400
        done = self.answer is not None or self.lost  # lost: done, its answer never given
        state = "Exception" if failed else "Completed" if done else "Running"
        found: Resource = resource(
            self.path,
            f"Task {self.task_id}: {self.what}",
            "Task",
            TaskState=state,
            TaskStatus="Critical" if failed else "OK",
            StartTime=self.started_at,
            PercentComplete=0 if state == "Running" else 100,
            TaskMonitor=self.monitor,
            HidePayload=True,
            Messages=[],
        )
        if self.ended_at:
            found["EndTime"] = self.ended_at
        if failed and self.answer is not None:
            found["Messages"] = self.answer[1]["error"]["@Message.ExtendedInfo"]
        return found


class Tasks:
    """The tasks of one server, and when a write becomes one."""

    def __init__(self, fabric_name: str, task_after_s: float | None) -> None:
        self.fabric_name = fabric_name
        self.task_after_s = task_after_s
        self.held: OrderedDict[str, Task] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def wanted(self) -> bool:
        """Whether a PATCH of a system is answered as a task now."""
        if self.task_after_s is None:
            return False
        fabric = store.fabric_get(self.fabric_name)
        return store.latency_seconds(fabric, "bind") >= self.task_after_s

    def start(
        self, what: str, work: Callable[[], Answer], on_error: Callable[[int, str], Answer]
    ) -> Answer:
        """Run `work` on a thread of its own; answer 202 with the task monitor.
        `on_error(status, message)` renders a refusal the way a direct answer would."""
        with self._lock:
            task = Task(str(next(self._ids)), what)
            self.held[task.task_id] = task
            while len(self.held) > KEEP:
                self.held.popitem(last=False)
        thread = threading.Thread(
            target=self._run, args=(task, work, on_error), name="redfish-task", daemon=True
        )
        thread.start()
        return 202, task.body(), {"Location": task.monitor}

    def _run(
        self, task: Task, work: Callable[[], Answer], on_error: Callable[[int, str], Answer]
    ) -> None:
        answer: Answer | None
        try:
            answer = work()
        except writes.LostReply:
            task.lost = True
            answer = None
        except writes.Refused as refused:
            answer = on_error(refused.status, refused.message)
        except DriverError as exc:  # the fabric is gone, say
            answer = on_error(404 if exc.permanent else 503, exc.message)
        except Exception as exc:  # a task that breaks ends in Exception, never runs forever
            answer = on_error(500, f"The task failed ({type(exc).__name__}).")
        finally:
            connections.close_all()  # this thread's database connection ends with it
        task.ended_at = _now()
        task.answer = answer

    def find(self, path: str) -> Resource | None:
        """The Tasks collection or a Task, or None."""
        with self._lock:
            if path == TASKS:
                return collection(TASKS, "Task", "Tasks", [t.path for t in self.held.values()])
            task = self.held.get(paths.last(path)) if path.startswith(f"{TASKS}/") else None
        return task.body() if task is not None and path == task.path else None

    def monitor(self, path: str) -> Answer | None:
        """The task monitor's answer at `path`, or None if `path` is no monitor."""
        if not path.startswith(f"{TASKS}/") or not path.endswith("/Monitor"):
            return None
        task = self.held.get(paths.last(path.removesuffix("/Monitor")))
        if task is None:
            raise writes.Refused(404, f"There is no task monitor at {path}.")
        if task.lost:
            raise writes.LostReply(f"task {task.task_id} timed out (injected)")
        if task.answer is None:
            return 202, task.body(), {"Location": task.monitor}
        return task.answer
