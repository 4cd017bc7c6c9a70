"""The seeds' benchmark suite: every workload by name."""

from ..errors import SbclabError
from .base import Workload
from .dfsio import DfsioRead, DfsioWrite
from .grep import Grep
from .pi import Pi
from .sort import Sort
from .terasort import TeraGen, TeraSort
from .wordcount import WordCount

WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    WordCount(), TeraGen(), TeraSort(), Grep(), Pi(), DfsioWrite(), DfsioRead(), Sort())}


def get(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise SbclabError(f"Unknown workload '{name}'.", f"Choose from: {', '.join(WORKLOADS)}.") from None
