"""The REST API at /api/v1/ (composer's resources, and the wiring of both apps' routers)."""
