"""Run in its own process by the cluster tests: a batch trail query on a Spark master given
as argv[1], over the trail argv[2].  Prints ``MIDBATCH`` once the job has finished some of
its tasks but not all (the test then kills a worker), and the result as JSON at the end.
With argv[3] (a number of cores), the application takes that many and starts its job only
once executors with all of them have registered, so each worker has work when one is
killed."""

from __future__ import annotations

import json
import sys
import threading
import time

from trailgate.spark import get_spark


def main() -> None:
    master, trail = sys.argv[1], sys.argv[2]
    conf = {
        # no spark.cores.max: the application takes the cores of every worker, so a new
        # worker gets an executor at once (the master forgets the killed one's only after
        # spark.worker.timeout)
        "spark.executor.memory": "512m",
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.task.maxFailures": "8"}
    if len(sys.argv) > 3:
        conf.update({"spark.cores.max": sys.argv[3],
                     "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                     "spark.scheduler.maxRegisteredResourcesWaitingTime": "300s"})
    spark = get_spark("trailgate-cluster-test", master=master, conf=conf)
    sc = spark.sparkContext
    result: dict[str, object] = {}

    def run() -> None:
        df = spark.read.format("trail").load(trail)
        rows = df.groupBy("table_name", "op").count().collect()
        result["counts"] = sorted([r["table_name"], r["op"], r["count"]] for r in rows)

    job = threading.Thread(target=run)
    job.start()
    told = False
    while job.is_alive():
        tracker = sc.statusTracker()
        for stage in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage)
            if (not told and info is not None and 0 < info.numCompletedTasks < info.numTasks):
                print("MIDBATCH", info.numCompletedTasks, info.numTasks, flush=True)
                told = True
        time.sleep(0.05)
    job.join()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
