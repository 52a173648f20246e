"""The Redfish driver (`RedfishDriver`), registered as "redfish"; see docs/drivers.md."""
