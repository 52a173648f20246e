"""Secrets in fabric manager settings, endpoints and reported attributes: one masking rule
for pages, API and history, so what one surface hides no other shows.

Over-masking ("keyboard_layout" matches "key") is the safe failure.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "********"
# Settings keys that look like they hold a secret; matched anywhere in the key, any case.
SECRET_KEY_PATTERN = re.compile(r"password|passwd|secret|token|key|credential|private", re.I)


def mask_secrets(value: Any) -> Any:
    """A copy of a JSON value with every secret-looking key's (non-empty) value masked.

    Nested dicts and lists are walked, so `{"auth": {"api_key": ...}}` is masked too.
    Over-masking ("keyboard_layout") is the safe failure. Empty values stay visible, as on
    the pages: "no password set" is worth knowing and gives nothing away.
    """
    if isinstance(value, dict):
        return {
            key: MASK
            if SECRET_KEY_PATTERN.search(str(key)) and item not in (None, "")
            else mask_secrets(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [mask_secrets(item) for item in value]
    return value


def mask_endpoint(endpoint: str) -> str:
    """The endpoint URL with any password in it and secret-looking query values masked."""
    try:
        parts = urlsplit(endpoint)
    except ValueError:
        return MASK  # not a URL we can take apart: show nothing rather than a secret
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(SECRET_KEY_PATTERN.search(key) for key, _ in pairs):
            query = urlencode(
                [(key, MASK if SECRET_KEY_PATTERN.search(key) else item) for key, item in pairs],
                safe="*",
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_secret_key(key: str) -> bool:
    """Whether a settings or attribute key looks like it holds a secret."""
    return bool(SECRET_KEY_PATTERN.search(key))
