"""Operations: the ``memstream`` CLI, the local stack and the benchmarks.

The local stack runs Apache Kafka (KRaft, from the Maven Central jars fetched by
``ops/kafka/pom.xml``), Debian's ``redis-server`` and the node process (API + both
dataflows, ClickHouse embedded through chDB, Milvus Lite) under the data dir, each
started and stopped by pid. ``ops.node`` is the node process itself.
"""

import os

# Arrow's default pool (mimalloc, used by Milvus Lite and pymilvus) reserves its own
# arenas, which ``malloc_trim`` (``ops.heap``) cannot return and the soak's stats could
# not account for; with the system pool its ~10 MB go through glibc like the rest.
# Read once, when pyarrow first loads: set before any of our modules import it.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
