"""trailgate on Spark: the local session and trails as a Spark data source.

``get_spark()`` returns the process's session with the ``trail`` format registered, so
``spark.read.format("trail").load("dirdat/aa")`` and ``spark.readStream.format("trail")``
work anywhere in trailgate.  Importing this package does not start Spark.
"""

from trailgate.spark.session import get_spark, stop_spark

__all__ = ["TrailDataSource", "get_spark", "stop_spark"]


def __getattr__(name: str) -> object:
    # Importing the data source imports pyspark; keep ``import trailgate.spark`` cheap.
    if name == "TrailDataSource":
        from trailgate.spark.trail_source import TrailDataSource

        return TrailDataSource
    raise AttributeError(name)
