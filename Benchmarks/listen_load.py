#!/usr/bin/env python3
"""Real-time listeners under load, `herald dev` beside Google's Firestore emulator, in one run.

Usage: Benchmarks/listen_load.py HERALD_BINARY [SECONDS] [grpc|webchannel]
  (run with a Python that has google-cloud-firestore: .venv/bin/python, from Tests/Python/requirements.txt)

For each backend: 100 query listeners over 200 documents, two per listener — google-cloud-firestore's
`on_snapshot` on its default gRPC transport, or (webchannel) 100 WebChannel sessions read on streaming
back channels as the web SDK reads them (Tests/Python/webchannel_load.py); 8 writers commit batches of 10 increments,
first paced at 1,000 writes/s for SECONDS (default 30), then as fast as they go for 10 s. After each,
how long until every listener holds exactly what is stored (30 s at most). Prints writes/s, whether
and when all converged, the server's resident memory before and at its peak, and the CPU the
server and the client (this machine's 2 cores are shared by both) used.
"""
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK = os.path.join(ROOT, "Tests/Python/listen_check.py")
WEBCHANNEL = os.path.join(ROOT, "Tests/Python/webchannel_load.py")
GOOGLE_JAR = "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_serving(url, ok, seconds=90):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if ok(answer.read()):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def start_herald(binary, port, data):
    process = subprocess.Popen([binary, "dev", "--no-functions", "--data", data, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until_serving(f"http://127.0.0.1:{port}/herald/health", lambda body: True)
    return process, "herald-local"


def start_google(port):
    process = subprocess.Popen(["java", "-Duser.language=en", "-cp", GOOGLE_JAR,
                                "com.google.cloud.datastore.emulator.firestore.CloudFirestore", "start",
                                "--host=127.0.0.1", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until_serving(f"http://127.0.0.1:{port}/", lambda body: body.startswith(b"Ok"))
    return process, "listen-load"


def load(pid, port, project, seconds, rate, transport):
    before_cpu = cpu_seconds(pid)
    started = time.perf_counter()
    command = ([sys.executable, WEBCHANNEL, project, str(seconds), str(rate)] if transport == "webchannel"
               else [sys.executable, CHECK, project, "load", str(seconds), str(rate)])
    client = subprocess.run(command,
                            env={**os.environ, "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{port}"},
                            capture_output=True, text=True, timeout=600)
    if client.returncode != 0:
        raise RuntimeError(client.stderr[-2000:])
    result = json.loads(client.stdout)
    result["serverCPU"] = cpu_seconds(pid) - before_cpu
    result["wall"] = time.perf_counter() - started
    return result


def measure(name, start, seconds, transport):
    port = free_port()
    process, project = start(port)
    try:
        time.sleep(2)
        idle = status(process.pid, "VmRSS")
        runs = []
        for rate, duration in ((1000, seconds), (0, 10)):
            client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
            result = load(process.pid, port, project, duration, rate, transport)
            client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
            result["clientCPU"] = (client_after.ru_utime + client_after.ru_stime) - (client_before.ru_utime + client_before.ru_stime)
            result["rate"] = rate
            runs.append(result)
        return {"name": name, "idle": idle, "peak": status(process.pid, "VmHWM"), "runs": runs}
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def client_libraries():
    """The Python stack the listeners and writers run on: their speed is part of every figure."""
    from importlib import metadata
    names = ("google-cloud-firestore", "grpcio", "protobuf")
    return ", ".join(f"{name} {metadata.version(name)}" for name in names)


def main():
    binary = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    transport = sys.argv[3] if len(sys.argv) > 3 else "grpc"
    data = tempfile.mkdtemp(prefix="herald-listen-load-")
    results = [measure("herald dev", lambda port: start_herald(binary, port, data), seconds, transport)]
    if os.path.exists(GOOGLE_JAR):
        results.append(measure("Google's emulator", start_google, seconds, transport))
    else:
        print("Google's emulator is not installed: Herald alone", file=sys.stderr)
    shutil.rmtree(data, ignore_errors=True)
    print(f"Listeners on {transport}; client libraries: {client_libraries()}")
    print("| backend | writers | writes/s | all 100 converged | seconds to converge | server CPU s | client CPU s |")
    print("|---|---|---|---|---|---|---|")
    for backend in results:
        for run in backend["runs"]:
            pace = "paced at 1,000/s" if run["rate"] else "unpaced"
            print(f"| {backend['name']} | {pace}, {run['writes']:,} writes | {run['writesPerSecond']:,.0f} | "
                  f"{'yes' if run['converged'] else 'no (' + str(run['wrong']) + ' behind)'} | {run['secondsToConverge']:.2f} | "
                  f"{run['serverCPU']:.1f} | {run['clientCPU']:.1f} |")
    print()
    print("| backend | RSS idle | RSS peak |")
    print("|---|---|---|")
    for backend in results:
        print(f"| {backend['name']} | {backend['idle'] / 1024:.1f} MB | {backend['peak'] / 1024:.1f} MB |")


if __name__ == "__main__":
    main()
