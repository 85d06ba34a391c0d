"""Operations: the ``memstream`` CLI, the local stack and the benchmarks.

The local stack runs Apache Kafka (KRaft, from the Maven Central jars fetched by
``ops/kafka/pom.xml``), Debian's ``redis-server`` and the node process (API + both
dataflows, ClickHouse embedded through chDB, Milvus Lite) under the data dir, each
started and stopped by pid. ``ops.node`` is the node process itself.
"""
