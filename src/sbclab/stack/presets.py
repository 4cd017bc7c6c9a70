"""Named sets of stack settings. `stock` is upstream's defaults; `paper-2026` and `paper-2021` are the
seeds' own (their configuration tables), and `paper` is the newest seed's.

Only settings a preset changes are listed; everything else keeps its upstream default. Sizing from
the node's profile (YARN memory and vcores) and the settings a cluster needs to run at all
(addresses, directories, classpaths) are applied under every preset, see config.py.
"""

from ..errors import SbclabError
from ..cluster.spec import ClusterSpec

PAPER_2026 = ("Lee & Park 2026, Tables 9-10: dfs.replication 1, mapreduce.job.reduces 2, "
              "spark.executor.instances = workers, spark.executor.cores 2")
PRESETS = {
    "stock": "upstream defaults of Hadoop 3.3.6 and Spark 3.5.0",
    "paper": f"the newest seed's settings (paper-2026): {PAPER_2026}",
    "paper-2026": PAPER_2026,
    "paper-2021": "Lee, Oh & Park 2021, Table 11: ApplicationMaster 3072 MB, maps 2048 MB, reduces 4096 MB, "
                  "split.minsize 4 MB, NodeManager memory 4096 MB, largest allocation 4096 MB, dfs.replication 3",
}


def check(name: str) -> str:
    """The preset's name, or a refusal that lists the ones there are."""
    if name not in PRESETS:
        raise SbclabError(f"Unknown preset '{name}'.", f"Choose one of: {', '.join(PRESETS)}.")
    return name


def overrides(spec: ClusterSpec) -> dict[str, dict[str, str]]:
    """Settings the preset sets, by file ('hdfs-site', 'mapred-site', 'spark-defaults', …)."""
    return _settings(spec.preset, spec.workers)


def _settings(name: str, workers: int) -> dict[str, dict[str, str]]:
    if name == "stock":
        return {}
    if name in ("paper", "paper-2026"):
        return {
            "hdfs-site": {"dfs.replication": "1"},
            "mapred-site": {"mapreduce.job.reduces": "2"},
            "spark-defaults": {"spark.executor.instances": str(workers), "spark.executor.cores": "2"},
        }
    if name == "paper-2021":
        return {
            "hdfs-site": {"dfs.replication": "3"},
            "mapred-site": {"yarn.app.mapreduce.am.resource.mb": "3072", "mapreduce.map.memory.mb": "2048",
                            "mapreduce.reduce.memory.mb": "4096", "mapreduce.map.cpu.vcores": "1",
                            "mapreduce.reduce.cpu.vcores": "1",
                            "mapreduce.input.fileinputformat.split.minsize": str(4 * 2**20)},
            "yarn-site": {"yarn.nodemanager.resource.memory-mb": "4096", "yarn.scheduler.minimum-allocation-mb": "1024",
                          "yarn.scheduler.maximum-allocation-mb": "4096"},
        }
    raise SbclabError(f"Unknown preset '{name}'.", f"Choose one of: {', '.join(PRESETS)}.")


def replication(name: str, workers: int) -> int:
    """How many copies of each HDFS block the preset keeps (HDFS's own default 3), capped by the
    DataNodes there are."""
    asked = _settings(name, workers).get("hdfs-site", {}).get("dfs.replication", "3")
    return min(int(asked), workers)
