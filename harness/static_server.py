"""A static file server for a built site, as a static host serves it: text gzipped, the headers of the site's
`_headers` file — or none at all, as GitHub Pages and most static hosts serve a site (`send_headers=False`)."""

from __future__ import annotations

import fnmatch
import functools
import gzip
import os
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def parse_headers_file(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Netlify/Cloudflare `_headers` format: a path pattern line, then indented `Name: value` lines."""
    rules: list[tuple[str, list[tuple[str, str]]]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            rules.append((line.strip(), []))
        elif rules and ":" in line:
            name, value = line.strip().split(":", 1)
            rules[-1][1].append((name.strip(), value.strip()))
    return rules


def headers_for(path: str, rules: list[tuple[str, list[tuple[str, str]]]]) -> dict[str, str]:
    """Headers of every rule whose pattern matches the path; later rules win."""
    chosen: dict[str, str] = {}
    for pattern, headers in rules:
        if pattern == path or fnmatch.fnmatchcase(path, pattern):
            chosen.update(dict(headers))
    return chosen


# What a static host compresses: text formats; images and fonts go as they are.
COMPRESSIBLE = {".html", ".css", ".js", ".json", ".svg", ".xml", ".txt", ".map"}


class _Handler(SimpleHTTPRequestHandler):
    rules: list[tuple[str, list[tuple[str, str]]]] = []
    _gzipped: dict[str, bytes] = {}

    def do_GET(self) -> None:
        """Serve text files gzipped when the browser accepts it, as a static host or CDN would."""
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        accepts_gzip = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts_gzip and os.path.splitext(path)[1] in COMPRESSIBLE and os.path.isfile(path)
                and self.path.split("?", 1)[0].endswith(("/", os.path.splitext(path)[1]))):
            super().do_GET()
            return
        if path not in self._gzipped:
            with open(path, "rb") as source:
                self._gzipped[path] = gzip.compress(source.read(), compresslevel=6, mtime=0)
        body = self._gzipped[path]
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        self.wfile.write(body)

    def end_headers(self) -> None:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        for name, value in headers_for(path, self.rules).items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # keep the tests' and benchmarks' output quiet
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A page that navigates away or closes mid-download drops its connection: that is the browser's
        right, not a server error, so no traceback for it in the test output (anything else is still printed)."""
        if isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipeError, ConnectionResetError, …
            return
        super().handle_error(request, client_address)


class StaticServer:
    """Serve a built site on 127.0.0.1 on a free port, in a background thread."""

    def __init__(self, root: Path, *, send_headers: bool = True) -> None:
        headers_file = root / "_headers"
        rules = (parse_headers_file(headers_file.read_text(encoding="utf-8"))
                 if send_headers and headers_file.exists() else [])
        handler = type("Handler", (_Handler,), {"rules": rules, "_gzipped": {}})
        self._server = _Server(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> StaticServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
