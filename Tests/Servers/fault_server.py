#!/usr/bin/env python3
"""A small hostile HTTP server for libsdcore's failure tests (loopback only).

Paths (all serve the image given with --file unless said otherwise):
  /ok               a correct 200 response
  /drip             the body in 256-byte pieces every 5 ms (slow but completes)
  /drip-progressive[?gate=K]
                    the --progressive image in 2 KiB pieces every 20 ms;
                    gate: the last piece waits for /open?gate=K (15 min at most)
  /stall            half the body, then silence until the client leaves (15 min at most)
  /reset            half the body, then a TCP reset
  /short            Content-Length says the full size, half is sent, then close
  /endless          chunked body that never ends
  /redirect-loop    302 to itself
  /500              500 with an HTML body
  /html             200, Content-Type image/jpeg, body is an HTML page
  /empty            200, image/jpeg, empty body
  /slow-headers     waits 60 s before the status line
  /require-token    200 only with the header "X-Token: sdwebimage", else 403
  /base64           200, text/plain, the image base64-encoded
  /set-cookie       200 with "Set-Cookie: sdtoken=42"
  /need-cookie      200 only with that cookie sent back, else 403
  /flaky?id=K&fail=N[&status=S][&after=T][&kind=reset]
                    the first N requests for key K fail (status S, default 503,
                    with "Retry-After: T" if given; kind=reset: half the body
                    then a TCP reset), later ones get the image
  /hits?id=K        text/plain: how many /flaky requests key K has had
  /resumable?id=K[&cut=N][&bad=1]
                    ranges with ETag "v1": the first N (default 1) whole
                    requests for K send half the body then reset; a request
                    with "Range: bytes=S-" and "If-Range: "v1"" gets a 206 with
                    the rest (bad=1: a 206 that starts at 0 instead)
  /ranges?id=K      text/plain: the range starts K was asked for, comma-separated
  /echo-headers     200, text/plain: the request head exactly as received
  /bad-status       a status line that is not HTTP ("ICY 200 OK")
  /redirect?to=URL  302 to URL (percent-encoded in the query)
  /slow-drip?total=MS&gap=MS
                    the body in equal pieces, one every gap ms, over about
                    total ms: slow yet never idle for long
  /bad-etag         200 with 'ETag: "a<CR>b"' (a bare CR inside the value)
  /many-headers?n=N 200 with N headers X-H-0 .. X-H-(N-1) before the image
  /huge-header      200 with one 300 KiB header line (over curl's 100 KiB limit)
  /changing?id=K[&delay=MS]
                    ETag "K-n" on the n-th request for K, body the image
                    (alternately the --file and the --progressive image), so
                    every revalidation finds a changed image; waits MS ms first
  /drip-file?name=REL[&piece=N][&gap=MS][&gate=K]
                    the file REL under the web root (the --file image's
                    folder's parent), N bytes (default 512) every MS ms (default 20);
                    gate: the last piece waits for /open?gate=K (15 min at most);
                    mid=K2: so does the first piece that starts past the
                    middle of the body, for /open?gate=K2; first=K3: the
                    body starts at /open?gate=K3; etag=T|auto, ranges=1,
                    id=I: see the code (ETag, Range with If-Range, counts)
  /sent?id=I        the body bytes /drip-file wrote for id=I
  /idle?id=I        text/plain "idle" once no /drip-file for id=I is running
                    (a drip held at a gate ends by itself when its client
                    closes: a test waits here for a transfer that ended
                    early to be gone before it opens the gate; 2 min at most)
  /open?gate=K      text/plain "open": lets gate K's drips finish
  /etag?id=K[&etag=V][&delay=MS]
                    the image with ETag "V" (default v1; lowercase) and
                    Cache-Control: no-cache after MS ms; If-None-Match "V" gets a
                    304; /hits counts requests for K, and 304s for K:304
  /proxied          text/plain: the absolute-form targets received so far, one per line
A query string is otherwise ignored for routing (distinct URLs, same behaviour).
A request in absolute form ("GET http://host/path", as to a forward proxy) is
recorded for /proxied and then served as its path: a stand-in proxy for the
proxy-policy tests that never connects anywhere.
"""
import argparse, base64, hashlib, socket, socketserver, struct, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--file", required=True)
ap.add_argument("--progressive", required=True)
args = ap.parse_args()
IMAGE = open(args.file, "rb").read()
PROGRESSIVE = open(args.progressive, "rb").read()
HTML = b"<!DOCTYPE html><html><body><h1>Not an image</h1></body></html>"
HITS = {}  # /flaky key -> requests seen
SENT = {}  # /drip-file id -> body bytes written
ACTIVE = {}  # /drip-file id -> drips running
HITS_LOCK = threading.Lock()
RANGES = {}  # /resumable key -> range starts asked for
PROXIED = []  # absolute-form targets, in order
GATES = {}  # /drip-file gate key -> threading.Event


def peer_gone(sock):
    """Whether the client closed its end (a transfer it ended early): what a
    drip held at a gate then writes would only be counted, never read."""
    import select
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def hold(key, sock):
    """Wait for gate `key` to open; False (at once) if the client closes
    meanwhile: a drip held for a transfer that ended early ends with it."""
    ev, deadline = gate(key), time.monotonic() + 900
    while not ev.wait(0.05):
        if peer_gone(sock) or time.monotonic() > deadline:
            return False
    return not peer_gone(sock)


def gate(key):
    with HITS_LOCK:
        return GATES.setdefault(key, threading.Event())


class Handler(socketserver.BaseRequestHandler):
    def send_head(self, status, length=None, ctype="image/jpeg", extra=""):
        h = f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
        if length is not None:
            h += f"Content-Length: {length}\r\n"
        h += extra + "Connection: close\r\n\r\n"
        self.request.sendall(h.encode())

    def handle(self):
        sock = self.request
        sock.settimeout(120)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                return
            data += chunk
        target = data.split(b" ", 2)[1].decode()
        if target.startswith("http://"):
            with HITS_LOCK:
                PROXIED.append(target)
            rest = target[len("http://"):]
            target = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        path = target.split("?")[0]
        query = dict(kv.split("=", 1) for kv in target.partition("?")[2].split("&") if "=" in kv)
        headers = data.split(b"\r\n\r\n")[0].decode("latin-1").lower()
        half = len(IMAGE) // 2
        try:
            if path == "/open":
                gate(query.get("gate", "")).set()
                self.send_head("200 OK", 4, ctype="text/plain")
                sock.sendall(b"open")
            elif path == "/ok":
                self.send_head("200 OK", len(IMAGE))
                sock.sendall(IMAGE)
            elif path == "/drip":
                self.send_head("200 OK", len(IMAGE))
                for i in range(0, len(IMAGE), 256):
                    sock.sendall(IMAGE[i:i + 256])
                    time.sleep(0.005)
            elif path == "/drip-file":
                import os
                root = os.path.dirname(os.path.dirname(os.path.abspath(args.file)))
                full = os.path.abspath(os.path.join(root, query.get("name", "")))
                if not full.startswith(root + os.sep) or not os.path.isfile(full):
                    self.send_head("404 Not Found", 0)
                    return
                body = open(full, "rb").read()
                piece, gap = int(query.get("piece", "512")), int(query.get("gap", "20")) / 1000
                # etag=: a strong ETag (etag=auto: of the file's bytes) and
                # Accept-Ranges; every Range is ignored (the whole file, 200:
                # an origin that advertises ranges it does not serve) unless
                # ranges=1, which honours "bytes=N-" when If-Range is the ETag.
                # Requests are counted under id= (/hits), the bytes written
                # under id= too (/sent)
                tag = query.get("etag")
                if tag == "auto":
                    tag = hashlib.sha1(body).hexdigest()[:16]
                extra = f'ETag: "{tag}"\r\nAccept-Ranges: bytes\r\n' if tag else ""
                key = query.get("id")
                if key:
                    with HITS_LOCK:
                        HITS[key] = HITS.get(key, 0) + 1
                lines = {k.strip(): v.strip() for k, v in
                         (l.split(":", 1) for l in headers.split("\r\n")[1:] if ":" in l)}
                rng = lines.get("range", "")
                start = 0
                if ("ranges" in query and tag and rng.startswith("bytes=") and rng.endswith("-")
                        and lines.get("if-range") == f'"{tag}"' and int(rng[6:-1]) < len(body)):
                    start = int(rng[6:-1])
                    self.send_head("206 Partial Content", len(body) - start, ctype="application/octet-stream",
                                   extra=extra + f"Content-Range: bytes {start}-{len(body) - 1}/{len(body)}\r\n")
                else:
                    self.send_head("200 OK", len(body), ctype="application/octet-stream", extra=extra)
                if key:
                    with HITS_LOCK:
                        ACTIVE[key] = ACTIVE.get(key, 0) + 1
                try:
                    # held at a gate, a drip whose client closes ends then: the
                    # rest is never written (nor counted in /sent)
                    if "first" in query and start == 0 and not hold(query["first"], sock):
                        return  # the headers are out, no body byte yet, until /open
                    held = False
                    for i in range(start, len(body), piece):
                        if "mid" in query and start == 0 and not held and i >= len(body) // 2:
                            held = True
                            if not hold(query["mid"], sock):
                                return  # the first half is in, until /open
                        if "gate" in query and start == 0 and i + piece >= len(body):
                            if not hold(query["gate"], sock):
                                return  # all but the last piece are in, until /open (tests open it on every path)
                        sock.sendall(body[i:i + piece])
                        if key:
                            with HITS_LOCK:
                                SENT[key] = SENT.get(key, 0) + len(body[i:i + piece])
                        time.sleep(gap)
                finally:
                    if key:
                        with HITS_LOCK:
                            ACTIVE[key] -= 1
            elif path == "/idle":
                # bounded: a client that keeps an early-ended connection open
                # (seen under TSan, and in the fleet test) would hold it forever
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    with HITS_LOCK:
                        if ACTIVE.get(query.get("id", ""), 0) == 0:
                            break
                    time.sleep(0.02)
                self.send_head("200 OK", 4, "text/plain")
                sock.sendall(b"idle")
            elif path == "/sent":
                with HITS_LOCK:
                    out = str(SENT.get(query.get("id", ""), 0)).encode()
                self.send_head("200 OK", len(out), "text/plain")
                sock.sendall(out)
            elif path == "/drip-progressive":
                self.send_head("200 OK", len(PROGRESSIVE))
                for i in range(0, len(PROGRESSIVE), 2048):
                    if "gate" in query and i + 2048 >= len(PROGRESSIVE):
                        gate(query["gate"]).wait(900)
                    sock.sendall(PROGRESSIVE[i:i + 2048])
                    time.sleep(0.02)
            elif path == "/stall":
                self.send_head("200 OK", len(IMAGE))
                sock.sendall(IMAGE[:half])
                # silent until the client leaves: a test's "still stalled"
                # holds however slow the machine (a 60 s stall once ended first)
                sock.settimeout(1)
                deadline = time.monotonic() + 900
                while time.monotonic() < deadline:
                    try:
                        if not sock.recv(4096):
                            break
                    except socket.timeout:
                        continue
                    except OSError:
                        break
            elif path == "/reset":
                self.send_head("200 OK", len(IMAGE))
                sock.sendall(IMAGE[:half])
                time.sleep(0.05)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif path == "/short":
                self.send_head("200 OK", len(IMAGE))
                sock.sendall(IMAGE[:half])
            elif path == "/endless":
                self.send_head("200 OK", None, extra="Transfer-Encoding: chunked\r\n")
                block = b"\xff" * 65536
                frame = b"%x\r\n" % len(block) + block + b"\r\n"
                deadline = time.time() + 30
                while time.time() < deadline:
                    sock.sendall(frame)
            elif path == "/redirect-loop":
                self.send_head("302 Found", 0, extra="Location: /redirect-loop\r\n")
            elif path == "/500":
                self.send_head("500 Internal Server Error", len(HTML), "text/html")
                sock.sendall(HTML)
            elif path == "/html":
                self.send_head("200 OK", len(HTML))
                sock.sendall(HTML)
            elif path == "/empty":
                self.send_head("200 OK", 0)
            elif path == "/require-token":
                if "\r\nx-token: sdwebimage\r\n" in headers + "\r\n":
                    self.send_head("200 OK", len(IMAGE))
                    sock.sendall(IMAGE)
                else:
                    self.send_head("403 Forbidden", 0, "text/plain")
            elif path == "/set-cookie":
                self.send_head("200 OK", len(IMAGE), extra="Set-Cookie: sdtoken=42; Path=/\r\n")
                sock.sendall(IMAGE)
            elif path == "/need-cookie":
                if "sdtoken=42" in headers:
                    self.send_head("200 OK", len(IMAGE))
                    sock.sendall(IMAGE)
                else:
                    self.send_head("403 Forbidden", 0, "text/plain")
            elif path == "/base64":
                body = base64.b64encode(IMAGE)
                self.send_head("200 OK", len(body), "text/plain")
                sock.sendall(body)
            elif path == "/flaky":
                key = query.get("id", "")
                with HITS_LOCK:
                    HITS[key] = n = HITS.get(key, 0) + 1
                if n > int(query.get("fail", "1")):
                    self.send_head("200 OK", len(IMAGE))
                    sock.sendall(IMAGE)
                elif query.get("kind") == "reset":
                    self.send_head("200 OK", len(IMAGE))
                    sock.sendall(IMAGE[:half])
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()
                else:
                    extra = f"Retry-After: {query['after']}\r\n" if "after" in query else ""
                    self.send_head(f"{query.get('status', '503')} Flaky", len(HTML), "text/html", extra)
                    sock.sendall(HTML)
            elif path == "/resumable":
                key = query.get("id", "")
                lines = dict(l.split(":", 1) for l in headers.split("\r\n")[1:] if ":" in l)
                rng = lines.get("range", "").strip()
                same = lines.get("if-range", "").strip() == '"v1"'
                tags = 'ETag: "v1"\r\nAccept-Ranges: bytes\r\n'
                if rng.startswith("bytes=") and rng.endswith("-") and same:
                    start = int(rng[6:-1])
                    with HITS_LOCK:
                        RANGES.setdefault(key, []).append(start)
                    first = 0 if query.get("bad") else start
                    body = IMAGE[first:]
                    self.send_head("206 Partial Content", len(body), extra=tags
                                   + f"Content-Range: bytes {first}-{len(IMAGE) - 1}/{len(IMAGE)}\r\n")
                    sock.sendall(body)
                else:
                    with HITS_LOCK:
                        HITS[key] = n = HITS.get(key, 0) + 1
                    self.send_head("200 OK", len(IMAGE), extra=tags)
                    if n <= int(query.get("cut", "1")):
                        sock.sendall(IMAGE[:half])
                        time.sleep(0.2)  # let the client read it all before the reset, even on a busy machine
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    else:
                        sock.sendall(IMAGE)
            elif path == "/ranges":
                with HITS_LOCK:
                    body = ",".join(str(x) for x in RANGES.get(query.get("id", ""), [])).encode()
                self.send_head("200 OK", len(body), "text/plain")
                sock.sendall(body)
            elif path == "/proxied":
                with HITS_LOCK:
                    body = "".join(t + "\n" for t in PROXIED).encode()
                self.send_head("200 OK", len(body), "text/plain")
                sock.sendall(body)
            elif path == "/hits":
                with HITS_LOCK:
                    body = str(HITS.get(query.get("id", ""), 0)).encode()
                self.send_head("200 OK", len(body), "text/plain")
                sock.sendall(body)
            elif path == "/many-headers":
                n = int(query.get("n", "1000"))
                self.send_head("200 OK", len(IMAGE), extra="".join(f"X-H-{i}: {i}\r\n" for i in range(n)))
                sock.sendall(IMAGE)
            elif path == "/echo-headers":
                body = data.split(b"\r\n\r\n")[0] + b"\r\n"
                self.send_head("200 OK", len(body), "text/plain")
                sock.sendall(body)
            elif path == "/redirect":
                from urllib.parse import unquote
                self.send_head("302 Found", 0, extra=f"Location: {unquote(query.get('to', '/ok'))}\r\n")
            elif path == "/slow-drip":
                total, gap = int(query.get("total", "3000")), int(query.get("gap", "200"))
                pieces = max(1, total // gap)
                step = (len(IMAGE) + pieces - 1) // pieces
                self.send_head("200 OK", len(IMAGE))
                for i in range(0, len(IMAGE), step):
                    sock.sendall(IMAGE[i:i + step])
                    time.sleep(gap / 1000)
            elif path == "/last-modified":  # the image with the Last-Modified `value` (percent-decoded) as it is
                from urllib.parse import unquote
                self.send_head("200 OK", len(IMAGE), extra="Last-Modified: " + unquote(query.get("value", "")) + "\r\n")
                sock.sendall(IMAGE)
            elif path == "/bad-etag":
                self.send_head("200 OK", len(IMAGE), extra='ETag: "a\rb"\r\nX-Good: 1\r\n')
                sock.sendall(IMAGE)
            elif path == "/bad-status":
                sock.sendall(b"ICY 200 OK\r\nContent-Type: image/jpeg\r\n\r\n" + IMAGE)
            elif path == "/huge-header":
                self.send_head("200 OK", len(IMAGE), extra="X-Huge: " + "a" * (300 * 1024) + "\r\n")
                sock.sendall(IMAGE)
            elif path == "/changing":
                key = query.get("id", "")
                time.sleep(int(query.get("delay", "0")) / 1000)
                with HITS_LOCK:
                    HITS[key] = n = HITS.get(key, 0) + 1
                body = IMAGE if n % 2 else PROGRESSIVE
                self.send_head("200 OK", len(body), extra=f'ETag: "{key}-{n}"\r\nCache-Control: no-cache\r\n')
                sock.sendall(body)
            elif path == "/etag":
                # a static image with an ETag, after `delay` ms: answers
                # If-None-Match with 304; counts hits (and 304s under id:304)
                key, tag = query.get("id", ""), '"' + query.get("etag", "v1") + '"'
                time.sleep(int(query.get("delay", "0")) / 1000)
                lines = {k.strip().lower(): v.strip() for k, v in
                         (l.split(":", 1) for l in headers.split("\r\n")[1:] if ":" in l)}
                with HITS_LOCK:
                    HITS[key] = HITS.get(key, 0) + 1
                    if lines.get("if-none-match") == tag:
                        HITS[key + ":304"] = HITS.get(key + ":304", 0) + 1
                if lines.get("if-none-match") == tag:
                    self.send_head("304 Not Modified", None, extra=f"ETag: {tag}\r\n")
                else:
                    self.send_head("200 OK", len(IMAGE), extra=f"ETag: {tag}\r\nCache-Control: no-cache\r\n")
                    sock.sendall(IMAGE)
            elif path == "/slow-headers":
                time.sleep(60)
            else:
                self.send_head("404 Not Found", 0, "text/plain")
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512  # the default backlog (5) drops SYNs when tests run in parallel


Server(("127.0.0.1", args.port), Handler).serve_forever()
