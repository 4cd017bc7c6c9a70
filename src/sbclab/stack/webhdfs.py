"""HDFS through the NameNode's REST API (WebHDFS), where sbclab would otherwise start a client JVM.

A `hdfs dfs` JVM costs its node about a second of CPU before it reads a byte; the commands sbclab
runs around every run (making and removing folders, reading an output to check it, putting a
generated input) need none of that. What FsShell alone does (other flags, globs outside a path's
last part, relative paths) stays with FsShell, and so does anything WebHDFS answers unexpectedly:
FsShell then says what is wrong.

Reading a file's bytes and writing them go to a DataNode's web port, which this host reaches only
where the cluster's web UIs listen on the nodes' own addresses (not a board's loopback).
"""

import fnmatch
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import requests

from .daemons import Stack

GLOB = set("*?[]{}\\")
_CHUNK = 1 << 20


class NotHere(Exception):
    """WebHDFS cannot do this here; FsShell must."""


def plain(path: str) -> bool:
    """An absolute path with no glob in it."""
    return path.startswith("/") and not set(path) & GLOB


def user(stack: Stack) -> str | None:
    return stack.env(stack.spec.master, client=True).get("HADOOP_USER_NAME")


def base(stack: Stack) -> str:
    return stack.web_url(stack.spec.master, "namenode_http") + "/webhdfs/v1"


def data_here(stack: Stack) -> bool:
    """Whether this host reaches the DataNodes' web ports, through which file contents go."""
    return stack.choices.web_uis != "loopback"


def ask(stack: Stack, method: str, path: str, op: str, **extra: str) -> requests.Response:
    name = user(stack)
    return requests.request(method, base(stack) + quote(path), timeout=60,
                            params={"op": op, **extra, **({"user.name": name} if name else {})})


def _json(answer: requests.Response, key: str) -> dict:
    try:
        found = answer.json().get(key) if answer.status_code == 200 else None
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise NotHere(f"{answer.status_code}")
    return found


def files(stack: Stack, pattern: str) -> list[str]:
    """The files a `-cat` of PATTERN reads, as FsShell would expand it: a plain file, or the files of a
    folder whose names match the pattern's last part, in name order. NotHere for anything else."""
    folder, _, last = pattern.rpartition("/")
    if plain(pattern):
        try:
            status = _json(ask(stack, "GET", pattern, "GETFILESTATUS"), "FileStatus")
        except requests.RequestException as e:
            raise NotHere(str(e)) from None
        if status.get("type") != "FILE":
            raise NotHere("not a file")
        return [pattern]
    if not folder or not plain(folder) or "/" in last:
        raise NotHere("a glob outside the path's last part")
    try:
        listed = _json(ask(stack, "GET", folder, "LISTSTATUS"), "FileStatuses").get("FileStatus", [])
    except requests.RequestException as e:
        raise NotHere(str(e)) from None
    names = sorted(s["pathSuffix"] for s in listed if s.get("type") == "FILE" and fnmatch.fnmatchcase(s["pathSuffix"], last))
    if not names:
        raise NotHere("nothing matches")  # FsShell says so, and fails
    return [f"{folder}/{name}" for name in names]


def read(stack: Stack, path: str) -> Iterator[bytes]:
    """A file's bytes, from whichever DataNode the NameNode sends this host to."""
    name = user(stack)
    with requests.get(base(stack) + quote(path), timeout=60, stream=True,
                      params={"op": "OPEN", **({"user.name": name} if name else {})}) as answer:
        answer.raise_for_status()
        yield from answer.iter_content(_CHUNK)


def du(stack: Stack, path: str) -> str:
    """`hdfs dfs -du -s PATH`'s line: the bytes, the bytes with every replica, the path."""
    try:
        summary = _json(ask(stack, "GET", path, "GETCONTENTSUMMARY"), "ContentSummary")
    except requests.RequestException as e:
        raise NotHere(str(e)) from None
    return f"{summary['length']}  {summary['spaceConsumed']}  {path}\n"


def put_argv(stack: Stack, path: str, python: str, fallback: list[str]) -> list[str]:
    """What a node runs to write its standard input to PATH (replacing it) through WebHDFS: a
    standard-library script, so the node's own DataNode is the one the NameNode picks for the first
    replica, as for a `hdfs dfs -put` there; FALLBACK (that put) where the NameNode will not."""
    return [python, "-S", str(Path(__file__).with_name("webhdfs_put.py")), base(stack) + quote(path), user(stack) or "",
            *fallback]
