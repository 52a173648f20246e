"""The console side of the simulated fabric manager: the demo data centre and fault injection.

An optional Django app (label `simulator`). The simulated manager itself is a driver like
any other (`fabric/drivers/simulated/`, found through `fabric/drivers/registry.py`); what
lives here is what talks to it *as the simulator*, which no real fabric manager would
offer: `seed_demo` writes the demo world into its tables (`demo.py`), and the fault page,
`POST /api/v1/simulator/faults/`, the admin's fault actions and `manage.py sim_fault` /
`sim_operation_fault` set faults in its state (`faults.py`, `views.py`, `api.py`,
`admin.py`, `management/commands/`).

The product runs without it: base settings install it (the demo, the tests, `make run`)
unless `COMPOSER_SIMULATOR` is off, and the project's URL maps and navbar add its routes
and link only when `django.apps.apps.is_installed("composer.simulator")`. Nothing outside
this package imports it. It has no models: the simulator's tables belong to fabric
(`fabric/drivers/simulated/models.py`, the app `simulated_fabric`), where its driver keeps them.
"""
