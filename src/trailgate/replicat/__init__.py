"""The Replicat: a trail applied to PostgreSQL, Delta or Parquet targets, exactly once.

A run (``group``) is a Spark streaming query over the trail (``spark.trail_changes``) whose
micro-batches (``micro_batch``) are applied by one of two paths, then checkpointed:

* **stream apply** (``stream_apply``): PostgreSQL, a running group — a driver thread applies
  whole transactions as soon as they are in the trail, each step one target transaction
  that also moves the group's stream row; a micro-batch only waits for it.
* **batch apply**: the batch's range itself — PostgreSQL (``batch_apply``) on the driver
  for one key partition (``range_apply``) or as Spark tasks by key (``task_apply``), Delta
  and Parquet on the driver (``lake_apply``).

``range_apply`` is the one place a range is planned and applied on the driver (set-based
from the trail's bytes, or change by change); ``task_rows`` reads ranges and apply rows into
changes.  See docs/replicat.md.
"""
