"""The Replicat: a trail applied to PostgreSQL, Delta or Parquet targets, exactly once.

A run (``group``) is a Spark streaming query over the trail whose micro-batches
(``micro_batch``) take one of two paths: ``stream_apply``, a driver thread that applies
transactions as they reach the trail (PostgreSQL, a running group), or the batch's own range
— ``batch_apply`` for PostgreSQL (``range_apply`` on the driver, ``task_apply`` as Spark
tasks by key), ``lake_apply`` for Delta and Parquet.  docs/architecture.md, docs/replicat.md.
"""
