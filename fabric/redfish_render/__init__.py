"""Writing Redfish: the one way the project renders Redfish resources.

Two services speak Redfish: Composer's own Composition Service (`composer.redfish`) and
the simulated fabric manager's face (an optional app). Both build their payloads with
`build` (identity, links, collections, types), answer reads with `documents` (ETags,
`$expand`, the OData service document, `$metadata`) and refuse with `errors` (the Redfish
error shape, messages from the registries in `messages`), so a client sees one dialect.
"""
