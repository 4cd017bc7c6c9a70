"""HDFS through WebHDFS rather than a client JVM: removing and making folders, reading and writing files;
which commands go that way, and everything else (and every odd answer) handed back to FsShell."""

import http.server
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from sbclab.stack import clients, webhdfs
from sbclab.stack.choices import StackChoices


class Answer:
    def __init__(self, status=200, body=None):
        self.status_code, self.body = status, body

    def json(self):
        if self.body is None:
            raise ValueError("not JSON")
        return self.body


def _stack(backend="emulated", web_uis="cluster"):
    return SimpleNamespace(spec=SimpleNamespace(master="master", backend=backend), marks=None,
                           choices=StackChoices(web_uis=web_uis),
                           env=lambda node, client=False: {"HADOOP_USER_NAME": "pi", "PATH": "/usr/bin:/bin"},
                           web_url=lambda node, port: "http://10.0.0.10:9870",
                           java=lambda node, main, args, **kw: ["java", main, *args])


def _listing(*names, folders=()):
    return Answer(body={"FileStatuses": {"FileStatus": [{"pathSuffix": n, "type": "FILE"} for n in names] +
                                         [{"pathSuffix": n, "type": "DIRECTORY"} for n in folders]}})


@pytest.fixture
def answers(monkeypatch):
    """The NameNode's answers to the metadata requests, in order; the files' contents by path."""
    queue, contents, asked = [], {}, []

    def request(method, url, timeout, params):
        asked.append((method, url, params["op"]))
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(webhdfs.requests, "request", request)
    monkeypatch.setattr(webhdfs, "read", lambda stack, path: iter([contents[path]]) if path in contents
                        else (_ for _ in ()).throw(requests.ConnectionError("DataNode gone")))
    return queue, contents, asked


def test_a_glob_in_the_last_part_is_expanded_as_fsshell_does(answers):
    queue, _, asked = answers
    queue.append(_listing("part-r-00001", "_SUCCESS", "part-r-00000", folders=["part-r-dir"]))
    assert webhdfs.files(_stack(), "/out/run 1/part-*") == ["/out/run 1/part-r-00000", "/out/run 1/part-r-00001"]
    assert asked == [("GET", "http://10.0.0.10:9870/webhdfs/v1/out/run%201", "LISTSTATUS")]


@pytest.mark.parametrize("pattern, queued", [
    ("/out/*/part-*", []),  # a glob before the last part: FsShell's
    ("relative/part-*", []),
    ("/out/part-*", [_listing("_SUCCESS")]),  # nothing matches: FsShell fails and says so
    ("/out", [Answer(body={"FileStatus": {"type": "DIRECTORY"}})]),  # cat of a folder is FsShell's error
    ("/out/part-*", [Answer(404, {"RemoteException": {}})]),
    ("/out/part-*", [Answer(200, None)]),  # not WebHDFS's JSON
    ("/out/part-*", [requests.ConnectionError("refused")]),
])
def test_what_webhdfs_cannot_expand_is_fsshells(answers, pattern, queued):
    answers[0].extend(queued)
    with pytest.raises(webhdfs.NotHere):
        webhdfs.files(_stack(), pattern)


def test_du_is_the_namenodes_content_summary(answers, tmp_path):
    answers[0].append(Answer(body={"ContentSummary": {"length": 1200, "spaceConsumed": 2400}}))
    done = clients.fs(_stack(), ["-du", "-s", "/sbclab/t"], tmp_path / "du.log")
    assert done.output.split() == ["1200", "2400", "/sbclab/t"] and done.command == ["webhdfs", "du", "/sbclab/t"]


def test_cat_reads_the_files_in_order_and_through_a_tail_here(answers, tmp_path):
    queue, contents, _ = answers
    contents.update({"/o/part-0": b"a b\nc\n", "/o/part-1": b"d e f\n"})
    queue.append(_listing("part-1", "part-0"))
    assert clients.fs(_stack(), ["-cat", "/o/part-*"], tmp_path / "cat.log").output == "a b\nc\nd e f\n"
    queue.append(_listing("part-1", "part-0"))
    assert clients.fs_through(_stack(), ["-cat", "/o/part-*"], "wc -lw", tmp_path / "wc.log").split() == ["3", "6"]
    queue.append(_listing("part-1", "part-0"))
    with pytest.raises(clients.SbclabError, match="through 'grep -q zzz' failed"):
        clients.fs_through(_stack(), ["-cat", "/o/part-*"], "grep -q zzz", tmp_path / "grep.log")


@pytest.mark.parametrize("stack, args", [
    (_stack(web_uis="loopback"), ["-cat", "/o/part-0"]),  # a board's DataNodes are on its loopback
    (_stack(), ["-cat", "/o/a", "/o/b"]),
    (_stack(), ["-du", "/o"]),
    (_stack(), ["-ls", "-R", "/"]),
])
def test_other_reads_start_fsshell(monkeypatch, answers, tmp_path, stack, args):
    started = []
    monkeypatch.setattr(clients, "_timed", lambda stack, argv, log, label, timeout: started.append(argv) or
                        SimpleNamespace(exit_status=0, output=""))
    clients.fs(stack, args, tmp_path / "log")
    assert started == [["java", "org.apache.hadoop.fs.FsShell", *args]]


def test_a_datanode_that_fails_before_the_first_byte_hands_the_read_to_fsshell(answers, tmp_path):
    answers[0].append(_listing("part-0"))  # listed, but its contents cannot be read
    assert clients._through_here(_stack(), "cat", ["/o/part-0"], "wc -l", tmp_path / "log", 60) is None


def test_a_datanode_that_fails_midway_is_an_error_not_a_second_read(monkeypatch, tmp_path):
    def cut_off(stack, path):
        yield b"first part\n"
        raise requests.ConnectionError("DataNode gone")

    monkeypatch.setattr(webhdfs, "read", cut_off)
    with pytest.raises(clients.SbclabError, match="failed midway"):
        clients._through_here(_stack(), "cat", ["/o/part-0"], "wc -l", tmp_path / "log", 60)


@pytest.mark.parametrize("backend, web_uis, jvm", [("emulated", "cluster", False), ("processes", "cluster", False),
                                                   ("ssh", "cluster", True), ("ssh", "loopback", True)])
def test_a_put_is_webhdfs_on_this_hosts_nodes_and_fsshell_on_boards(backend, web_uis, jvm):
    argv = clients.put_command(_stack(backend, web_uis), "worker1", "/in/part 0")
    if jvm:
        assert argv == ["java", "org.apache.hadoop.fs.FsShell", "-put", "-f", "-", "/in/part 0"]
    else:
        assert argv[1:] == ["-S", str(Path(webhdfs.__file__).with_name("webhdfs_put.py")),
                            "http://10.0.0.10:9870/webhdfs/v1/in/part%200", "pi",
                            "java", "org.apache.hadoop.fs.FsShell", "-put", "-f", "-", "/in/part 0"]


class _HdfsDouble(http.server.BaseHTTPRequestHandler):
    """A NameNode that sends a CREATE to a DataNode (itself), and a DataNode that keeps the bytes."""
    received: dict = {}
    namenode_status = 307
    datanode_status = 201

    def do_PUT(self):
        if "namenoderpcaddress" not in self.path:
            self.received["create"] = self.path
            self.send_response(self.namenode_status)
            if self.namenode_status == 307:
                self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}/webhdfs/v1/in/p?op=CREATE"
                                             "&namenoderpcaddress=m:8020&overwrite=true")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b""
        assert self.headers["Transfer-Encoding"] == "chunked"
        while True:  # chunked: a generator's output is never held whole
            size = int(self.rfile.readline().strip(), 16)
            if size == 0:
                self.rfile.readline()
                break
            body += self.rfile.read(size)
            self.rfile.readline()
        self.received["data"] = body
        self.send_response(self.datanode_status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("namenode_status, datanode_status, exit_status, written", [
    (307, 201, 0, "datanode"),
    (307, 403, 1, "datanode"),  # the bytes are gone into the request: no second try
    (500, 201, 0, "fallback"),  # Hadoop 3.3's WebHDFS on Java 17: FsShell gets standard input whole
])
def test_the_put_script_streams_its_input_to_the_datanode_the_namenode_names(tmp_path, namenode_status,
                                                                            datanode_status, exit_status, written):
    _HdfsDouble.received, _HdfsDouble.namenode_status, _HdfsDouble.datanode_status = {}, namenode_status, datanode_status
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HdfsDouble)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kept = tmp_path / "kept-by-fsshell"
    try:
        data = bytes(range(256)) * 10_000
        done = subprocess.run([sys.executable, "-S", str(Path(webhdfs.__file__).with_name("webhdfs_put.py")),
                               f"http://127.0.0.1:{server.server_port}/webhdfs/v1/in/p", "pi",
                               "sh", "-c", f"cat > {kept}"],
                              input=data, capture_output=True, timeout=60)
    finally:
        server.shutdown()
    assert done.returncode == exit_status, done.stderr
    assert "op=CREATE" in _HdfsDouble.received["create"] and "user.name=pi" in _HdfsDouble.received["create"]
    assert "permission=644" in _HdfsDouble.received["create"]
    if written == "datanode":
        assert _HdfsDouble.received["data"] == data and not kept.exists()
    else:
        assert kept.read_bytes() == data and "data" not in _HdfsDouble.received
        assert b"putting through FsShell" in done.stderr
    if exit_status:
        assert b"the DataNode answered 403" in done.stderr


# --- folders made and removed -----------------------------------------------------------------

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
