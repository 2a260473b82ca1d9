"""The trail as a pipeline source: a streaming table of US03.STUDENT's changes, read from
the trail as it grows (trailgate's ``trail`` data source), and two materialized views
kept from it.  ``trailgate.pipeline.trail`` in the spec names the trail."""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from trailgate.spark.trail_source import TrailDataSource

spark = SparkSession.active()
spark.dataSource.register(TrailDataSource)
TRAIL = spark.conf.get("trailgate.pipeline.trail")
COLUMNS = ["FIRST_NAME", "SURNAME", "UNIVERSITY", "SUBJECT", "ENTRY_YEAR", "TUITION_FEE"]


@dp.table(comment="Every change of US03.STUDENT in the trail, one row each, in trail order")
def student_changes() -> DataFrame:
    changes = (spark.readStream.format("trail").option("tables", "US03.STUDENT")
               .load(TRAIL))
    image = F.coalesce(F.col("after"), F.col("before"))
    return changes.select(
        "seqno", "rba", "op", "csn", "xid", "io_time",
        image["STUDENT_KEY"].cast("long").alias("student_key"),
        *[F.when(F.map_contains_key("after", c), F.struct(F.col("after")[c].alias("value")))
           .alias(c.lower()) for c in COLUMNS])


@dp.materialized_view(comment="Changes per operation")
def student_changes_per_op() -> DataFrame:
    return spark.read.table("student_changes").groupBy("op").agg(F.count("*").alias("changes"))


@dp.materialized_view(comment="US03.STUDENT as the trail leaves it: each column's value from "
                              "the key's last change that carried it, deleted keys left out")
def students() -> DataFrame:
    order = F.struct("csn", "seqno", "rba")
    last = [F.max_by(f"{c.lower()}.value", F.when(F.col(c.lower()).isNotNull(), order))
            .alias(c.lower()) for c in COLUMNS]
    return (spark.read.table("student_changes").groupBy("student_key")
            .agg(F.max_by("op", order).alias("last_op"), *last)
            .where(F.col("last_op") != "Delete")
            .select("student_key", *[c.lower() for c in COLUMNS]))
