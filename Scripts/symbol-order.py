#!/usr/bin/env python3
"""Writes Infra/link/symbol-order.txt: every function onMessageCreated runs from exec through its
first /healthz, 300 protobuf events and a /metrics scrape (offline, `serve --documents`), as valgrind's
callgrind sees them. The functions' release link (Package.swift) places these first and together, so
an event touches a few hundred KB of code pages instead of pages spread over the whole executable
(the kernel maps 64 KB around each page touched). Stale names are skipped by the linker; rerun after
large changes to the runtime.

Usage: Scripts/symbol-order.py   (needs valgrind: apt-get install valgrind)
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Benchmarks"))
import compare  # noqa: E402

SCRATCH = os.environ.get("HERALD_RELEASE_BUILD", os.path.join(ROOT, ".build-release"))


def main():
    os.chdir(ROOT)
    subprocess.run(["Infra/link/swift-build-release", "onMessageCreated", "--scratch-path", SCRATCH], check=True, stdout=sys.stderr)
    work = tempfile.mkdtemp()
    binary = os.path.join(work, "onMessageCreated")
    # valgrind cannot read the executable's debug information; the symbols are all it needs.
    subprocess.run(["strip", "--strip-debug", "-o", binary, os.path.join(SCRATCH, "release", "onMessageCreated")], check=True)
    profile = os.path.join(work, "callgrind.out")
    port = compare.free_port()
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={profile}", binary, "serve", "--host", "127.0.0.1",
         "--port", str(port), "--documents", os.path.join(compare.FIXTURES, "documents.json")],
        env=dict(os.environ, LOG_FORMAT="json"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            break
        except OSError:
            time.sleep(0.1)
    compare.send_many(port, compare.Event.fixture(), 300)
    urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    server.terminate()
    server.wait()
    names = set()
    with open(profile) as f:
        for line in f:
            match = re.match(r"c?fn=\(\d+\) (\S.*)$", line.rstrip("\n"))
            if match and not match.group(1).startswith("0x"):
                names.add(match.group(1))
    with open(os.path.join(ROOT, "Infra", "link", "symbol-order.txt"), "w") as out:
        out.write("\n".join(sorted(names)) + "\n")
    print(f"Infra/link/symbol-order.txt: {len(names)} functions")


if __name__ == "__main__":
    main()
