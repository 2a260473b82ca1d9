"""The Extract groups: ``postgres`` (a logical replication slot) and ``oracle`` (redo log
dumps), with what both share — the TABLE rules (``tables``), user tokens (``tokens``) and the
run's report and statistics (``running``).  See docs/extract.md.
"""
