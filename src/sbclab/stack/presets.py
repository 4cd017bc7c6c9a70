"""Named sets of stack settings. `stock` is upstream's defaults; `paper-2026` and `paper-2021` are the
seeds' own (their configuration tables), and `paper` is the newest seed's. `tuned` is what `sbclab tune`
measured for the cluster's board and medium over stock: the settings of a tuning's result kept in
tuned/BOARD_MEDIUM.yaml with its evidence (trials, intervals, runs, sbclab version), and refused for a
board and medium no tuning has measured.

Only settings a preset changes are listed; everything else keeps its upstream default. Sizing from
the node's profile (YARN memory and vcores) and the settings a cluster needs to run at all
(addresses, directories, classpaths) are applied under every preset, see config.py.
"""

from functools import lru_cache
from importlib import resources

import yaml

from ..errors import SbclabError
from . import levers
from ..cluster.spec import ClusterSpec

PAPER_2026 = ("Lee & Park 2026, Tables 9-10: dfs.replication 1, mapreduce.job.reduces 2, "
              "spark.executor.instances = workers, spark.executor.cores 2")
PRESETS = {
    "stock": "upstream defaults of Hadoop 3.3.6 and Spark 3.5.0",
    "paper": f"the newest seed's settings (paper-2026): {PAPER_2026}",
    "paper-2026": PAPER_2026,
    "tuned": "what 'sbclab tune' measured for the board and medium over stock (stack/tuned/), with its evidence",
    "paper-2021": "Lee, Oh & Park 2021, Table 11: ApplicationMaster 3072 MB, maps 2048 MB, reduces 4096 MB, "
                  "split.minsize 4 MB, NodeManager memory 4096 MB, largest allocation 4096 MB, dfs.replication 3",
}


def check(name: str) -> str:
    """The preset's name, or a refusal that lists the ones there are."""
    if name not in PRESETS:
        raise SbclabError(f"Unknown preset '{name}'.", f"Choose one of: {', '.join(PRESETS)}.")
    return name


def overrides(spec: ClusterSpec, preset: str) -> dict[str, dict[str, str]]:
    """Settings the preset sets on this cluster, by file ('hdfs-site', 'mapred-site', 'spark-defaults', …)."""
    return _settings(preset, spec.workers, spec.board, spec.storage)


@lru_cache(maxsize=None)
def tuned_results() -> dict[tuple[str, str], dict]:
    """The tunings shipped with sbclab, by (board, medium): each `sbclab tune` result whole."""
    found = {}
    folder = resources.files(__package__).joinpath("tuned")
    if not folder.is_dir():
        return found
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            document = yaml.safe_load(entry.read_text())
            cluster = document["question"]["cluster"]
            found[(cluster["board"], cluster["storage"])] = {**document, "shipped_as": f"tuned/{entry.name}"}
    return found


def tuned(board: str, storage: str) -> dict:
    """The tuning measured for this board and medium, or a refusal that says which exist and how to make one."""
    found = tuned_results().get((board, storage))
    if found is None:
        measured = ", ".join(f"{b}/{m}" for b, m in tuned_results()) or "none yet"
        raise SbclabError(f"No tuning has measured {board}/{storage} for the 'tuned' preset (measured: {measured}).",
                          f"Run 'sbclab tune WORKLOAD --profile {board} --storage {storage}' and compare its file "
                          "with 'sbclab bench --variant tuned=FILE', or choose another preset.")
    return found


def tuned_settings(document: dict, workers: int) -> dict[str, dict[str, str]]:
    """A tuning's settings (an `sbclab tune` result) for a cluster of this many workers: a reduce a worker
    means four reduces on four workers, whatever count the tuning ran on."""
    chosen = {name: entry["choice"] for name, entry in (document.get("levers") or {}).items()}
    return levers.for_workers(document["settings"], chosen, workers)


def source(name: str, board: str, storage: str) -> str:
    """Where a preset's settings came from, for the runs and reports that used it."""
    if name != "tuned":
        return PRESETS.get(name, "")
    found = tuned(board, storage)  # a whole `sbclab tune` result (studies/tune.py's result_document)
    question, trials = found["question"], found["trials"]
    accepted = sum(1 for t in trials if t["accepted"])
    size = f"{int(question['size_bytes']) / 1e6:g} MB" if question.get("size_bytes") else "its own size"
    return (f"{found['shipped_as']}: {question['workload'].replace(',', '+')}/{question['engine']} at {size} "
            f"on {question['cluster']['workers']} workers, sbclab {found['sbclab']}, {found['made'][:10]}; "
            f"{len(trials)} trials, {accepted} accepted, {found['speedup_over_start']:.2f}x its starting settings")


def _settings(name: str, workers: int, board: str | None = None, storage: str | None = None) -> dict[str, dict[str, str]]:
    if name == "stock":
        return {}
    if name == "tuned":
        if board is None or storage is None:
            return {}
        return tuned_settings(tuned(board, storage), workers)
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


def replication(name: str, workers: int, board: str | None = None, storage: str | None = None) -> int:
    """How many copies of each HDFS block the preset keeps (HDFS's own default 3), capped by the
    DataNodes there are."""
    asked = _settings(name, workers, board, storage).get("hdfs-site", {}).get("dfs.replication", "3")
    return min(int(asked), workers)
