"""Two builds of one function executable, measured alternately in one run: the way to compare code
on a machine whose speed varies from hour to hour (BENCHMARKS.md). For each binary: exec → GET
/healthz (beside the C floor), exec → first 2xx to the protobuf event, RSS after 10,000 events and
decode + plan under wrk, all offline over the fixture's documents.

Usage: side_by_side.py BEFORE AFTER [ROUNDS]   (paths of two onMessageCreated executables)
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import FIXTURES, Event, Function, first_answer, first_health, minimal_c_server, rss_mb, send_many, wrk  # noqa: E402


def offline(path):
    documents = os.path.join(FIXTURES, "documents.json")
    return Function(os.path.basename(os.path.dirname(path)) or path,
                    lambda port: [path, "serve", "--host", "127.0.0.1", "--port", str(port), "--documents", documents],
                    {"LOG_FORMAT": "json"})


def main():
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    event = Event.fixture()
    c_server = minimal_c_server()
    figures = {name: {"health": [], "cold": [], "rss": [], "anon": [], "rps": []} for name in ("before", "after", "C")}
    for _ in range(rounds):
        for name, path in (("before", before), ("after", after)):
            function = offline(path)
            for _ in range(5):
                seconds, process = first_health(function.command, function.environment)
                figures[name]["health"].append(seconds)
                Function.stop(process)
                seconds, process = first_answer(function, {}, event)
                figures[name]["cold"].append(seconds)
                Function.stop(process)
            seconds, process = first_answer(function, {}, event)
            port = int(process.args[process.args.index("--port") + 1])
            send_many(port, event, 9_999)
            figures[name]["rss"].append(rss_mb(process.pid))
            figures[name]["anon"].append(rss_mb(process.pid, "RssAnon"))
            figures[name]["rps"].append(wrk(port, event, 10)["rps"])
            Function.stop(process)
        for _ in range(5):
            seconds, process = first_health(lambda port: [c_server], {})
            figures["C"]["health"].append(seconds)
            Function.stop(process)
    ms = lambda values: f"{statistics.median(values) * 1000:.2f} ms (min {min(values) * 1000:.2f})"
    print(f"| figure | before ({before}) | after ({after}) |")
    print("| --- | --- | --- |")
    print(f"| exec → /healthz, median (C server: {ms(figures['C']['health'])}) | {ms(figures['before']['health'])} | {ms(figures['after']['health'])} |")
    print(f"| exec → first 2xx to a protobuf event, median | {ms(figures['before']['cold'])} | {ms(figures['after']['cold'])} |")
    for key, label in (("rss", "RSS after 10,000 events"), ("anon", "… of which private (RssAnon)")):
        print(f"| {label} | {statistics.median(figures['before'][key]):.1f} MB | {statistics.median(figures['after'][key]):.1f} MB |")
    rps = lambda name: " · ".join(f"{v:,.0f}" for v in figures[name]["rps"]) + f" (mean {statistics.mean(figures[name]['rps']):,.0f})"
    print(f"| decode + plan, wrk 16 connections, 10 s each: events/s | {rps('before')} | {rps('after')} |")


if __name__ == "__main__":
    main()
