"""`stack fetch` of several stacks: side by side, each Java first and once, a failure fetched again alone."""

import threading

import pytest

from sbclab.errors import SbclabError
from sbclab.stack import distribution, versions

NAMES = ["lee-park-2026", "current", "lee-oh-park-2021", "hajji-tso-2016"]


@pytest.fixture
def steps(monkeypatch):
    """What the fetch did, in order; every stack's parts wait for all the others' to have begun."""
    done: list[tuple[str, str]] = []
    all_begun = threading.Barrier(len(NAMES), timeout=10)
    failing: dict[str, int] = {}

    def ensure_java(majors, refresh=False):
        done.append(("java", str(majors)))

    def parts(stack, refresh):
        done.append(("begun", stack.name))
        if threading.current_thread() is not threading.main_thread():
            all_begun.wait()  # a BrokenBarrierError here: the stacks were not fetched side by side
        if failing.get(stack.name, 0) > 0:
            failing[stack.name] -= 1
            raise SbclabError(f"Maven failed for {stack.name}.", "Read the log.")
        return stack.name

    monkeypatch.setattr(distribution, "ensure_java", ensure_java)
    monkeypatch.setattr(distribution, "_fetch_parts", parts)
    return done, failing


def test_stacks_are_fetched_side_by_side_after_each_java_once(steps):
    done, _ = steps
    assert distribution.fetch_all(NAMES) == NAMES, "in the order asked"
    javas = [what for kind, what in done if kind == "java"]
    assert javas == list(dict.fromkeys(str(versions.get(n).java) for n in NAMES)), "each Java once"
    assert all(kind == "java" for kind, _ in done[:len(javas)]), "the Javas before any stack's parts"


def test_a_stack_that_failed_beside_the_others_is_fetched_again_alone_and_a_second_failure_is_its_error(steps):
    done, failing = steps
    said = []
    failing["current"] = 1
    assert distribution.fetch_all(NAMES, say=said.append) == NAMES
    assert said == ["stack current: fetching it again alone (Maven failed for current.)"]
    assert [what for kind, what in done if kind == "begun"].count("current") == 2
    failing["current"] = 2
    with pytest.raises(SbclabError, match="Maven failed for current"):
        distribution.fetch_all(NAMES)
