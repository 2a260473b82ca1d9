"""The Oracle redo dump Extract: a directory of ``ALTER SYSTEM DUMP LOGFILE`` traces captured
into a trail.

``dumps`` resolves the group and parses and assembles dump files, ``source`` is the
``oracledump`` Spark source and the parallel parse job, ``group`` runs it.  See
docs/oracle-dumps.md.
"""
