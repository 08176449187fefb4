"""What metrics and spans cost: Herald's onMessageCreated (release, as the image ships it) decoding and
planning the same protobuf event under wrk, with neither (HERALD_METRICS=off), metrics only (the
default), metrics and every trace exported over OTLP, and metrics and 10% of traces
(`parentbased_traceidratio`), alternated in one run; and exec → first answered event for each.

On: OTEL_EXPORTER_OTLP_ENDPOINT points at a collector in this script that takes every export (and
counts its spans), so every event's server span is recorded, encoded and sent (wrk sends no
`traceparent`: each event is a new, sampled trace, the most export work there can be).

    python3 Benchmarks/traces.py BIN_DIR [PAIRS] [SECONDS]
"""
import http.server
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from compare import FIXTURES, Event, Function, first_answer, free_port, wrk  # noqa: E402


class Collector(http.server.ThreadingHTTPServer):
    spans = 0
    requests = 0


class Receive(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        request = json.loads(body)
        self.server.requests += 1
        self.server.spans += sum(len(s["spans"]) for r in request["resourceSpans"] for s in r["scopeSpans"])
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def cpu_seconds(pid):
    """User and system CPU the process has used so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    bin_dir = sys.argv[1]
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    collector = Collector(("127.0.0.1", 0), Receive)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    documents = os.path.join(FIXTURES, "documents.json")
    function = Function("Herald", lambda port: [os.path.join(bin_dir, "onMessageCreated"), "serve", "--host", "127.0.0.1", "--port", str(port),
                                                "--documents", documents], {"LOG_FORMAT": "json"})
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_address[1]}"}
    settings = {"bare": {"HERALD_METRICS": "off"}, "off": {}, "on": endpoint,
                "10%": dict(endpoint, OTEL_TRACES_SAMPLER="parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG="0.1")}
    event = Event.fixture()

    rates = {name: [] for name in settings}
    cpu = {name: [] for name in settings}
    for _ in range(pairs):
        for name, extra in settings.items():
            _, process = first_answer(function, extra, event)
            port = int(process.args[process.args.index("--port") + 1])
            before = cpu_seconds(process.pid)
            load = wrk(port, event, seconds)
            time.sleep(1.5)  # the last export
            rates[name].append(load["rps"])
            cpu[name].append((cpu_seconds(process.pid) - before) / (load["rps"] * seconds) * 1e6)
            Function.stop(process)
    starts = {name: [] for name in settings}
    for _ in range(15):
        for name, extra in settings.items():
            elapsed, process = first_answer(function, extra, event)
            starts[name].append(elapsed * 1000)
            Function.stop(process)

    mean = {name: statistics.mean(values) for name, values in rates.items()}
    print(f"decode + plan, wrk 16 connections, {seconds} s × {pairs} each, alternated (events/s):")
    print("  (bare: HERALD_METRICS=off and no export; off: metrics on (the default), no export; on: metrics and every trace;"
          " 10%: metrics and one trace in ten)")
    for name in settings:
        change = "" if name == "bare" else f", {(mean[name] / mean['bare'] - 1) * 100:+.1f} % against bare"
        print(f"  export {name:4}: " + " · ".join(f"{r:,.0f}" for r in rates[name]) + f" (mean {mean[name]:,.0f}{change})")
    for name in settings:
        print(f"  the function's own CPU per event, export {name:4}: " + " · ".join(f"{c:.0f}" for c in cpu[name])
              + f" µs (mean {statistics.mean(cpu[name]):.0f})")
    print(f"  spans the collector received: {collector.spans:,} in {collector.requests:,} exports")
    print("exec → first answered event, 15 starts each, median (min):")
    for name in settings:
        print(f"  export {name:4}: {statistics.median(starts[name]):.1f} ms ({min(starts[name]):.1f} ms)")


if __name__ == "__main__":
    main()
