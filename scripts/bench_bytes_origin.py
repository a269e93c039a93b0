#!/usr/bin/env python3
"""bench_bytes_origin.py --dir D --port P --delay-ms MS — the origin of
`make bench-bytes`: serves D's files over HTTP/1.1 (keep-alive; `Range: bytes=N-`
with `If-Range` on Last-Modified), each response's first byte MS
milliseconds after its request (this kernel has no
netem: the link's latency is added here, the rate by tc tbf). Listens on
127.0.0.1 only (inside the benchmark's network namespace)."""
import argparse
import functools
import http.server
import os
import time


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    delay = 0.0

    def send_head(self):
        time.sleep(self.delay)
        rng = self.headers.get("Range", "")
        if not rng.startswith("bytes=") or not rng.endswith("-"):
            return super().send_head()
        # "bytes=N-", honoured when If-Range (a date) is the file's Last-Modified
        path = self.translate_path(self.path)
        try:
            f = open(path, "rb")
        except OSError:
            return super().send_head()
        st = os.fstat(f.fileno())
        modified = self.date_time_string(int(st.st_mtime))
        start = int(rng[6:-1])
        if self.headers.get("If-Range", modified) != modified or start >= st.st_size:
            f.close()
            return super().send_head()
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{st.st_size - 1}/{st.st_size}")
        self.send_header("Content-Length", str(st.st_size - start))
        self.send_header("Last-Modified", modified)
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return f

    def end_headers(self):
        if self.command == "GET" and not self._headers_buffer_has("Accept-Ranges"):
            self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def _headers_buffer_has(self, name):
        return any(name.encode() in h for h in getattr(self, "_headers_buffer", []))

    def copyfile(self, source, outputfile):
        try:
            super().copyfile(source, outputfile)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a thumbnail that settled: the client hung up

    def log_message(self, *args):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--delay-ms", type=float, default=40)
    a = p.parse_args()
    Handler.delay = a.delay_ms / 1000
    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # a client that hung up between requests

    server = Server(("127.0.0.1", a.port), functools.partial(Handler, directory=a.dir))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
