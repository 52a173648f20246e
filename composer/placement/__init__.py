"""The placement engine: decide where a composition goes, on a snapshot, without I/O.

`composer.placement.load.build_snapshot()` reads the inventory once (the only database
access); `engine.place(request, snapshot)` returns a `Placement` or a `Rejection`. Nothing
here but load.py imports Django. See docs/placement.md.
"""

from __future__ import annotations
