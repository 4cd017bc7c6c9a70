import json

from sbclab.stack import counters

CLIENT_LOG = """\
2026-11-22 03:04:52,729 INFO mapreduce.Job: Running job: job_1795316657502_0001
2026-11-22 03:05:30,001 INFO mapreduce.Job: Job job_1795316657502_0001 completed successfully
2026-11-22 03:05:30,101 INFO mapreduce.Job: Counters: 3
\tFile System Counters
\t\tFILE: Number of bytes written=553144
\t\tHDFS: Number of bytes written=10000000
\torg.apache.hadoop.examples.terasort.TeraGen$Counters
\t\tCHECKSUM=214574985129000
2026-11-22 03:05:30,200 INFO something else
"""


def test_hadoop_counters_are_read_by_group():
    parsed = counters.hadoop_counters(CLIENT_LOG)
    assert parsed["File System Counters"]["HDFS: Number of bytes written"] == 10_000_000
    assert parsed["org.apache.hadoop.examples.terasort.TeraGen$Counters"]["CHECKSUM"] == 214574985129000
    assert counters.hadoop_job_ids(CLIENT_LOG) == ["job_1795316657502_0001"]


def test_the_counters_of_both_grep_jobs_are_kept():
    second = CLIENT_LOG.replace("0001", "0002").replace("=553144", "=1000").replace("=10000000", "=2000")
    jobs = counters.hadoop_job_counters(CLIENT_LOG + second)
    assert [j["File System Counters"]["FILE: Number of bytes written"] for j in jobs] == [553144, 1000]
    both = counters.hadoop_counters(CLIENT_LOG + second)
    assert both["File System Counters"]["FILE: Number of bytes written"] == 554144
    assert both["File System Counters"]["HDFS: Number of bytes written"] == 10_002_000
    assert counters.hadoop_job_ids(CLIENT_LOG + second) == ["job_1795316657502_0001", "job_1795316657502_0002"]


def test_a_log_without_counters_gives_none():
    assert counters.hadoop_counters("job failed\n") == {}


def test_spark_event_log_totals(tmp_path):
    events = [
        {"Event": "SparkListenerExecutorAdded"},
        {"Event": "SparkListenerTaskEnd", "Task End Reason": {"Reason": "Success"},
         "Task Metrics": {"Executor Run Time": 100, "Disk Bytes Spilled": 5,
                          "Shuffle Write Metrics": {"Shuffle Bytes Written": 1000}}},
        {"Event": "SparkListenerTaskEnd", "Task End Reason": {"Reason": "ExceptionFailure"},
         "Task Metrics": {"Executor Run Time": 50, "Shuffle Write Metrics": {"Shuffle Bytes Written": 24}}},
        {"Event": "SparkListenerStageCompleted"},
        {"Event": "SparkListenerExecutorRemoved", "Removed Reason": "Executor heartbeat timed out"},
    ]
    log = tmp_path / "application_1_0001"
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    metrics = counters.spark_event_metrics(log)
    assert metrics["tasks"] == {"tasks": 2, "failed_tasks": 1, "stages": 1, "executors_added": 1, "executors_removed": 1}
    assert metrics["task_metrics"]["shuffle_bytes_written"] == 1024
    assert metrics["task_metrics"]["executor_run_time_ms"] == 150
    assert metrics["task_metrics"]["disk_bytes_spilled"] == 5


def test_spark_application_ids_of_yarn_and_of_the_standalone_master():
    """The ids that name a Spark job's event log: YARN's, or the standalone master's."""
    log = ("INFO Client: Submitted application application_1795617117342_0004\n"
           "INFO StandaloneSchedulerBackend: Connected to Spark cluster with app ID app-20261125160101-0003\n"
           "INFO Utils: the tracking URL names application_1795617117342_0004 again\n")
    assert counters.spark_application_ids(log) == ["app-20261125160101-0003", "application_1795617117342_0004"]


def test_spark_event_log_per_stage(tmp_path):
    """Each stage's tasks, duration and summed metrics, named by id and Spark's stage name."""
    def task(stage, run_ms, written, reason="Success"):
        return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0,
                "Task End Reason": {"Reason": reason},
                "Task Metrics": {"Executor Run Time": run_ms, "Shuffle Write Metrics": {"Shuffle Bytes Written": written},
                                 "Shuffle Read Metrics": {"Local Bytes Read": 7}}}
    events = [task(0, 100, 1000), task(0, 120, 900), task(1, 40, 0, "ExceptionFailure"),
              {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 0, "Stage Attempt ID": 0,
               "Stage Name": "flatMapToPair at WordCount.java:52", "Submission Time": 1000, "Completion Time": 3500}},
              {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 1, "Stage Attempt ID": 0,
               "Stage Name": "saveAsTextFile at WordCount.java:60", "Submission Time": 3600, "Completion Time": 4000}}]
    log = tmp_path / "application_1_0002"
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    metrics = counters.spark_event_metrics(log)
    first, second = metrics["stage 0: flatMapToPair at WordCount.java:52"], metrics["stage 1: saveAsTextFile at WordCount.java:60"]
    assert first["tasks"] == 2 and first["duration_ms"] == 2500 and first["executor_run_time_ms"] == 220
    assert first["shuffle_bytes_written"] == 1900 and first["shuffle_local_bytes_read"] == 14
    assert second["failed_tasks"] == 1 and second["duration_ms"] == 400
    assert metrics["task_metrics"]["executor_run_time_ms"] == 260
