"""The service root, the OData documents, sessions, the read-only AccountService and the
message registries."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpResponse

from composer.models import RedfishSession
from composer.redfish import oem, queries, sessions
from composer.redfish.answers import Answer
from composer.redfish.caller import Call, Caller
from composer.redfish.paths import (
    ACCOUNT_SERVICE,
    ACCOUNTS,
    REGISTRIES,
    ROLES,
    SESSION_SERVICE,
    SESSIONS,
    TOP,
    V1,
)
from composer.redfish.routes import Route
from fabric.redfish_render import documents
from fabric.redfish_render.build import collection, health_status, ref, resource
from fabric.redfish_render.errors import refuse
from fabric.redfish_render.messages import PUBLICATION, registries

REDFISH_VERSION = "1.20.0"
# Stable per installation would be better than per build; the service root only needs
# it to be a UUID that does not change between requests.
SERVICE_UUID = "8b4a3c0e-4f3a-5d0b-9c6e-636f6d706f73"
ROLE_PRIVILEGES = {
    "Administrator": [
        "Login",
        "ConfigureManager",
        "ConfigureUsers",
        "ConfigureSelf",
        "ConfigureComponents",
    ],
    "Operator": ["Login", "ConfigureSelf", "ConfigureComponents"],
    "ReadOnly": ["Login", "ConfigureSelf"],
}


def root(call: Call) -> dict[str, Any]:
    body = resource(
        f"{V1}/",
        "Composer",
        "ServiceRoot",
        Id="RootService",
        RedfishVersion=REDFISH_VERSION,
        UUID=SERVICE_UUID,
        Vendor="Composer",
        Product="Composer composable infrastructure control plane",
        ProtocolFeaturesSupported=queries.PROTOCOL_FEATURES,
        Links={"Sessions": ref(SESSIONS)},
        **{name: ref(path) for name, path in TOP.items()},
    )
    return body


def odata(call: Call) -> dict[str, Any]:
    return documents.odata(TOP)


def metadata(call: Call) -> HttpResponse:
    return HttpResponse(
        documents.metadata([], references=oem.references()), content_type="application/xml"
    )


# -- sessions -----------------------------------------------------------------------


def session_service(call: Call) -> dict[str, Any]:
    from django.conf import settings

    return resource(
        SESSION_SERVICE,
        "Session service",
        "SessionService",
        ServiceEnabled=True,
        SessionTimeout=settings.COMPOSER_REDFISH_SESSION_TIMEOUT_S,
        Status=health_status(),
        Sessions=ref(SESSIONS),
    )


def _sessions_of(caller: Caller) -> Any:
    found = sessions.live().select_related("user").order_by("id")
    return found if caller.operator else found.filter(user_id=caller.user.pk or 0)


def session_list(call: Call) -> dict[str, Any]:
    members = [f"{SESSIONS}/{s.public_id}" for s in _sessions_of(call.caller)]
    return collection(SESSIONS, "Session", "Sessions", members)


def _session(call: Call) -> RedfishSession:
    found = _sessions_of(call.caller).filter(public_id=call.params["session"]).first()
    if found is None:
        raise refuse(
            404,
            f"There is no session {call.path}.",
            "Base.ResourceNotFound",
            "Session",
            call.params["session"],
        )
    return found


def _session_body(session: RedfishSession) -> dict[str, Any]:
    path = f"{SESSIONS}/{session.public_id}"
    return resource(
        path,
        "User session",
        "Session",
        UserName=session.user.get_username(),
        CreatedTime=session.created_at.isoformat(),
        SessionType="Redfish",
        ClientOriginIPAddress=session.remote_addr or "",
    )


def session_get(call: Call) -> dict[str, Any]:
    return _session_body(_session(call))


def session_login(call: Call) -> Answer:
    """POST to Sessions: log in with UserName and Password; the token comes back once."""
    for name in ("UserName", "Password"):
        if name not in call.body:
            raise refuse(
                400,
                f"{name} is required to log in.",
                "Base.PropertyMissing",
                name,
                properties=(f"#/{name}",),
            )
    assert call.request is not None
    try:
        opened = sessions.login(
            call.request, call.body["UserName"], call.body["Password"], call.caller.remote_addr
        )
    except sessions.TooManySessions as exc:
        raise refuse(
            503,
            "This user holds as many Redfish sessions as it may; log out of one first.",
            "Base.SessionLimitExceeded",
        ) from exc
    if opened is None:
        raise refuse(
            401,
            "The user name or password is not valid.",
            "Base.NoValidSession",
            headers={"WWW-Authenticate": 'Basic realm="Redfish"'},
        )
    session, token = opened
    location = f"{SESSIONS}/{session.public_id}"
    return Answer(201, _session_body(session), {"X-Auth-Token": token, "Location": location})


def session_logout(call: Call) -> Answer:
    sessions.logout(_session(call), call.caller)
    return Answer(204)


# -- accounts (read-only: Composer's users are managed in Composer) -----------------


def _role(user: Any) -> str:
    caller = Caller(user=user)
    if caller.operator:
        return "Administrator"
    return "Operator" if any(m.can_write for m in caller.memberships) else "ReadOnly"


def _users(caller: Caller) -> Any:
    users = get_user_model().objects.filter(is_active=True).order_by("id")
    return users if caller.operator else users.filter(pk=caller.user.pk or 0)


def account_service(call: Call) -> dict[str, Any]:
    return resource(
        ACCOUNT_SERVICE,
        "Account service",
        "AccountService",
        Description="Composer's users, read-only: accounts are managed in Composer.",
        ServiceEnabled=True,
        Status=health_status(),
        Accounts=ref(ACCOUNTS),
        Roles=ref(ROLES),
    )


def account_list(call: Call) -> dict[str, Any]:
    members = [f"{ACCOUNTS}/{user.pk}" for user in _users(call.caller)]
    return collection(ACCOUNTS, "ManagerAccount", "Accounts", members)


def account_get(call: Call) -> dict[str, Any]:
    key = call.params["account"]
    user = (
        _users(call.caller).filter(pk=int(key)).first() if key.isascii() and key.isdigit() else None
    )
    if user is None:
        raise refuse(
            404, f"There is no account {call.path}.", "Base.ResourceNotFound", "ManagerAccount", key
        )
    role = _role(user)
    return resource(
        f"{ACCOUNTS}/{user.pk}",
        "User account",
        "ManagerAccount",
        UserName=user.get_username(),
        RoleId=role,
        Enabled=user.is_active,
        Locked=False,
        Password=None,
        AccountTypes=["Redfish", "WebUI"],
        Links={"Role": ref(f"{ROLES}/{role}")},
    )


def role_list(call: Call) -> dict[str, Any]:
    return collection(ROLES, "Role", "Roles", [f"{ROLES}/{name}" for name in ROLE_PRIVILEGES])


def role_get(call: Call) -> dict[str, Any]:
    name = call.params["role"]
    if name not in ROLE_PRIVILEGES:
        raise refuse(404, f"There is no role {name}.", "Base.ResourceNotFound", "Role", name)
    return resource(
        f"{ROLES}/{name}",
        f"{name} role",
        "Role",
        RoleId=name,
        IsPredefined=True,
        AssignedPrivileges=ROLE_PRIVILEGES[name],
    )


# -- message registries -----------------------------------------------------------


def registry_list(call: Call) -> dict[str, Any]:
    members = [f"{REGISTRIES}/{prefix}" for prefix in registries()]
    return collection(REGISTRIES, "MessageRegistryFile", "Message registries", members)


def _registry(call: Call) -> dict[str, Any]:
    found = registries().get(call.params["registry"])
    if found is None:
        raise refuse(
            404,
            f"There is no registry {call.path}.",
            "Base.ResourceNotFound",
            "MessageRegistryFile",
            call.params["registry"],
        )
    return found


def registry_file(call: Call) -> dict[str, Any]:
    found = _registry(call)
    registry_id = str(found["Id"])
    return resource(
        f"{REGISTRIES}/{found['RegistryPrefix']}",
        f"{found['Name']} file",
        "MessageRegistryFile",
        Languages=["en"],
        Registry=registry_id.rsplit(".", 1)[0],
        Location=[
            {
                "Language": "en",
                "Uri": f"{REGISTRIES}/{found['RegistryPrefix']}/{registry_id}",
                "PublicationUri": f"{PUBLICATION}/{registry_id}.json",
            }
        ],
    )


def registry_body(call: Call) -> dict[str, Any]:
    found = _registry(call)
    if call.params["file"] != found["Id"]:
        raise refuse(
            404, f"There is no registry {call.path}.", "Base.ResourceMissingAtURI", call.path
        )
    # Served without each message's `Severity`, which DMTF's files keep beside
    # `MessageSeverity` though deprecated (the files stay as DMTF wrote them).
    messages = {
        key: {name: value for name, value in entry.items() if name != "Severity"}
        for key, entry in found["Messages"].items()
    }
    return {"@odata.id": call.path, **found, "Messages": messages}


ROUTES = [
    Route(V1, get=root),
    Route(f"{V1}/odata", get=odata),
    Route(f"{V1}/$metadata", get=metadata),
    Route(SESSION_SERVICE, get=session_service),
    Route(SESSIONS, get=session_list, post=session_login),
    Route(f"{SESSIONS}/{{session}}", get=session_get, delete=session_logout),
    Route(ACCOUNT_SERVICE, get=account_service),
    Route(ACCOUNTS, get=account_list),
    Route(f"{ACCOUNTS}/{{account}}", get=account_get),
    Route(ROLES, get=role_list),
    Route(f"{ROLES}/{{role}}", get=role_get),
    Route(REGISTRIES, get=registry_list),
    Route(f"{REGISTRIES}/{{registry}}", get=registry_file),
    Route(f"{REGISTRIES}/{{registry}}/{{file}}", get=registry_body),
]
