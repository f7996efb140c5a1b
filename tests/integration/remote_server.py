#!/usr/bin/python3
"""A file server on 127.0.0.1 that misbehaves on purpose, for the http(s):// data tests (remote_lib.bash).

Serves ROOT with HEAD and single-range GET (206 + Content-Range, ETag, Last-Modified), as nginx and AI2's server do.
The first path segment picks the behaviour for the rest of the path, so that one mix file line or base_dir names it:

  /ok/PATH           served as it is
  /500x2/PATH        the first 2 GETs of PATH answer 500, then it is served
  /drop1/PATH        the first GET of PATH sends its headers and half its body, then closes the connection
  /short/PATH        every GET answers a complete 206 whose body (and Content-Length) is half the range asked for
  /etag/PATH         the ETag and Last-Modified change after the first response (a file replaced on the server)
  /size/PATH         GETs answer as if the file had grown by 4 bytes after the HEAD (Content-Range's total)
  /hang/PATH         every GET is accepted and never answered
  /delayMS/PATH      every response waits MS milliseconds first (added latency: /delay20/, /delay100/)

Prints the port it listens on (first line of stdout), then serves until killed. Standard library only.
"""
import http.server
import os
import re
import sys
import threading
import time

ROOT = os.path.abspath(sys.argv[1])
counts = {}  # (mode, path) -> (responses, GETs)
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as libcurl expects

    def log_message(self, *args):
        pass

    def route(self):
        parts = self.path.split("?")[0].lstrip("/").split("/", 1)
        if len(parts) != 2 or not (re.fullmatch(r"ok|500x2|drop1|short|etag|size|hang|delay\d+", parts[0])):
            return None, None
        path = os.path.normpath(os.path.join(ROOT, parts[1]))
        return parts[0], path if path.startswith(ROOT + os.sep) else None

    def validators(self, mode, path, seen):
        st = os.stat(path)
        version = 1 if mode == "etag" and seen > 0 else 0
        etag = '"%x-%x-%d"' % (int(st.st_mtime), st.st_size, version)
        modified = self.date_time_string(int(st.st_mtime) + 3600 * version)
        return st.st_size, etag, modified

    def answer(self, status, headers, body=b""):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def not_found(self):
        self.answer(404, [("Content-Length", "9")], b"not found" if self.command == "GET" else b"")

    def handle_request(self):
        mode, path = self.route()
        if mode is None or path is None or not os.path.isfile(path):
            return self.not_found()
        with lock:  # responses to PATH so far, and GETs of it so far
            seen, gets = counts.get((mode, path), (0, 0))
            counts[(mode, path)] = (seen + 1, gets + (self.command == "GET"))
        if mode.startswith("delay"):
            time.sleep(int(mode[5:]) / 1000)
        size, etag, modified = self.validators(mode, path, seen)
        common = [("ETag", etag), ("Last-Modified", modified), ("Accept-Ranges", "bytes")]
        if self.command == "HEAD":
            return self.answer(200, common + [("Content-Length", str(size))])
        if mode == "hang":
            time.sleep(3600)
            return
        if mode == "500x2" and gets < 2:
            return self.answer(500, [("Content-Length", "5")], b"oops!")
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        first, last = (int(m.group(1)), min(int(m.group(2)), size - 1)) if m else (0, size - 1)
        with open(path, "rb") as f:
            f.seek(first)
            body = f.read(last + 1 - first)
        if not m:
            return self.answer(200, common + [("Content-Length", str(size))], body)
        total = size + 4 if mode == "size" else size
        headers = common + [("Content-Range", "bytes %d-%d/%d" % (first, last, total))]
        if mode == "short":
            body = body[: len(body) // 2]
        if mode == "drop1" and gets == 0:
            self.answer(206, headers + [("Content-Length", str(len(body)))], body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.answer(206, headers + [("Content-Length", str(len(body)))], body)

    do_HEAD = handle_request
    do_GET = handle_request


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 1024  # a loader opens 32 connections per batch at once; the default backlog of 5 drops them


server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
