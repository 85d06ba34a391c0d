"""The benchmarks: ``memstream bench …`` (``ops.bench.cmd``), the throw-away stacks they
run on, their reports and charts, and the quality harness (``ops.bench.quality``)."""
