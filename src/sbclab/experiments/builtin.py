"""The experiments the shorthand commands stand for, built from their options.

`sbclab run` is the main job (Hadoop TeraGen → TeraSort → TeraValidate and Spark Pi); `sbclab micro`
the seeds' node benchmarks (sysbench, fio, iperf3, power, NetPIPE, web capacity); `sbclab hpl`
Linpack across 1, 2, 4 ... workers. Each is an `Experiment` like any file given to `sbclab bench`,
run by the same orchestrator.
"""

from typing import Any

from ..monitor.settings import MonitorSettings
from ..stack import versions as stack_versions
from .model import BetweenRuns, ClusterSettings, Experiment, parse

# `micro --benchmarks` names and the workloads they run.
MICRO = {"cpu": ("sysbench-cpu",), "7zip": ("7zip",), "memory": ("memory",), "storage": ("storage",),
         "network": ("iperf",), "power": ("idle", "stress"), "netpipe": ("netpipe",), "web": ("web",)}


def _cluster(settings: ClusterSettings) -> dict[str, Any]:
    return settings.model_dump(exclude_none=True)


def main_job(cluster: ClusterSettings, storage: str, preset: str, workers: int, size_bytes: int, repetitions: int,
             pi_maps: int, pi_samples: int, monitor: MonitorSettings, layout: str = "separate-master",
             stack: str = stack_versions.DEFAULT, faults: list[dict] = (), idle_wait_s: float = 60) -> Experiment:
    """TeraSort on Hadoop (its TeraGen input made first, TeraValidate after) and Pi on Spark; with
    faults, each also under each fault."""
    return parse({
        "name": "main job", "cluster": _cluster(cluster), "workloads": ["terasort", "pi"], "layouts": [layout],
        "stacks": [stack],
        "engines_of": {"terasort": ["hadoop"], "pi": ["spark"]}, "workers": [workers], "sizes": [size_bytes],
        "storage": [storage], "presets": [preset], "repetitions": repetitions,
        "parameters": {"pi": {"maps": pi_maps, "samples_per_map": pi_samples}},
        # As the seeds did before every run: the page cache dropped and the nodes idle; trimmed with
        # the fstrim knob.
        "between_runs": BetweenRuns(fstrim="fstrim" in cluster.knobs, idle_timeout_s=idle_wait_s).model_dump(),
        "monitor": monitor.model_dump(), "faults": list(faults),
    }, "the main job")


def micro(cluster: ClusterSettings, storage: str, workers: int, benchmarks: list[str], parameters: dict[str, dict],
          repetitions: int, monitor: MonitorSettings) -> Experiment:
    """The chosen node benchmarks on bare nodes (no Hadoop or Spark), as the seeds measured their boards."""
    names = [w for b in benchmarks for w in MICRO[b]]
    return parse({
        "name": "node benchmarks", "cluster": _cluster(cluster), "workloads": names, "workers": [workers],
        "sizes": [1], "storage": [storage], "presets": ["stock"], "repetitions": repetitions,
        "parameters": {name: given for name, given in parameters.items() if name in names},
        "between_runs": {"drop_caches": False, "fstrim": False, "idle_timeout_s": 0},
        "monitor": monitor.model_dump(),
    }, "the node benchmarks")


def hpl(cluster: ClusterSettings, storage: str, workers: int, parameters: dict[str, Any], repetitions: int,
        monitor: MonitorSettings) -> Experiment:
    """HPL on 1, 2, 4 ... workers of one cluster (Baun 2016, Table 7), NB swept first if asked."""
    return parse({
        "name": "hpl", "cluster": _cluster(cluster), "workloads": ["hpl"], "workers": [workers], "sizes": [1],
        "storage": [storage], "presets": ["stock"], "repetitions": repetitions, "parameters": {"hpl": parameters},
        "between_runs": {"drop_caches": False, "fstrim": False, "idle_timeout_s": 0},
        "monitor": monitor.model_dump(),
    }, "hpl")
