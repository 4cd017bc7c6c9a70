"""Every benchmark by name: the seeds' big-data suite on both engines, the node benchmarks, HPL,
NetPIPE, web-serving capacity and the concurrent mix. A new benchmark is one module and one line here."""

from ..errors import SbclabError
from .base import Workload
from .cpu import SysbenchCpu
from .dfsio import DfsioRead, DfsioWrite
from .grep import Grep
from .hpl import Hpl
from .kmeans import KMeans
from .logreg import LogisticRegression
from .memory import Memory
from .mix import Mix
from .netpipe import NetPipe
from .pagerank import PageRank
from .network import Iperf
from .pi import Pi
from .power import Idle, Stress
from .sevenzip import SevenZip
from .sort import Sort
from .storage import Storage
from .terasort import TeraGen, TeraSort
from .tpch import Tpch
from .user import UserJob, UserJobSpec
from .web import Web
from .wordcount import PySparkWordCount, WordCount

WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    WordCount(), PySparkWordCount(), TeraGen(), TeraSort(), Grep(), Pi(), DfsioWrite(), DfsioRead(), Sort(),
    Tpch(), PageRank(), KMeans(), LogisticRegression(), SysbenchCpu(), SevenZip(), Memory(), Storage(), Iperf(),
    Idle(), Stress(), NetPipe(), Web(), Hpl())}
WORKLOADS.update({m.name: m for m in (Mix("sequential", WORKLOADS), Mix("concurrent", WORKLOADS))})


BUILT_IN = frozenset(WORKLOADS)


def register_user_jobs(jobs: dict[str, UserJobSpec]) -> None:
    """The user's jobs of an experiment, by the names it gives them (none may be a built-in's)."""
    for name, spec in jobs.items():
        if name in BUILT_IN:
            raise SbclabError(f"'{name}' is a built-in workload's name.", "Give your job another name.")
        WORKLOADS[name] = UserJob(name, spec)


def get(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise SbclabError(f"Unknown workload '{name}'.", f"Choose from: {', '.join(WORKLOADS)}.") from None
