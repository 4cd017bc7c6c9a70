"""What a cluster runs, as opposed to what it is: the preset and settings its Hadoop and Spark are
configured with, the named versions, what manages Spark's executors, where the web UIs listen and
the share of the seed's data a task holds. The cluster's spec (cluster/spec.py) is its nodes and
their resources; these are chosen over it, made into configuration here, and kept in the stack's
record of the cluster (record.py) beside the cluster's own state."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..earlier import FIRST_STACK
from .versions import DEFAULT

FIELDS = ("preset", "stack", "settings", "spark_manager", "web_uis", "data_scale")


class StackChoices(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: str = "stock"  # the name of the stack settings it runs (presets.py)
    stack: str = DEFAULT  # the named versions it runs (versions.py)
    # (file, property, value) set over the preset: an experiment's own settings, or the HDFS block size
    # a scaled-down reproduction scales too.
    settings: tuple[tuple[str, str, str], ...] = ()
    # What runs Spark's executors: YARN's NodeManagers, or Spark's own standalone master and workers
    # (Hajji & Tso's cluster: HDFS and Spark, no YARN).
    spark_manager: Literal["yarn", "standalone"] = "yarn"
    # Where web UIs and REST APIs listen: each node's cluster address, or its loopback only (real
    # boards, unless the user opts in; sbclab then reaches them through SSH, cluster/tunnel.py).
    web_uis: Literal["cluster", "loopback"] = "cluster"
    # The share of the seed's data each task holds, where a reproduction scaled it (with the HDFS
    # block, so the task count stays): the buffers a task fills follow it (buffers.py).
    data_scale: float = Field(1.0, gt=0, le=1)

    @staticmethod
    def settings_of(given: dict[str, dict[str, str]] | None) -> tuple[tuple[str, str, str], ...]:
        """An experiment's {file: {property: value}} as the choices keep them, in a stable order."""
        return tuple((file, name, value) for file, props in sorted((given or {}).items())
                     for name, value in sorted(props.items()))

    @classmethod
    def from_spec_of_earlier(cls, spec: dict) -> "StackChoices":
        """The choices of a cluster recorded before they were kept apart: its spec carried them, and
        one recorded before stacks had names ran the first."""
        kept = {name: spec[name] for name in FIELDS if name in spec}
        kept.setdefault("stack", FIRST_STACK)
        kept["settings"] = tuple(tuple(s) for s in kept.get("settings", ()))
        return cls.model_validate(kept)
