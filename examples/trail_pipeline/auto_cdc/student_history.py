"""SCD type 2 history of US03.STUDENT with Spark's own CDC API, from the streaming table of
its changes (transformations/student_changes.py); compare ``MAP …, SCD TYPE 2`` of the
Replicat's Delta target (docs/replicat.md).  Needs a MERGE-capable table format."""

from pyspark import pipelines as dp
from pyspark.sql import functions as F

dp.create_streaming_table("student_history")
dp.create_auto_cdc_flow(
    target="student_history",
    source="student_changes",
    keys=["student_key"],
    sequence_by=F.struct("csn", "seqno", "rba"),
    apply_as_deletes=F.expr("op = 'Delete'"),
    except_column_list=["seqno", "rba", "op", "csn", "xid", "io_time"],
    stored_as_scd_type=2,
)
