"""Real-time listeners with Google's own Python client (google-cloud-firestore, default transport: gRPC)
against FIRESTORE_EMULATOR_HOST; prints one JSON line for the Swift test to check.

Usage: listen_check.py PROJECT MODE
  snapshots  on_snapshot on a document and on a query while documents are written, changed, moved
             out of the query and deleted: every callback, in order
  resume     the Listen stream itself (the client's GAPIC layer): a query target, a write, the stream
             closed, two writes, then the target added again with the last resume token: what the
             second stream sends
  chatlist   (herald dev --seed demo, default schema) on_snapshot on Bob's chat list while Alice
             writes to Family: the conversation's last message and Bob's unread count as they change
  writestream  the Write stream the mobile SDKs write on (the client's GAPIC layer): open it, commit two
             writes on it, ask for a token; then read the documents back
  restart    on_snapshot on a query across a restart of herald dev (argv[3] the binary, argv[4] its data
             directory, on FIRESTORE_EMULATOR_HOST's port): every snapshot, and whether it caught up
  load       100 listeners (a query each, over a shared collection) while writers change documents as
             fast as they can for SECONDS (argv[3], default 5): writes per second, and whether every
             listener's last snapshot equals what the store holds at the end
"""
import json
import os
import sys
import threading
import time

from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.types import firestore as types
from google.cloud.firestore_v1.types import query as query_types
from load_support import wait_until

project, mode = sys.argv[1], sys.argv[2]
db = firestore.Client(project=project)
events = []
lock = threading.Lock()


def wait_for(predicate, seconds=10):
    return wait_until(lock, predicate, seconds)


def snapshots():
    seen = {"document": [], "query": []}

    def on_document(snaps, changes, read_time):
        with lock:
            seen["document"].append([s.to_dict() for s in snaps if s.exists])
            events.append(1)

    def on_query(snaps, changes, read_time):
        with lock:
            seen["query"].append({"ids": sorted(s.id for s in snaps), "changes": [[c.type.name, c.document.id] for c in changes]})
            events.append(1)

    rooms = db.collection("rooms")
    r1 = rooms.document("r1")
    r1.set({"title": "Family", "n": 1})
    watches = [r1.on_snapshot(on_document), rooms.where(filter=FieldFilter("n", ">", 0)).on_snapshot(on_query)]
    # Each write and the callbacks it makes: the document's listener's and the query's, or the query's alone.
    steps = [
        (lambda: r1.update({"n": 2}), 2),
        (lambda: rooms.document("r2").set({"n": 5}), 1),
        (lambda: rooms.document("r2").update({"n": 0}), 1),  # leaves the query, still exists
        (lambda: rooms.document("other").set({"n": 7, "elsewhere": True}), 1),
        (lambda: r1.delete(), 2),
    ]
    wait_for(lambda: len(events) >= 2, 30)
    for step, callbacks in steps:
        count = len(events)
        step()
        # Every callback of this write before the next one: a callback per write, not several writes in one snapshot.
        wait_for(lambda: len(events) >= count + callbacks, 30)
        time.sleep(0.1)  # time for a callback too many to show
    for watch in watches:
        watch.unsubscribe()
    return seen


def restart():
    """on_snapshot on a query while herald dev (argv[3], data directory argv[4], the port of
    FIRESTORE_EMULATOR_HOST) is stopped and started again: the client reconnects with its resume token,
    which the new process cannot answer from its feed, so the target is reset and sent whole."""
    import signal
    import subprocess
    import urllib.request
    binary, data = sys.argv[3], sys.argv[4]
    port = os.environ["FIRESTORE_EMULATOR_HOST"].rsplit(":", 1)[1]

    def start():
        process = subprocess.Popen([binary, "dev", "--no-functions", "--data", data, "--port", port, "--project", project],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/herald/health", timeout=1).read()
                return process
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("herald dev did not start")

    process = start()
    seen = []

    def on_query(snaps, changes, read_time):
        with lock:
            seen.append(sorted(s.id for s in snaps))

    rooms = db.collection("rooms")
    watch = rooms.where(filter=FieldFilter("open", "==", True)).on_snapshot(on_query)
    wait_for(lambda: len(seen) >= 1)
    rooms.document("r1").set({"open": True})
    wait_for(lambda: seen[-1] == ["r1"])
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    process = start()
    batch = db.batch()
    batch.set(rooms.document("r2"), {"open": True})
    batch.update(rooms.document("r1"), {"open": False})
    batch.commit()
    reconnected = wait_for(lambda: seen[-1] == ["r2"], 60)
    watch.unsubscribe()
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    return {"snapshots": seen, "reconnected": reconnected}


def resume():
    api = db._firestore_api
    database = f"projects/{project}/databases/(default)"
    rooms = db.collection("rooms")
    for i in range(3):
        rooms.document(f"d{i}").set({"n": i})
    target = types.Target(
        target_id=7,
        query=types.Target.QueryTarget(
            parent=f"{database}/documents",
            structured_query=query_types.StructuredQuery(**{"from_": [query_types.StructuredQuery.CollectionSelector(collection_id="rooms")]})))

    def listen(target, until):
        requests = [types.ListenRequest(database=database, add_target=target)]
        received = []
        stop = threading.Event()

        def request_iterator():
            yield from requests
            stop.wait(10)

        stream = api.listen(requests=request_iterator(), metadata=[("google-cloud-resource-prefix", database)])
        for response in stream:
            received.append(response)
            if until(received):
                break
        stop.set()
        stream.cancel() if hasattr(stream, "cancel") else None
        return received

    def consistent(received):
        change = received[-1].target_change if received[-1]._pb.HasField("target_change") else None
        return change is not None and change.target_change_type == types.TargetChange.TargetChangeType.NO_CHANGE and not change.target_ids

    first = listen(target, consistent)
    token = [r.target_change.resume_token for r in first if r._pb.HasField("target_change") and r.target_change.resume_token][-1]
    rooms.document("d1").update({"n": 10})
    rooms.document("d3").set({"n": 3})
    rooms.document("d0").delete()

    def summary(responses):
        out = []
        for r in responses:
            which = r._pb.WhichOneof("response_type")
            if which == "target_change":
                out.append(["target_change", types.TargetChange.TargetChangeType(r.target_change.target_change_type).name, list(r.target_change.target_ids)])
            elif which == "document_change":
                out.append(["document_change", r.document_change.document.name.rsplit("/", 1)[-1], list(r.document_change.target_ids)])
            elif which == "document_delete":
                out.append(["document_delete", r.document_delete.document.rsplit("/", 1)[-1]])
            elif which == "document_remove":
                out.append(["document_remove", r.document_remove.document.rsplit("/", 1)[-1]])
            elif which == "filter":
                out.append(["filter", r.filter.target_id, r.filter.count])
        return out

    resumed = types.Target(target_id=7, query=target.query, resume_token=token)
    second = listen(resumed, consistent)
    fresh = listen(types.Target(target_id=8, query=target.query), consistent)
    return {"first": summary(first), "resumed": summary(second), "fresh": summary(fresh)}


def chatlist():
    def on_chats(snaps, changes, read_time):
        with lock:
            for s in snaps:
                if s.id == "family":
                    data = s.to_dict()
                    events.append({"last": (data.get("lastMessage") or {}).get("text"), "unread": (data.get("unreadCount") or {}).get("bob")})

    chats = db.collection("conversations").where(filter=FieldFilter("members", "array_contains", "bob"))
    watch = chats.on_snapshot(on_chats)
    wait_for(lambda: len(events) >= 1)
    now = int(time.time() * 1000)
    db.collection("conversations").document("family").collection("messages").document(f"listen-{now}").set(
        {"senderId": "alice", "senderName": "Alice", "text": "Listening?", "type": "text", "status": "sending",
         "timestamp": firestore.SERVER_TIMESTAMP})
    wait_for(lambda: any(e["last"] == "Listening?" for e in events), 20)
    watch.unsubscribe()
    return events


def writestream():
    from google.cloud.firestore_v1.types import document as document_types
    from google.cloud.firestore_v1.types import write as write_types
    api = db._firestore_api
    database = f"projects/{project}/databases/(default)"
    answers = []
    answered = threading.Event()

    def requests():
        yield types.WriteRequest(database=database)
        answered.wait(10)
        answered.clear()
        writes = [write_types.Write(update=document_types.Document(name=f"{database}/documents/notes/n{i}",
                                                                    fields={"i": document_types.Value(integer_value=i)})) for i in range(2)]
        yield types.WriteRequest(stream_id=answers[0].stream_id, stream_token=answers[0].stream_token, writes=writes)
        answered.wait(10)
        answered.clear()
        yield types.WriteRequest(stream_id=answers[0].stream_id, stream_token=answers[-1].stream_token)
        answered.wait(10)

    for response in api.write(requests=requests(), metadata=[("google-cloud-resource-prefix", database)]):
        answers.append(response)
        answered.set()
        if len(answers) == 3:
            break
    stored = {d.id: d.get("i") for d in db.collection("notes").stream()}
    return {"handshake": [bool(answers[0].stream_id), bool(answers[0].stream_token), len(answers[0].write_results)],
            "commit": [len(answers[1].write_results), bool(answers[1].commit_time), answers[1].stream_token != answers[0].stream_token],
            "token": [len(answers[2].write_results), answers[2].stream_token != answers[1].stream_token],
            "stored": stored}


def load():
    from load_support import write_increments
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    rate = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0  # writes a second in all; 0: as fast as they go
    items = db.collection("items")
    for i in range(200):
        items.document(f"i{i}").set({"group": i % 100, "value": 0})
    latest = [dict() for _ in range(100)]

    def listener(index):
        def on_items(snaps, changes, read_time):
            with lock:
                latest[index] = {s.id: s.get("value") for s in snaps}
        return items.where(filter=FieldFilter("group", "==", index)).on_snapshot(on_items)

    watches = [listener(i) for i in range(100)]
    wait_for(lambda: all(len(state) == 2 for state in latest), 60)
    writes, elapsed = write_increments(db, seconds, rate)
    truth = {d.id: d.get("value") for d in items.stream()}
    expected = [{k: v for k, v in truth.items() if int(k[1:]) % 100 == i} for i in range(100)]
    settle = time.monotonic()
    converged = wait_for(lambda: latest == expected, 30)
    settled = time.monotonic() - settle
    for watch in watches:
        watch.unsubscribe()
    wrong = [i for i, (a, b) in enumerate(zip(latest, expected)) if a != b]
    return {"writesPerSecond": writes / elapsed, "writes": writes, "converged": converged,
            "secondsToConverge": round(settled, 2), "wrong": len(wrong),
            "example": {"held": latest[wrong[0]], "stored": expected[wrong[0]]} if wrong else None}


print(json.dumps({"snapshots": snapshots, "resume": resume, "chatlist": chatlist, "writestream": writestream, "load": load,
                  "restart": restart}[mode]()))
