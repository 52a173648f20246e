"""`manage.py seed_demo`, `sim_fault` and `sim_operation_fault`: there only where the
simulator's console is installed."""
