"""What the stack keeps of a cluster beside the cluster's own state (stack.json in its folder):
what was chosen to run on it (choices.py), the configuration it rendered, the versions it runs, the Java of each board and what deploying
changed. It goes with the cluster's folder when the cluster is removed."""

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import atomic
from ..errors import SbclabError
from .choices import StackChoices

FILE = "stack.json"


class JavaOnNode(BaseModel):
    home: str
    version: str = Field(description="the first line of `java -version`")


class ContainerRecord(BaseModel):
    """The container runtime and node image every node of the cluster runs its stack in."""

    runtime: str
    version: str
    options: list[str] = []
    run_options: list[str] = []
    image: str
    image_digest: str

    def summary(self) -> dict[str, str]:
        """What a run records of it."""
        return {"runtime": self.runtime, "version": self.version, "image": self.image, "image_digest": self.image_digest}


class StackRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    choices: StackChoices = Field(default_factory=StackChoices)
    configuration: dict[str, dict[str, str]] = Field(default_factory=dict, description="the master's rendered values")
    versions: dict[str, str] = Field(default_factory=dict)
    bring_up_s: float | None = None
    java: dict[str, JavaOnNode] = Field(default_factory=dict, description="boards: the Java each runs the stack on")
    deploy: dict[str, list[str]] = Field(default_factory=dict, description="boards: what deploying changed on each")
    dist_dir: str | None = Field(None, description="boards: where Hadoop and Spark live on every board")
    container: ContainerRecord | None = Field(None, description="the runtime and image of the nodes' containers, "
                                              "where the cluster's runtime is container")
    systems: dict[str, dict[str, str]] = Field(default_factory=dict, description="what each node runs: OS, kernel, "
                                               "page size, governor, NUMA nodes, firmware, Java (cluster/systems.py)")

    @classmethod
    def load(cls, cluster_root: Path) -> "StackRecord":
        path = Path(cluster_root) / FILE
        if not path.exists():
            return cls()
        try:
            raw = json.loads(path.read_text())
            if "choices" not in raw:
                raw["choices"] = _choices_of_earlier(Path(cluster_root))
            return cls.model_validate(raw)
        except (OSError, json.JSONDecodeError, ValidationError) as err:
            raise SbclabError(f"{path} cannot be read ({err}).",
                              "Take the cluster down with 'sbclab cluster down --force' and bring it up again.") from err

    def save(self, cluster_root: Path) -> None:
        atomic.write_text(Path(cluster_root) / FILE, self.model_dump_json(indent=1))


def _choices_of_earlier(cluster_root: Path) -> StackChoices:
    """A cluster brought up before the stack kept its choices had them in its spec (state.json)."""
    state = json.loads((cluster_root / "state.json").read_text())
    return StackChoices.from_spec_of_earlier(state.get("spec", {}))
