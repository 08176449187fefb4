"""Herald beside its peer (Benchmarks/peer: onMessageCreated in Python on Google's Functions Framework
with firebase-admin), measured by the same harness on the same machine in one run. Prints one
Markdown table, the machine and the date. Run it through Benchmarks/run.sh, which installs and builds
what it needs.

Usage: compare.py --herald-bin DIR --peer-venv DIR [--quick]
"""
import argparse
import base64
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "Tests", "Fixtures", "default")
PROJECT = "bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree(pid):
    """pid and all its descendants, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    return tree


def rss_mb(pid, field="VmRSS"):
    """Resident memory of a process and its children (gunicorn's arbiter and worker), in MB. `RssAnon`
    counts only private memory (heap, stacks), not the executable's and libraries' file pages."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                total += int(re.search(rf"{field}:\s+(\d+) kB", f.read()).group(1))
        except (OSError, AttributeError):
            pass
    return total / 1024


class Event:
    """A binary-mode CloudEvent whose data is a protobuf DocumentEventData."""

    def __init__(self, headers, body):
        self.headers, self.body = headers, body

    @staticmethod
    def fixture():
        f = json.load(open(os.path.join(FIXTURES, "message-created.binary-protobuf.json")))
        return Event(f["headers"], base64.b64decode(f["body"]))

    def post(self, port, connection=None, timeout=30):
        c = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("POST", "/", body=self.body, headers=self.headers)
        r = c.getresponse()
        r.read()
        if connection is None:
            c.close()
        return r.status


class Function:
    """One implementation of onMessageCreated: how to start it serving on a port."""

    def __init__(self, name, command, environment):
        self.name, self.command, self.environment = name, command, environment

    def start(self, port, extra):
        env = {**os.environ, "PORT": str(port), **self.environment, **extra}
        return subprocess.Popen(self.command(port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    @staticmethod
    def stop(process):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def first_answer(function, extra, event):
    """Seconds from exec to the first 2xx answer to `event`, and the running process."""
    port = free_port()
    start = time.perf_counter()
    process = function.start(port, extra)
    while True:
        try:
            status = event.post(port, timeout=60)
            if 200 <= status < 300:
                return time.perf_counter() - start, process
            raise RuntimeError(f"{function.name} answered {status}")
        except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected):
            if process.poll() is not None:
                raise RuntimeError(f"{function.name} exited with {process.returncode}")
            time.sleep(0.001)


def first_health(command, env):
    """Seconds from exec to the first 200 to GET /healthz (any answer to the C server's request), and the process."""
    port = free_port()
    start = time.perf_counter()
    process = subprocess.Popen(command(port), env={**os.environ, **env, "PORT": str(port)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                c.sendall(request)
                if c.recv(64).startswith(b"HTTP/1.1 200"):
                    return time.perf_counter() - start, process
        except (ConnectionRefusedError, ConnectionResetError):
            if process.poll() is not None:
                raise RuntimeError(f"{command(port)[0]} exited with {process.returncode}")
            time.sleep(0.0002)


def floor_rss(command, requests):
    """VmRSS (MB) of a server that only answers /healthz, after `requests` of them on keep-alive connections."""
    port = free_port()
    process = subprocess.Popen(command, env={**os.environ, "PORT": str(port)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        for _ in range(5000):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.001)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for _ in range(requests):
            connection.request("GET", "/healthz")
            connection.getresponse().read()
        connection.close()
        return rss_mb(process.pid)
    finally:
        Function.stop(process)


def minimal_c_server():
    """Builds Benchmarks/minimal/healthz.c with the system's C compiler; returns its path."""
    out = os.path.join(tempfile.gettempdir(), "herald-bench-healthz")
    subprocess.run(["cc", "-O2", "-o", out, os.path.join(ROOT, "Benchmarks", "minimal", "healthz.c")], check=True)
    return out


def minimal_nio_server():
    """Builds Benchmarks/minimal/nio (SwiftNIO answering /healthz, built as the functions are); returns its path."""
    scratch = os.path.join(ROOT, ".build-nio-healthz")
    subprocess.run(["swift", "build", "-c", "release", "--static-swift-stdlib", "--package-path", os.path.join(ROOT, "Benchmarks", "minimal", "nio"),
                    "--scratch-path", scratch], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(scratch, "release", "NIOHealthz")


def send_many(port, event, count, concurrency=8):
    """`count` deliveries of `event`, `concurrency` keep-alive connections at once; all must be 2xx."""
    def worker(n):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for _ in range(n):
            status = event.post(port, connection=c)
            if not 200 <= status < 300:
                raise RuntimeError(f"answered {status}")
        c.close()
    with ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker, count // concurrency + (1 if i < count % concurrency else 0)) for i in range(concurrency)]:
            f.result()


def wrk(port, event, seconds, connections=16):
    """Requests/s and latency percentiles from wrk posting `event` for `seconds`."""
    escaped = "".join(f"\\{b:03d}" for b in event.body)
    headers = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in event.headers.items())
    script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    script.write(f'wrk.method = "POST"\nwrk.body = "{escaped}"\n{headers}\n'
                 'done = function(summary, latency, requests)\n'
                 '  io.write(string.format("P50 %d\\nP99 %d\\nERRORS %d\\n", latency:percentile(50), latency:percentile(99),'
                 ' summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))\n'
                 'end\n')
    script.close()
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", script.name, f"http://127.0.0.1:{port}/"],
                         capture_output=True, text=True, check=True).stdout
    os.unlink(script.name)
    value = lambda key: float(re.search(rf"{key}\s+([\d.]+)", out).group(1))
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": value("P50") / 1e6,
            "p99": value("P99") / 1e6, "errors": int(value("ERRORS"))}


class LocalCloud:
    """`herald dev --no-functions`: Firestore REST, the FCM sink and trigger delivery, nothing else."""

    def __init__(self, herald, extra=()):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.process = subprocess.Popen([herald, "dev", "--ephemeral", "--port", "0", "--no-functions", "--project", PROJECT, *extra],
                                        stdout=self.log, stderr=self.log, start_new_session=True)
        for _ in range(300):
            text = open(self.log.name).read()
            m = re.search(r"Herald local cloud on (http://[0-9.:]+)", text)
            if m and "Stop: Ctrl-C" in text:
                self.base = m.group(1)
                self.host = self.base.removeprefix("http://")
                return
            time.sleep(0.1)
        raise RuntimeError("herald dev did not start: " + open(self.log.name).read()[-2000:])

    def call(self, method, path, body=None):
        request = urllib.request.Request(self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            return json.loads(r.read() or b"{}")

    def commit(self, writes):
        return self.call("POST", f"/v1/projects/{PROJECT}/databases/(default)/documents:commit", {"writes": writes})

    def document(self, path, fields):
        return {"update": {"name": f"projects/{PROJECT}/databases/(default)/documents/{path}", "fields": fields}}

    def trigger_on_messages(self, port):
        """Once the function serves on `port`, deliver new messages to it as onMessageCreated (protobuf)."""
        for _ in range(100):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=5).connect()
                break
            except ConnectionRefusedError:
                time.sleep(0.1)
        self.call("PUT", "/herald/triggers", {"name": "onMessageCreated", "pattern": "conversations/{conversationId}/messages/{messageId}",
                                              "kind": "created", "url": f"http://127.0.0.1:{port}/", "contentType": "protobuf"})

    def stop(self):
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait()
        os.unlink(self.log.name)


def string(s):
    return {"stringValue": s}


def end_to_end(function, herald, conversations=50, messages=500, writers=4):
    """Messages written to the local cloud, delivered to `function` by its trigger: events/s, p50/p99 from
    the write to the last push recorded, and the function's Firestore requests per event."""
    cloud = LocalCloud(herald)
    port = free_port()
    process = function.start(port, {"GOOGLE_CLOUD_PROJECT": PROJECT, "GCE_METADATA_HOST": cloud.host, "FIRESTORE_ENDPOINT": cloud.base,
                                    "FCM_ENDPOINT": cloud.base, "PEER_FIRESTORE": cloud.host, "PEER_FCM_ENDPOINT": cloud.base})
    try:
        people = [f"u{i}" for i in range(conversations * 2)]
        seed = [cloud.document(f"users/{u}", {"displayName": string(u.upper()), "fcmTokens": {"arrayValue": {"values": [
            string(f"tok-{u}-phone"), string(f"tok-{u}-tablet")]}}}) for u in people]
        groups = [[people[(2 * c + k) % len(people)] for k in range(3)] for c in range(conversations)]
        seed += [cloud.document(f"conversations/c{c}", {"members": {"arrayValue": {"values": [string(m) for m in g]}},
                                                       "isGroup": {"booleanValue": True}, "name": string(f"Group {c}")})
                 for c, g in enumerate(groups)]
        for i in range(0, len(seed), 400):
            cloud.commit(seed[i:i + 400])
        cloud.trigger_on_messages(port)
        before = cloud.call("GET", "/herald/requests").get("firestore", 0)
        written = {}

        def write(i):
            c = i % conversations
            sender = groups[c][i % 3]
            now = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
            written[f"m{i}"] = time.time()
            cloud.commit([cloud.document(f"conversations/c{c}/messages/m{i}", {
                "senderId": string(sender), "text": string(f"Message {i}"), "type": string("text"),
                "timestamp": {"timestampValue": now}, "status": string("sending")})])

        start = time.time()
        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(write, range(messages)))
        expected = messages * 4  # two recipients, two devices each
        while True:
            pending = cloud.call("GET", "/herald/deliveries?state=pending")["deliveries"]
            pushes = cloud.call("GET", "/herald/fcm/messages")["messages"]
            if not pending and len(pushes) >= expected:
                break
            if time.time() - start > 600:
                raise RuntimeError(f"{function.name}: {len(pushes)} of {expected} pushes after 600 s")
            time.sleep(0.2)
        dead = cloud.call("GET", "/herald/deliveries?state=dead")["deliveries"]
        requests = cloud.call("GET", "/herald/requests").get("firestore", 0) - before - messages
        # One message at a time: the latency of the path itself, without the burst's queue.
        paced = []
        seen = max(push["id"] for push in pushes)
        for i in range(messages, messages + 50):
            write(i)
            while True:
                mine = [r for r in cloud.call("GET", f"/herald/fcm/messages?after={seen}")["messages"]
                        if r["message"].get("data", {}).get("messageId") == f"m{i}"]
                if len(mine) >= 4:
                    paced.append(max(r["receivedAt"] for r in mine) - written[f"m{i}"])
                    seen = max(r["id"] for r in mine)
                    break
                if time.time() - written[f"m{i}"] > 60:
                    raise RuntimeError(f"{function.name}: message m{i} not pushed within 60 s")
                time.sleep(0.002)
        paced.sort()
        last = {}
        for push in pushes:
            # A badge push has no message id (an alert carries it): it ends no message's latency.
            m = push["message"].get("data", {}).get("messageId")
            if m is not None:
                last[m] = max(last.get(m, 0), push["receivedAt"])
        latencies = sorted(last[m] - written[m] for m in written if m in last and int(m[1:]) < messages)
        elapsed = max(last.values()) - start
        rss = rss_mb(process.pid)
        return {"eps": messages / elapsed, "p50": latencies[len(latencies) // 2], "p99": latencies[len(latencies) * 99 // 100],
                "requests": requests / messages, "pushes": len(pushes), "expected": expected, "dead": len(dead), "rss": rss,
                "paced50": paced[len(paced) // 2], "paced99": paced[-1]}
    finally:
        Function.stop(process)
        cloud.stop()


def fan_out(herald_bench, peer_python, herald, tokens=1000):
    """Sends/s and p99 of one fan-out to `tokens` devices against herald dev's FCM sink."""
    cloud = LocalCloud(herald)
    try:
        out = subprocess.run([herald_bench, "fcm", "--tokens", str(tokens), "--rounds", "4", "--endpoint", cloud.base],
                             capture_output=True, text=True, check=True).stdout
        grab = lambda key: float(re.search(rf"{key}\s+([\d.]+)", out).group(1))
        herald_figures = {"sps": grab("sends/s"), "p99": grab("p99") / 1000}
        out = subprocess.run([peer_python, os.path.join(ROOT, "Benchmarks", "peer", "fanout.py"), cloud.base, PROJECT, str(tokens), "4"],
                             capture_output=True, text=True, check=True).stdout
        peer_figures = json.loads(out.strip().splitlines()[-1])
        return herald_figures, peer_figures
    finally:
        cloud.stop()


def du_mb(paths, exclude=()):
    excludes = [f"--exclude={e}" for e in exclude]
    return int(subprocess.run(["du", "-scb", *excludes, *paths], capture_output=True, text=True).stdout.split()[-2]) / 1e6


def image_size(name):
    """The size of one of Herald's images (Infra/build-images.sh) if it was built here: as buildah reports it
    (unpacked), and as a registry stores and Cloud Run pulls it (its OCI archive, layers gzip-compressed)."""
    try:
        out = subprocess.run(["buildah", "--storage-driver", "vfs", "images", "--format", "{{.Size}}", f"localhost/{name}:latest"],
                             capture_output=True, text=True)
        if out.returncode != 0 or not out.stdout.strip():
            return None
        archive = os.path.join(tempfile.mkdtemp(), "image.tar")
        pushed = subprocess.run(["buildah", "--storage-driver", "vfs", "push", "--quiet", f"localhost/{name}:latest", f"oci-archive:{archive}"],
                                capture_output=True, text=True)
        compressed = f", {os.path.getsize(archive) / 1e6:.1f} MB compressed" if pushed.returncode == 0 else ""
        shutil.rmtree(os.path.dirname(archive), ignore_errors=True)
        return out.stdout.strip() + compressed
    except FileNotFoundError:
        return None


def catalog_functions():
    """The functions as `herald infra` wrote them from FunctionCatalog.all (Infra/functions.sh's FUNCTIONS=(...))."""
    path = os.path.join(ROOT, "Infra", "functions.sh")
    with open(path) as file:
        match = re.search(r"^FUNCTIONS=\(([^)]*)\)$", file.read(), re.MULTILINE)
    if not match:
        raise SystemExit(f"{path} has no FUNCTIONS=(...) line: run `swift run herald infra`")
    return match.group(1).split()


FUNCTIONS = catalog_functions()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--herald-bin", required=True)
    parser.add_argument("--peer-venv", required=True)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for trying the harness out")
    args = parser.parse_args()
    herald = os.path.join(args.herald_bin, "herald")
    documents = os.path.join(FIXTURES, "documents.json")
    herald_fn = Function("Herald", lambda port: [os.path.join(args.herald_bin, "onMessageCreated"), "serve", "--host", "127.0.0.1", "--port", str(port)],
                         {"LOG_FORMAT": "json"})
    peer_fn = Function("Peer", lambda port: [os.path.join(args.peer_venv, "bin", "functions-framework"), "--target", "on_message_created",
                                            "--signature-type", "cloudevent", "--source", os.path.join(ROOT, "Benchmarks", "peer", "main.py"),
                                            "--port", str(port)], {"GOOGLE_CLOUD_PROJECT": "herald-demo"})
    # Offline: each reads the fixture's documents snapshot and builds its writes and pushes, but sends nothing.
    herald_offline = Function("Herald", lambda port: herald_fn.command(port) + ["--documents", documents], herald_fn.environment)
    peer_offline = Function("Peer", peer_fn.command, dict(peer_fn.environment, PEER_DOCUMENTS=documents))
    event = Event.fixture()
    starts = 3 if args.quick else 11
    rows = {}
    # exec → GET /healthz answered: Herald's function beside two floors, a C server and a SwiftNIO server that only answer.
    c_server = minimal_c_server()
    nio_server = minimal_nio_server()
    health = {}
    for name, command, env in (("Herald", herald_offline.command, herald_offline.environment), ("C", lambda port: [c_server], {}),
                               ("NIO", lambda port: [nio_server], {})):
        times = []
        for _ in range(starts):
            seconds, process = first_health(command, env)
            times.append(seconds)
            Function.stop(process)
        health[name] = statistics.median(times)
        print(f"{name}: exec → /healthz {health[name] * 1000:.2f} ms", file=sys.stderr)
    # The SwiftNIO floor's memory after as many requests as Herald's RSS row, and its size.
    nio_rss = floor_rss([nio_server], 1_000 if args.quick else 10_000)
    stripped = tempfile.NamedTemporaryFile(delete=False).name
    subprocess.run(["strip", "-o", stripped, nio_server], check=True)
    nio_size = du_mb([stripped])
    os.unlink(stripped)
    for fn in (herald_offline, peer_offline):
        cold = []
        for _ in range(starts):
            seconds, process = first_answer(fn, {}, event)
            cold.append(seconds)
            Function.stop(process)
        seconds, process = first_answer(fn, {}, event)
        port = int(process.args[process.args.index("--port") + 1])
        rss_1 = rss_mb(process.pid)
        send_many(port, event, 999 if args.quick else 9_999)
        rss_10k = rss_mb(process.pid)
        anon_10k = rss_mb(process.pid, "RssAnon")
        load = wrk(port, event, 5 if args.quick else 20)
        rss_load = rss_mb(process.pid)
        Function.stop(process)
        rows[fn.name] = {"cold": statistics.median(cold), "rss1": rss_1, "rss10k": rss_10k, "anon10k": anon_10k, "rssLoad": rss_load, "wrk": load}
        print(f"{fn.name}: offline figures {json.dumps(rows[fn.name])}", file=sys.stderr)
    for fn in (herald_fn, peer_fn):
        rows[fn.name]["e2e"] = end_to_end(fn, herald, messages=200 if args.quick else 500)
        print(f"{fn.name}: end to end {json.dumps(rows[fn.name]['e2e'])}", file=sys.stderr)
    herald_fan, peer_fan = fan_out(os.path.join(args.herald_bin, "herald-bench"), os.path.join(args.peer_venv, "bin", "python"), herald)
    rows["Herald"]["fan"], rows["Peer"]["fan"] = herald_fan, peer_fan
    executables, images = {}, {}
    for name in FUNCTIONS:
        path = os.path.join(args.herald_bin, name)
        if not os.path.exists(path):
            continue
        stripped = tempfile.NamedTemporaryFile(delete=False).name
        subprocess.run(["strip", "-o", stripped, path], check=True)
        executables[name] = du_mb([stripped])
        os.unlink(stripped)
        images[name] = image_size("herald-" + name.lower())
    binary = executables["onMessageCreated"]
    image = images.get("onMessageCreated")
    rows["Herald"]["size"] = (f"onMessageCreated's image {image or 'not built here'}; its executable, stripped: {binary:.1f} MB "
                              f"(the SwiftNIO server's: {nio_size:.1f} MB) "
                              f"(the others: " + ", ".join(f"{n} {executables[n]:.1f} MB" for n in executables if n != "onMessageCreated") + ")")
    site = subprocess.run([os.path.join(args.peer_venv, "bin", "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True).stdout.strip()
    stdlib, libdir = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib']); print(sysconfig.get_config_var('LIBDIR'))"],
                                    capture_output=True, text=True).stdout.split()
    runtime = [stdlib, os.path.realpath(sys.executable)] + [os.path.join(libdir, f) for f in os.listdir(libdir) if f.startswith("libpython")]
    rows["Peer"]["size"] = (f"no image (no Python base image offline): its packages {du_mb([site]):.0f} MB"
                            f" + Python {platform.python_version()} {du_mb(runtime, exclude=['site-packages', 'test']):.0f} MB")

    h, p = rows["Herald"], rows["Peer"]
    ms = lambda s: f"{s * 1000:.1f} ms"
    ratio = lambda a, b: f"{a / b:.1f}×"
    table = [
        ("exec → GET /healthz answered (median of %d); servers that only answer: C %s, SwiftNIO %s" % (starts, ms(health["C"]), ms(health["NIO"])),
         ms(health["Herald"]), "", ratio(health["Herald"], health["C"]) + " the C server's, " + ratio(health["Herald"], health["NIO"]) + " SwiftNIO's"),
        ("cold start, exec → first 2xx to a protobuf event (median of %d)" % starts, ms(h["cold"]), ms(p["cold"]), ratio(p["cold"], h["cold"]) + " faster"),
        ("RSS after 1 event", f"{h['rss1']:.1f} MB", f"{p['rss1']:.1f} MB", ratio(p["rss1"], h["rss1"]) + " less"),
        ("RSS after %s events (the SwiftNIO server after as many /healthz: %.1f MB)" % ("1,000" if args.quick else "10,000", nio_rss),
         f"{h['rss10k']:.1f} MB", f"{p['rss10k']:.1f} MB", ratio(p["rss10k"], h["rss10k"]) + " less"),
        ("… of which private (RssAnon: heap, stacks; the rest is code pages)", f"{h['anon10k']:.1f} MB", f"{p['anon10k']:.1f} MB", ratio(p["anon10k"], h["anon10k"]) + " less"),
        ("RSS after the wrk run", f"{h['rssLoad']:.1f} MB", f"{p['rssLoad']:.1f} MB", ratio(p["rssLoad"], h["rssLoad"]) + " less"),
        ("decode + plan, wrk 16 connections: events/s", f"{h['wrk']['rps']:,.0f}", f"{p['wrk']['rps']:,.0f}", ratio(h["wrk"]["rps"], p["wrk"]["rps"]) + " more"),
        ("decode + plan: p50 / p99", f"{ms(h['wrk']['p50'])} / {ms(h['wrk']['p99'])}", f"{ms(p['wrk']['p50'])} / {ms(p['wrk']['p99'])}", ""),
        ("decode + plan: errors", str(h["wrk"]["errors"]), str(p["wrk"]["errors"]), ""),
        ("end to end on herald dev: message events/s", f"{h['e2e']['eps']:.0f}", f"{p['e2e']['eps']:.0f}", ratio(h["e2e"]["eps"], p["e2e"]["eps"]) + " more"),
        ("end to end, one message at a time (50): write → last push, p50 / max", f"{ms(h['e2e']['paced50'])} / {ms(h['e2e']['paced99'])}",
         f"{ms(p['e2e']['paced50'])} / {ms(p['e2e']['paced99'])}", ratio(p["e2e"]["paced50"], h["e2e"]["paced50"]) + " faster"),
        ("end to end, a burst of %d messages from 4 writers: write → last push, p50 / p99" % (200 if args.quick else 500), f"{ms(h['e2e']['p50'])} / {ms(h['e2e']['p99'])}", f"{ms(p['e2e']['p50'])} / {ms(p['e2e']['p99'])}", ""),
        ("end to end: Firestore requests per event", f"{h['e2e']['requests']:.2f}", f"{p['e2e']['requests']:.2f}", ""),
        ("end to end: pushes recorded / expected, dead letters", f"{h['e2e']['pushes']} / {h['e2e']['expected']}, {h['e2e']['dead']}",
         f"{p['e2e']['pushes']} / {p['e2e']['expected']}, {p['e2e']['dead']}", ""),
        ("end to end: RSS after the run", f"{h['e2e']['rss']:.1f} MB", f"{p['e2e']['rss']:.1f} MB", ratio(p["e2e"]["rss"], h["e2e"]["rss"]) + " less"),
        ("FCM fan-out to 1,000 tokens (herald dev's sink): sends/s", f"{h['fan']['sps']:,.0f}", f"{p['fan']['sps']:,.0f}", ratio(h["fan"]["sps"], p["fan"]["sps"]) + " more"),
        ("FCM fan-out: p99 per send", ms(h["fan"]["p99"]), ms(p["fan"]["p99"]), ""),
        ("size", h["size"], p["size"], ""),
    ]
    cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read())
    print(f"Machine: {os.cpu_count()} cores ({cpu.group(1) if cpu else platform.machine()}), "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, {platform.system()} {platform.release()}; "
          f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
    print()
    print("| measure | Herald | Python peer | Herald vs peer |")
    print("| --- | --- | --- | --- |")
    for row in table:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
