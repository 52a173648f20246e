"""Parsing of input for the fabric's pages (and, for failure-domain ids, its API).

- `domains`: lists of ids (failure domains of the what-if page and endpoint, elements of a
  bulk change);
- `maintenance`: the bulk maintenance form;
- `managers`: the fabric manager form.
"""

from __future__ import annotations

from fabric.forms.domains import (
    MAX_ID,
    MAX_WHAT_IF_DOMAINS,
    BadIds,
    parse_domain_ids,
    parse_ids,
)

__all__ = ["MAX_ID", "MAX_WHAT_IF_DOMAINS", "BadIds", "parse_domain_ids", "parse_ids"]
