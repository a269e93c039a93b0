#!/usr/bin/env python3
"""bench_bytes_origin.py --dir D --port P --delay-ms MS — the origin of
`make bench-bytes`: serves D's files over HTTP/1.1 (keep-alive), each
response's first byte MS milliseconds after its request (this kernel has no
netem: the link's latency is added here, the rate by tc tbf). Listens on
127.0.0.1 only (inside the benchmark's network namespace)."""
import argparse
import functools
import http.server
import time


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    delay = 0.0

    def send_head(self):
        time.sleep(self.delay)
        return super().send_head()

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
