"""The ResourceManager's scheduler settings a run asks for, set on the running cluster for that run.

A job's own settings reach its client (daemons.Stack.job_settings); where YARN places its containers
is the CapacityScheduler's, read by the ResourceManager. A few of the scheduler's settings it reads
again when told to refresh its queues (`yarn rmadmin -refreshQueues`): Hadoop 3.3.6 and 3.4.2 set
them anew in CapacityScheduler.reinitialize, 3.1.3 only when the ResourceManager starts. So a run
may set them, on a running cluster, between runs of other settings: the master's
capacity-scheduler.xml is rewritten and the queues refreshed before the run, and the cluster's own
put back and refreshed after it, also when the run fails.
"""

from contextlib import contextmanager
from pathlib import Path

from ..errors import SbclabError
from . import clients, config
from .daemons import Stack

FILE = "capacity-scheduler"  # what it may set: config.RUN_SCHEDULER_SETTINGS
REFRESHED_FROM_HADOOP = (3, 3)


def asked(job_settings: dict[str, dict[str, str]] | None) -> dict[str, str]:
    """The scheduler settings among a run's own."""
    return dict((job_settings or {}).get(FILE) or {})


def check(hadoop_version: str) -> None:
    """Refuse a stack whose ResourceManager reads its scheduler settings only when it starts."""
    if tuple(int(part) for part in hadoop_version.split(".")[:2]) < REFRESHED_FROM_HADOOP:
        raise SbclabError(f"Hadoop {hadoop_version}'s ResourceManager reads {FILE} settings only when it starts, "
                          "so a run cannot set them on a running cluster.",
                          "Set them in cluster.settings (a cluster of their own), or run a stack of Hadoop 3.3 or later.")


@contextmanager
def for_run(stack: Stack, job_settings: dict[str, dict[str, str]] | None, log: Path):
    """The scheduler settings the run asks for, in force while the block runs; nothing is done when it
    asks for none, or for what the cluster has already."""
    wanted = asked(job_settings)
    own = dict(stack.record.configuration.get(FILE) or {})
    if all(own.get(name) == value for name, value in wanted.items()):
        yield
        return
    check(stack.dist.stack.hadoop)
    _refresh(stack, {**own, **wanted}, log)
    try:
        yield
    finally:
        _refresh(stack, own, log)


def _refresh(stack: Stack, values: dict[str, str], log: Path) -> None:
    master = stack.spec.master
    file_name = f"{FILE}.xml"
    stack.transport.put(master, stack.layout(master).conf_dir,
                        {file_name: config.files_of(stack.spec, {FILE: values})[file_name]})
    done = clients.hadoop_class(stack, "org.apache.hadoop.yarn.client.cli.RMAdminCLI", ["-refreshQueues"], log,
                                "yarn rmadmin -refreshQueues", timeout_s=300)
    if done.exit_status != 0:
        raise SbclabError(f"The ResourceManager did not take the scheduler's settings (yarn rmadmin -refreshQueues "
                          f"exit {done.exit_status}).", f"Read {log}.")
