"""The simulator's management commands (`commands/`): seed_demo, sim_fault, sim_operation_fault."""
