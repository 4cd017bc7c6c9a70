"""A cluster's spec with what runs on it, for unit tests that build both: read as the spec,
unpacked as (spec, choices) where the stack asks for both."""

from typing import NamedTuple

from sbclab.cluster.spec import ClusterSpec
from sbclab.stack.choices import StackChoices


class Shaped(NamedTuple):
    spec: ClusterSpec
    choices: StackChoices

    def __getattr__(self, name):
        return getattr(self.spec, name)

    def chosen(self, **update) -> "Shaped":
        return Shaped(self.spec, self.choices.model_copy(update=update))
