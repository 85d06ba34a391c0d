"""The ingest dataflow: conversations and commands in, memories out
(docs/architecture.md#processes-and-data-flow)."""
