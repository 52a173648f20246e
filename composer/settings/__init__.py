"""Settings modules: base (shared), dev (the embedded default), test, prod."""
