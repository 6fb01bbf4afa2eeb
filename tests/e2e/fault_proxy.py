#!/usr/bin/env python3
"""A fault-injecting HTTPS proxy between tidepool and the Kubernetes API server, for e2e tests.

It terminates TLS with a certificate the client trusts (the tests use testenv's serving
certificate, so tidepool keeps TLS verification on), drops the client's credentials and
forwards each request to the API server over TLS with a client certificate of its own. Every
upstream exchange uses "Connection: close", so one client connection carries one request and
the proxy only relays bytes after the request head.

Faults, switched at run time through a plain-HTTP control port (GET /set?k=v&..., GET /stats):
  p429=F      fraction of requests answered 429 Too Many Requests (Retry-After: 1)
  p500=F      fraction of requests answered 500 Internal Server Error
  pslow=F     fraction of requests delayed by `slow` seconds before they are forwarded
  slow=S      that delay (default 2)
  cut=S       watch streams are cut (both sockets closed) after a random 0.5..S seconds; 0: never
  down=1      the API server is "restarting": new connections are closed at once and every
              open stream is cut; down=0 brings it back
Faults apply only to requests whose path does not start with one of --spare prefixes (so a
test can keep, say, Lease renewals clean when it wants to). Python 3 standard library only.

Usage: fault_proxy.py --listen PORT --control PORT --upstream https://127.0.0.1:6443
         --cert serving.crt --key serving.key --client-cert c.crt --client-key c.key --ca ca.crt
"""

import argparse
import json
import random
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = {"p429": 0.0, "p500": 0.0, "pslow": 0.0, "slow": 2.0, "cut": 0.0, "down": 0.0}
STATS = {"requests": 0, "forwarded": 0, "injected_429": 0, "injected_500": 0, "slowed": 0,
         "watches_cut": 0, "refused_down": 0, "cut_by_down": 0, "bearer_seen": 0}
LOCK = threading.Lock()
OPEN = set()  # client sockets with a stream in flight, closed when "down" is switched on
RNG = random.Random(1)


def count(key, n=1):
    with LOCK:
        STATS[key] += n


def chance(key):
    with LOCK:
        return RNG.random() < FAULTS[key]


def read_head(sock):
    """Reads up to the end of the request head; returns (head bytes, rest) or (None, b'')."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
        if len(data) > 1 << 20:
            return None, b""
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest


def status_body(code, reason):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": "fault_proxy: injected " + reason, "reason": reason,
                       "code": code}).encode()


def reply(sock, code, text, reason, extra=""):
    body = status_body(code, reason)
    sock.sendall((f"HTTP/1.1 {code} {text}\r\nContent-Type: application/json\r\n{extra}"
                  f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)


class Proxy:
    def __init__(self, args):
        self.args = args
        up = urllib.parse.urlparse(args.upstream)
        self.up_host, self.up_port = up.hostname, up.port or 443
        self.client_ctx = ssl.create_default_context(cafile=args.ca)
        self.client_ctx.load_cert_chain(args.client_cert, args.client_key)
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.load_cert_chain(args.cert, args.key)
        self.server_ctx.set_alpn_protocols(["http/1.1"])

    def serve(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.args.listen))
        ls.listen(128)
        while True:
            conn, _ = ls.accept()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, raw):
        try:
            if FAULTS["down"]:
                count("refused_down")
                raw.close()
                return
            client = self.server_ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        upstream = None
        try:
            head, rest = read_head(client)
            if head is None:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = []
            for line in lines[1:]:
                name = line.split(":", 1)[0].strip().lower()
                if name == "authorization":
                    count("bearer_seen")
                    continue  # the proxy authenticates upstream with its own certificate
                if name in ("connection", "keep-alive", "proxy-connection"):
                    continue
                headers.append(line)
            count("requests")
            spared = any(target.startswith(p) for p in self.args.spare)
            if not spared:
                if chance("p429"):
                    count("injected_429")
                    reply(client, 429, "Too Many Requests", "TooManyRequests", "Retry-After: 1\r\n")
                    return
                if chance("p500"):
                    count("injected_500")
                    reply(client, 500, "Internal Server Error", "InternalError")
                    return
                if chance("pslow"):
                    count("slowed")
                    time.sleep(FAULTS["slow"])
            upstream = self.client_ctx.wrap_socket(
                socket.create_connection((self.up_host, self.up_port), timeout=30),
                server_hostname=self.up_host)
            upstream.settimeout(None)
            out = "\r\n".join([lines[0]] + headers + ["Connection: close", "", ""])
            upstream.sendall(out.encode("latin-1") + rest)
            count("forwarded")
            watch = "watch=true" in target or "watch=1" in target
            deadline = None
            if watch and not spared and FAULTS["cut"] > 0:
                deadline = time.monotonic() + RNG.uniform(0.5, FAULTS["cut"])
            with LOCK:
                OPEN.add(client)
            self.relay(client, upstream, deadline, method)
        except (OSError, ValueError, ssl.SSLError):
            pass
        finally:
            with LOCK:
                OPEN.discard(client)
            for s in (client, upstream):
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass

    def relay(self, client, upstream, deadline, method):
        """Copies the request body (if any) and the response until either side closes."""
        def body_pump():
            try:
                while True:
                    data = client.recv(65536)
                    if not data:
                        break
                    upstream.sendall(data)
            except OSError:
                pass
        if method in ("POST", "PUT", "PATCH"):
            threading.Thread(target=body_pump, daemon=True).start()
        upstream.settimeout(0.5)
        while True:
            if deadline is not None and time.monotonic() > deadline:
                count("watches_cut")
                return
            if FAULTS["down"]:
                count("cut_by_down")
                return
            try:
                data = upstream.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            if not data:
                return
            client.sendall(data)


class Control(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/set":
            with LOCK:
                for k, v in urllib.parse.parse_qsl(url.query):
                    if k not in FAULTS:
                        self.send_error(400, "unknown fault " + k)
                        return
                    FAULTS[k] = float(v)
                down = FAULTS["down"]
                victims = list(OPEN) if down else []
            for s in victims:  # the "restart" cuts every open stream at once
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        elif url.path != "/stats":
            self.send_error(404)
            return
        with LOCK:
            body = json.dumps({"faults": FAULTS, "stats": STATS}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--control", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-cert", required=True)
    ap.add_argument("--client-key", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--spare", action="append", default=[])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    RNG.seed(args.seed)
    proxy = Proxy(args)
    control = ThreadingHTTPServer(("127.0.0.1", args.control), Control)
    threading.Thread(target=control.serve_forever, daemon=True).start()
    print(f"fault_proxy: listening on 127.0.0.1:{args.listen}, control on {args.control}",
          file=sys.stderr, flush=True)
    proxy.serve()


if __name__ == "__main__":
    main()
