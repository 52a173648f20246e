"""The simulator's console: what talks to the simulated manager *as the simulator*.

No real fabric manager offers these: `seed_demo` writes the demo world into the
simulator's tables (`demo.py`), and the fault page, `POST /api/v1/simulator/faults/`, the
admin's fault actions and `manage.py sim_fault` / `sim_operation_fault` set faults in its
state (`faults.py`, `views.py`, `api.py`, `admin.py`, `../management/commands/`). The
project's URL maps include `urls.py` and `api_urls.py` only when the simulator app is
installed.
"""
