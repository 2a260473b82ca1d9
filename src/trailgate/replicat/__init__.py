"""The Replicat process on Spark: a trail stream applied to PostgreSQL, Delta or Parquet.

``trailgate run replicat NAME`` (or GGSCI ``START REPLICAT``) runs
:func:`trailgate.replicat.group.run_replicat_group`; see docs/replicat.md.  The
``trailchanges`` source (:mod:`trailgate.replicat.source`) is shared with the Data Pump.
"""
