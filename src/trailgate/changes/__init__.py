"""A trail read as whole transactions of changes, and the Arrow row forms that carry them.

Shared by every group that reads or writes a trail through Spark (Extract's sink, Data Pump,
Replicat) and by the ``trail`` sources.  Pure Python and pyarrow, never pyspark: the same code
runs on the driver, in Spark's Python workers and in plain tests.
"""
