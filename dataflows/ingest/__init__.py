"""The ingest dataflow: conversations and commands in, memories out (DESIGN §1)."""
