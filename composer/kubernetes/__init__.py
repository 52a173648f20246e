"""Composable devices for Kubernetes pods through Dynamic Resource Allocation
(`resource.k8s.io/v1`), following the design of CoHDI's composable DRA driver.

Composer publishes the free pool as ResourceSlices (`slices`); the scheduler allocates a
pod's ResourceClaim to some of those devices on a node; the controller (`controller`)
composes them onto the node's host as a composition of the namespace's tenant, and reports
back through the claim's per-device binding conditions (`FabricDeviceReady`, or
`FabricDeviceFailed` / `FabricDeviceReschedule` with the reason), until the claim goes away
and the composition is decomposed. Placement, quotas, audit and live events are the
console's: the controller is one more client of `composer.services`.

The API server is reached only through `composer.kubernetes.api.KubeApi`, so the mapping
and the state machine are tested against an in-process fake as well as a real server.
docs/kubernetes.md is the operator's guide.
"""
