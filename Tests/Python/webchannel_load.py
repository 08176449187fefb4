"""Real-time listeners over WebChannel (the web SDK's transport) under load, against
FIRESTORE_EMULATOR_HOST: 100 sessions, each a Listen stream with one query target, read on streaming
back channels as firebase-js-sdk reads them (the requests of Tests/Python/webchannel/webchannel_client.js);
8 writers commit batches of 10 increments (google-cloud-firestore). Prints one JSON line as
listen_check.py's `load` mode does, for Benchmarks/listen_load.py.

Usage: webchannel_load.py PROJECT SECONDS RATE   (RATE: writes a second in all; 0: as fast as they go)
"""
import codecs
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

from google.cloud import firestore
from load_support import wait_until, write_increments

project, seconds, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
host = os.environ["FIRESTORE_EMULATOR_HOST"]
database = f"projects/{project}/databases/(default)"
db = firestore.Client(project=project)
lock = threading.Lock()


def units(text):
    """UTF-16 code units, as the browser counts a frame's length."""
    return sum(2 if ord(c) > 0xFFFF else 1 for c in text)


class Listener:
    """One WebChannel Listen session with one query target, and the documents it holds."""

    def __init__(self, group):
        self.group = group
        self.held = {}
        self.docs = {}
        self.current = False
        self.last_array = 0
        self.closed = False

    def url(self, **params):
        query = {"VER": "8", "database": database, **params, "zx": "x", "t": "1"}
        return f"/google.firestore.v1.Firestore/Listen/channel?{urllib.parse.urlencode(query)}"

    def open(self):
        target = {"database": database, "addTarget": {"targetId": 2, "query": {
            "parent": f"{database}/documents",
            "structuredQuery": {"from": [{"collectionId": "items"}], "where": {"fieldFilter": {
                "field": {"fieldPath": "group"}, "op": "EQUAL", "value": {"integerValue": str(self.group)}}}}}}}
        body = f"count=1&ofs=0&req0___data__={urllib.parse.quote(json.dumps(target))}"
        connection = http.client.HTTPConnection(host, timeout=30)
        connection.request("POST", self.url(RID="1", CVER="22"), body,
                            {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://localhost:8081"})
        text = connection.getresponse().read().decode()
        connection.close()
        self.sid = json.loads(text.split("\n", 1)[1])[0][1][1]
        threading.Thread(target=self.back_channel, daemon=True).start()

    def back_channel(self):
        while not self.closed:
            connection = http.client.HTTPConnection(host, timeout=120)
            try:
                connection.request("GET", self.url(RID="rpc", SID=self.sid, AID=str(self.last_array), CI="0", TYPE="xmlhttp"),
                                   headers={"Origin": "http://localhost:8081"})
                response = connection.getresponse()
                decoder = codecs.getincrementaldecoder("utf-8")()
                buffer = ""
                while not self.closed:
                    chunk = response.read1(65536)
                    if not chunk:
                        break
                    buffer += decoder.decode(chunk)
                    buffer = self.frames(buffer)
            except OSError:
                time.sleep(0.1)
            finally:
                connection.close()

    def frames(self, buffer):
        while True:
            newline = buffer.find("\n")
            if newline < 0:
                return buffer
            size = int(buffer[:newline])
            body, taken = buffer[newline + 1:], 0
            end = 0
            while taken < size and end < len(body):
                taken += units(body[end])
                end += 1
            if taken < size:
                return buffer
            for array_id, payload in json.loads(body[:end]):
                self.last_array = array_id
                if payload and isinstance(payload[0], dict):
                    self.apply(payload[0])
            buffer = body[end:]

    def apply(self, message):
        change = message.get("targetChange")
        if change is not None:
            kind = change.get("targetChangeType", "NO_CHANGE")
            if kind == "RESET":
                self.docs = {}
            if kind == "CURRENT":
                self.current = True
            if kind == "NO_CHANGE" and not change.get("targetIds") and self.current:
                with lock:
                    self.held = dict(self.docs)
        elif "documentChange" in message:
            document = message["documentChange"]["document"]
            if 2 in message["documentChange"].get("targetIds", []):
                self.docs[document["name"].rsplit("/", 1)[1]] = int(document["fields"]["value"]["integerValue"])
            if 2 in message["documentChange"].get("removedTargetIds", []):
                self.docs.pop(document["name"].rsplit("/", 1)[1], None)
        elif "documentDelete" in message or "documentRemove" in message:
            name = (message.get("documentDelete") or message.get("documentRemove"))["document"]
            self.docs.pop(name.rsplit("/", 1)[1], None)


def wait_for(predicate, seconds):
    return wait_until(lock, predicate, seconds)


def main():
    items = db.collection("items")
    for i in range(200):
        items.document(f"i{i}").set({"group": i % 100, "value": 0})
    listeners = [Listener(i) for i in range(100)]
    for listener in listeners:
        listener.open()
    wait_for(lambda: all(len(l.held) == 2 for l in listeners), 60)
    writes, elapsed = write_increments(db, seconds, rate)
    truth = {d.id: d.get("value") for d in items.stream()}
    expected = [{k: v for k, v in truth.items() if int(k[1:]) % 100 == i} for i in range(100)]
    settle = time.monotonic()
    converged = wait_for(lambda: [l.held for l in listeners] == expected, 30)
    settled = time.monotonic() - settle
    wrong = [i for i, l in enumerate(listeners) if l.held != expected[i]]
    for listener in listeners:
        listener.closed = True
    print(json.dumps({"writesPerSecond": writes / elapsed, "writes": writes, "converged": converged,
                      "secondsToConverge": round(settled, 2), "wrong": len(wrong),
                      "example": {"held": listeners[wrong[0]].held, "stored": expected[wrong[0]]} if wrong else None}))
    os._exit(0)


main()
