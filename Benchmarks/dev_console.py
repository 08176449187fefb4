#!/usr/bin/env python3
"""What the browser console costs `herald dev`: start time and memory, idle, side by side.

Usage: Benchmarks/dev_console.py HERALD_BEFORE HERALD_AFTER [RUNS]

For each binary, RUNS times in alternation: exec `herald dev --no-functions` (the local cloud alone;
the functions are processes of their own) on a fresh data directory holding a prepared key, and time
exec → first 200 from /herald/health; then VmRSS after 5 s idle; then (AFTER only, which has the
console) load the page, its script and style, hold its change stream open for 10 s, and VmRSS again.
Prints medians (and min–max).
"""
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def one_run(binary, key, console):
    data = tempfile.mkdtemp(prefix="herald-devbench-")
    shutil.copy(key, os.path.join(data, "local-key.pem"))
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [binary, "dev", "--no-functions", "--data", data, "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(base + "/herald/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.perf_counter() - started > 30:
                    raise RuntimeError(f"{binary} did not start")
                time.sleep(0.0005)
        start_ms = (time.perf_counter() - started) * 1000
        time.sleep(5)
        idle = rss_kib(process.pid)
        open_rss = None
        if console:
            for path in ["/", "/console/console.js", "/console/console.css", "/herald/console/world", "/herald/console/events"]:
                request = urllib.request.Request(base + path, headers={"accept": "text/html"} if path == "/" else {})
                urllib.request.urlopen(request, timeout=5).read()
            stream = urllib.request.urlopen(base + "/herald/console/stream", timeout=15)
            stream.read1(64)
            time.sleep(10)
            open_rss = rss_kib(process.pid)
            stream.close()
        return start_ms, idle, open_rss
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(data, ignore_errors=True)


def summary(values, unit, scale=1.0):
    values = [v * scale for v in values]
    return f"{statistics.median(values):.1f} {unit} ({min(values):.1f}–{max(values):.1f})"


def main():
    before, after = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    key_dir = tempfile.mkdtemp(prefix="herald-devbench-key-")
    # One key for every run: making a 2048-bit key is not what is measured.
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", os.path.join(key_dir, "k.pem")],
                   check=True, capture_output=True)
    key = os.path.join(key_dir, "k.pem")
    results = {before: [], after: []}
    for _ in range(runs):
        for binary in (before, after):
            results[binary].append(one_run(binary, key, console=binary == after))
    print(f"herald dev --no-functions, {runs} runs each, alternating")
    print("| figure | before | after |")
    print("|---|---|---|")
    print(f"| exec → /herald/health answers | {summary([r[0] for r in results[before]], 'ms')} | {summary([r[0] for r in results[after]], 'ms')} |")
    print(f"| RSS, 5 s idle | {summary([r[1] for r in results[before]], 'MB', 1 / 1024)} | {summary([r[1] for r in results[after]], 'MB', 1 / 1024)} |")
    print(f"| RSS, console open 10 s (page loaded, change stream held) | – | {summary([r[2] for r in results[after]], 'MB', 1 / 1024)} |")
    shutil.rmtree(key_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
