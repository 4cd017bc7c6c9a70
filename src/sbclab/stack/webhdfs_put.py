"""Write standard input to an HDFS file through WebHDFS: `python3 -S webhdfs_put.py URL USER [FALLBACK...]`.

Run on a node in place of `hdfs dfs -put -f - PATH`, whose JVM costs the node about a second of CPU.
URL is the NameNode's /webhdfs/v1 URL of the file. The NameNode answers a CREATE with a redirect to a
DataNode (this node's own where it is one: it picks the client's), and the bytes go there in chunks
as they arrive, so a generator's output is never held whole. Where the NameNode does not send the
CREATE on (Hadoop 3.3's WebHDFS fails on Java 17), FALLBACK (the `hdfs dfs -put` command) takes over
with standard input unread. Standard library only, started without site packages: a node needs
nothing of sbclab's but this file.
"""

import http.client
import os
import sys
from urllib.parse import urlencode, urlsplit

CHUNK = 1 << 20


def _request(url: str, params: dict[str, str], body=None) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    headers = {"Content-Type": "application/octet-stream"}
    if body is None:
        headers["Content-Length"] = "0"
    connection.request("PUT", f"{parts.path}?{query}", body=body, headers=headers, encode_chunked=body is not None)
    return connection.getresponse()


def _chunks(stream):
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            return
        yield chunk


def main(url: str, user: str, fallback: list[str]) -> int:
    # 644, as `hdfs dfs -put` leaves a file under the default umask (Hadoop 2's WebHDFS would give 755).
    params = {"op": "CREATE", "overwrite": "true", "permission": "644", **({"user.name": user} if user else {})}
    try:
        answer = _request(url, params)
        location = answer.getheader("Location")
        answer.read()
        refused = None if answer.status in (301, 302, 307) and location else f"{answer.status} {answer.reason}"
    except OSError as e:
        refused = str(e)
    if refused is not None:
        print(f"WebHDFS CREATE: the NameNode answered {refused} without a DataNode to write to"
              + ("; putting through FsShell" if fallback else ""), file=sys.stderr)
        sys.stderr.flush()
        if fallback:
            os.execvp(fallback[0], fallback)
        return 1
    written = _request(location, {}, _chunks(sys.stdin.buffer))
    text = written.read().decode(errors="replace")
    if written.status != 201:
        print(f"WebHDFS CREATE: the DataNode answered {written.status} {written.reason}: {text[:500]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
