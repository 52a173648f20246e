"""Forms of the console pages (HTTP parsing only; writes go through services)."""
