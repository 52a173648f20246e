"""The reliability benchmark's harness (bench/bench_chaos.py): the production layout under a
supervisor (`layout`), the load (`load`), the disruptions (`kills`), the websocket clients
(`ws_clients`, a process of its own), what is measured afterwards (`measure`) and the
section of docs/reliability.md it writes (`report`)."""
