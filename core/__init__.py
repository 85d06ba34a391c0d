"""Pure rules of memstream, with no I/O.

Weights and lazy decay, ranking and fusion, capacity and eviction choice, content
hashing, scope-to-filter resolution, and the typed settings object every process is
built from. Functions here take plain values and return plain values, so they are
tested with hand-computed numbers and reused by the dataflows and the API alike.
"""
