"""Removing and making HDFS folders through WebHDFS instead of a client JVM, and handing everything else
(and every answer that is not WebHDFS's) back to FsShell."""

from types import SimpleNamespace

import pytest
import requests

from sbclab.stack import clients


class Answer:
    def __init__(self, status=200, body=None):
        self.status_code, self.body = status, body

    def json(self):
        if self.body is None:
            raise ValueError("not JSON")
        return self.body


class Marks:
    def __init__(self):
        self.seen = []

    def command_started(self, label):
        self.seen.append(("started", label))

    def command_finished(self, label, started_at, finished_at, status):
        self.seen.append(("finished", label, status))


@pytest.fixture
def stack():
    return SimpleNamespace(spec=SimpleNamespace(master="master"), marks=Marks(),
                           env=lambda node, client=False: {"HADOOP_USER_NAME": "pi"},
                           web_url=lambda node, port: "http://10.0.0.10:9870")


@pytest.fixture
def asked(monkeypatch):
    calls, answers = [], []

    def request(method, url, timeout, params):
        calls.append((method, url, params))
        answer = answers.pop(0) if answers else Answer(body={"boolean": True})
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(clients.requests, "request", request)
    return calls, answers


def test_a_forced_recursive_remove_is_one_webhdfs_delete_per_path(stack, asked, tmp_path):
    calls, answers = asked
    answers.append(Answer(body={"boolean": False}))  # -f: a path that was not there is no error
    log = tmp_path / "cleanup.log"
    done = clients._namespace_change(stack, ["-rm", "-r", "-f", "-skipTrash", "/sbclab/out 1"], log)
    assert done.exit_status == 0 and done.command == ["webhdfs", "DELETE", "/sbclab/out 1"]
    assert calls == [("DELETE", "http://10.0.0.10:9870/webhdfs/v1/sbclab/out%201",
                      {"op": "DELETE", "recursive": "true", "user.name": "pi"})]
    assert "DELETE /sbclab/out 1: False" in log.read_text()
    assert stack.marks.seen == [("started", "hdfs dfs -rm"), ("finished", "hdfs dfs -rm", 0)]


def test_making_folders_with_their_parents_is_a_webhdfs_mkdirs_each(stack, asked, tmp_path):
    calls, _ = asked
    done = clients._namespace_change(stack, ["-mkdir", "-p", "/a/b", "/c"], tmp_path / "log")
    assert done.exit_status == 0 and [(m, params["op"]) for m, _, params in calls] == [("PUT", "MKDIRS")] * 2


@pytest.mark.parametrize("args", [
    ["-rm", "-r", "/sbclab/out"],  # without -f a missing path is an error FsShell reports
    ["-rm", "-r", "-f", "-skipTrash", "/sbclab/out/part-*"],  # only FsShell expands globs
    ["-mkdir", "-p", "relative/path"],  # relative to the user's home, which FsShell knows
    ["-cat", "/sbclab/out/part-00000"],
    ["-du", "-s", "/sbclab/out"],
    ["-rm", "-r", "-f", "-skipTrash"],
])
def test_anything_else_is_left_to_fsshell(stack, asked, tmp_path, args):
    calls, _ = asked
    assert clients._namespace_change(stack, args, tmp_path / "log") is None and calls == []


@pytest.mark.parametrize("answer", [Answer(404, {"RemoteException": {}}), Answer(body=None), Answer(body={"x": 1}),
                                    requests.ConnectionError("refused")])
def test_a_namenode_that_does_not_answer_as_webhdfs_leaves_it_to_fsshell(stack, asked, tmp_path, answer):
    _, answers = asked
    answers.append(answer)
    assert clients._namespace_change(stack, ["-rm", "-r", "-f", "-skipTrash", "/x"], tmp_path / "log") is None


def test_a_change_handed_back_to_fsshell_leaves_no_mark(stack, asked, tmp_path):
    _, answers = asked
    answers.append(Answer(body=None))
    clients._namespace_change(stack, ["-mkdir", "-p", "/x"], tmp_path / "log")
    assert stack.marks.seen == []
