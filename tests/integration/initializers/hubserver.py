"""A Hugging Face Hub for tests, on a loopback port: the endpoints ``huggingface_hub`` calls to
download a repository, serving repositories from memory.

    GET  /api/{models|datasets}/<repo>/revision/<revision>    the repo's commit and files
    GET  /api/{models|datasets}/<repo>/tree/<commit>          every file, its size and blob id
    HEAD /[datasets/]<repo>/resolve/<commit>/<path>           a file's commit, ETag and size
    GET  /[datasets/]<repo>/resolve/<commit>/<path>           the file

A private repository answers only a request whose ``Authorization`` is ``Bearer <its
token>``, and otherwise 401 with the Hub's ``X-Error-Code: RepoNotFound`` (as the Hub does,
so as not to tell that it exists). Every request is recorded with whether it carried the
right token, for the tests to check what reached the server.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Repo:
    files: dict[str, bytes]
    token: str | None = None  # None: public


@dataclass
class Hub:
    """What the hub serves (``("model" | "dataset", "org/name")`` to repository) and saw."""

    repos: dict[tuple[str, str], Repo]
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, auth
    url: str = ""


def _blob_id(data: bytes) -> str:
    """git's blob id, as the Hub gives in its tree."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    hub: Hub

    def log_message(self, format: str, *args: object) -> None:
        pass  # the requests are kept in hub.seen

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _send(self, status: int, headers: dict[str, str], payload: bytes, body: bool) -> None:
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(payload))}.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def _json(self, value: object, body: bool) -> None:
        self._send(200, {"Content-Type": "application/json"}, json.dumps(value).encode(), body)

    def _find(self, path: str) -> tuple[str, str, str] | None:
        """(kind, repo, rest) for ``/api/<kind>s/<org>/<name>/<rest>`` or a resolve URL."""
        parts = path.strip("/").split("/")
        if parts[:1] == ["api"] and len(parts) >= 5 and parts[1] in ("models", "datasets"):
            return parts[1][:-1], "/".join(parts[2:4]), "/".join(parts[4:])
        kind = "model"
        if parts[:1] == ["datasets"]:
            kind, parts = "dataset", parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            return kind, "/".join(parts[:2]), "/".join(parts[2:])
        return None

    def _serve(self, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        auth = self.headers.get("Authorization")
        self.hub.seen.append((self.command, path, auth))
        found = self._find(path)
        repo = self.hub.repos.get(found[:2]) if found else None
        if found is None:
            self._send(404, {}, b"{}", body)
            return
        if repo is None or (repo.token and auth != f"Bearer {repo.token}"):
            headers = {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}
            self._send(401, headers, b'{"error": "Repository not found"}', body)
            return
        _, name, rest = found
        if rest.startswith("revision/"):
            siblings = [{"rfilename": p} for p in sorted(repo.files)]
            info = {"id": name, "sha": COMMIT, "siblings": siblings, "private": bool(repo.token)}
            self._json(info, body)
        elif rest.startswith("tree/"):
            tree = [
                {"type": "file", "oid": _blob_id(data), "size": len(data), "path": p}
                for p, data in sorted(repo.files.items())
            ]
            self._json(tree, body)
        elif rest.startswith("resolve/"):
            file_path = rest.split("/", 2)[2]
            if file_path not in repo.files:
                headers = {"X-Error-Code": "EntryNotFound", "X-Error-Message": "Entry not found"}
                self._send(404, headers, b"{}", body)
                return
            data = repo.files[file_path]
            headers = {
                "X-Repo-Commit": COMMIT,
                "ETag": f'"{_blob_id(data)}"',
                "Content-Type": "application/octet-stream",
            }
            self._send(200, headers, data, body)
        else:
            self._send(404, {}, b"{}", body)


@contextmanager
def serving(hub: Hub) -> Iterator[Hub]:
    """``hub`` served on a free loopback port (its ``url`` set) until the block ends."""
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    host, port = server.server_address[:2]
    hub.url = f"http://{host!s}:{port}"
    thread = threading.Thread(target=server.serve_forever, name="hub", daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
