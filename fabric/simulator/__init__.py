"""The simulator: a simulated fabric manager, for the demo, the tests and the benchmarks.

One optional Django app (`fabric.simulator`, label `simulated_fabric`). Base settings
install it (the demo, `make run`, the tests); production settings leave it out unless
`COMPOSER_SIMULATOR` asks for it, and the product runs the same without it: the URL maps
and the navbar add its routes and link only when `apps.is_installed("fabric.simulator")`,
and nothing outside this package imports it or asks whether a manager is simulated.

- The manager itself: a driver like any other whose "hardware" is this app's tables
  (`models.py`, `store.py`, `driver.py`, `metrics.py`, `layout.py`, `builder.py`), found
  by its dotted path in `fabric/drivers/registry.py` as every driver is.
- Its console (`console/`): what talks to it *as the simulator*, which no real fabric
  manager would offer: the demo data centre (`seed_demo`), the fault page,
  `POST /api/v1/simulator/faults/`, the admin's fault actions and `manage.py sim_fault` /
  `sim_operation_fault`.
"""
