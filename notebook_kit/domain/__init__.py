"""Pure rules: models, settings, routing, compiling actions, the export format, OpenAPI
and the sample. Imports only ``errors``; no I/O."""
