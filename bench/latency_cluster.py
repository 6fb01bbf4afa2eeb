#!/usr/bin/env python3
"""Creates controller_latency.sh's filled cluster through the API server, concurrently.

NODES kwok nodes of pool `filled` (4 CPU each), then PODS pods bound to them (spec.nodeName,
PER_NODE to a node, MILLI m CPU each), POSTed by WORKERS threads, each over its own persistent
HTTPS connection with the kubeconfig's client certificate (or bearer token). Waits until kwok
has marked every node Ready before creating the pods, and until it has started every pod before
returning. A failed POST is retried a few times; if it still fails the script exits non-zero
naming the object and the API server's answer, so the benchmark never runs on half a cluster.

Usage: latency_cluster.py [--no-wait-started] CREDENTIALS_DIR NODES PODS PER_NODE MILLI [WORKERS=24]
--no-wait-started returns once the pods exist, while kwok may still be starting them.
CREDENTIALS_DIR holds `server` and `ca.crt`, and either `client.crt` + `client.key` or `token`.
Progress and load rates go to stderr.
"""
import http.client
import json
import os
import queue
import ssl
import sys
import threading
import time
import urllib.parse

RETRIES = 5  # attempts per object beyond the first
RETRYABLE = {429, 500, 502, 503, 504}
# Seconds for kwok to mark every node Ready / start every pod (READY_TIMEOUT in the environment;
# kwok starts 40-100 pods/s on a busy 2-core machine, so 100,000 pods need about 2,400).
READY_TIMEOUT = int(os.environ.get("READY_TIMEOUT", "600"))


class ApiError(Exception):
    pass


class Api:
    """One persistent HTTPS connection to the API server (one per worker thread)."""

    def __init__(self, creds):
        self.host = urllib.parse.urlsplit(creds["server"])
        self.ctx = ssl.create_default_context(cafile=creds["ca"])
        if creds.get("cert"):
            self.ctx.load_cert_chain(creds["cert"], creds["key"])
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if creds.get("token"):
            self.headers["Authorization"] = "Bearer " + creds["token"]
        self.conn = None

    def request(self, method, path, body=None):
        """Returns (status, body bytes); a dropped connection is reopened once."""
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(
                    self.host.hostname, self.host.port or 443, context=self.ctx, timeout=60)
            try:
                self.conn.request(method, path, body=body, headers=self.headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise

    def create(self, path, obj):
        """POSTs obj, retrying transient failures; raises ApiError naming obj when it gives up."""
        body = json.dumps(obj, separators=(",", ":")).encode()
        what = f'{obj["kind"]} {obj["metadata"]["name"]}'
        last = ""
        for attempt in range(RETRIES + 1):
            if attempt:
                time.sleep(0.2 * 2**attempt)
            try:
                status, answer = self.request("POST", path, body)
            except (OSError, http.client.HTTPException) as e:
                last = f"no answer ({e})"
                continue
            if status == 201:
                return
            # A retry after a lost answer may find the object the first attempt created.
            if status == 409 and attempt > 0:
                return
            last = f"HTTP {status}: {answer[:500].decode(errors='replace')}"
            if status not in RETRYABLE:
                break
        raise ApiError(f"creating {what} (POST {path}) failed after {attempt + 1} attempt(s): "
                       f"{last}")


def node(name, pods_capacity):
    res = {"cpu": "4", "memory": "64Gi", "pods": str(pods_capacity)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
                     "labels": {"tidepool.dev/pool": "filled", "bench": "filled",
                                "kubernetes.io/hostname": name},
                     "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"providerID": f"kwok://{name}"},
        "status": {"capacity": res, "allocatable": dict(res)}}


def pod(name, node_name, milli):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "filler"}},
        "spec": {"nodeName": node_name,
                 "containers": [{"name": "c", "image": "busybox",
                                 "resources": {"requests": {"cpu": f"{milli}m",
                                                            "memory": "1Gi"}}}]}}


def create_all(creds, workers, path, objects):
    """POSTs every object with `workers` threads; returns seconds taken. Stops at the first
    object that cannot be created and raises its ApiError."""
    todo = queue.Queue()
    for o in objects:
        todo.put(o)
    errors = []

    def work():
        api = Api(creds)
        while not errors:
            try:
                o = todo.get_nowait()
            except queue.Empty:
                return
            try:
                api.create(path, o)
            except ApiError as e:
                errors.append(e)

    start = time.monotonic()
    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.monotonic() - start


def list_all(api, path, selectors):
    """Every item of a LIST, in pages of 500; the first page from the API server's cache
    (resourceVersion=0), the next ones, if the cache pages at all, by their continue token."""
    items, params = [], {**selectors, "limit": "500", "resourceVersion": "0"}
    while True:
        page = f"{path}?{urllib.parse.urlencode(params)}"
        status, body = api.request("GET", page)
        if status != 200:
            raise ApiError(f"GET {page}: HTTP {status}: {body[:500].decode(errors='replace')}")
        doc = json.loads(body)
        items += doc["items"]
        cont = doc["metadata"].get("continue", "")
        if not cont:
            return items
        params = {**selectors, "limit": "500", "continue": cont}


def wait_for(what, count_left):
    """Polls count_left() until it is 0 (every 2 s, every 10 s while over 10,000 are left, as
    each poll lists them all); raises ApiError after READY_TIMEOUT."""
    start = time.monotonic()
    while True:
        left = count_left()
        if left == 0:
            return time.monotonic() - start
        if time.monotonic() - start > READY_TIMEOUT:
            raise ApiError(f"{what}: {left} left after {READY_TIMEOUT} s; is kwok running? "
                           "(READY_TIMEOUT sets the limit)")
        time.sleep(2 if left <= 10000 else 10)


def unready_nodes(api):
    def ready(n):
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in n.get("status", {}).get("conditions", []))
    nodes = list_all(api, "/api/v1/nodes", {"labelSelector": "bench=filled"})
    return sum(not ready(n) for n in nodes)


def pending_pods(api):
    return len(list_all(api, "/api/v1/namespaces/default/pods",
                        {"labelSelector": "app=filler", "fieldSelector": "status.phase=Pending"}))


def credentials(d):
    def read(name):
        p = os.path.join(d, name)
        return open(p).read().strip() if os.path.exists(p) else None
    creds = {"server": read("server"), "ca": os.path.join(d, "ca.crt"), "token": read("token")}
    if os.path.exists(os.path.join(d, "client.crt")):
        creds["cert"], creds["key"] = os.path.join(d, "client.crt"), os.path.join(d, "client.key")
    if not creds["server"] or not (creds["token"] or creds.get("cert")):
        sys.exit(f"{d}: expected `server` and either `client.crt`+`client.key` or `token`")
    return creds


def main():
    args = sys.argv[1:]
    wait_started = "--no-wait-started" not in args
    args = [a for a in args if a != "--no-wait-started"]
    if len(args) not in (5, 6):
        sys.exit(__doc__)
    creds = credentials(args[0])
    nodes, pods, per_node, milli = map(int, args[1:5])
    workers = int(args[5]) if len(args) == 6 else 24
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    api = Api(creds)
    try:
        names = [f"filled-{n:05d}" for n in range(nodes)]
        took = create_all(creds, workers, "/api/v1/nodes",
                          (node(name, per_node + 10) for name in names))
        log(f"nodes: {nodes} created in {took:.1f} s ({nodes / took:.0f}/s, {workers} workers)")
        took = wait_for("nodes not Ready", lambda: unready_nodes(api))
        log(f"nodes: all Ready {took:.1f} s later")
        took = create_all(creds, workers, "/api/v1/namespaces/default/pods",
                          (pod(f"filler-{p:06d}", names[p // per_node], milli)
                           for p in range(pods)))
        log(f"pods: {pods} created in {took:.1f} s ({pods / took:.0f}/s, {workers} workers)")
        if wait_started:
            took = wait_for("pods not started", lambda: pending_pods(api))
            log(f"pods: all Running {took:.1f} s later")
    except ApiError as e:
        sys.exit(f"latency_cluster.py: {e}")


if __name__ == "__main__":
    main()
