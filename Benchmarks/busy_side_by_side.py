"""Busy groups side by side (issue 45): Herald's onMessageCreated and the Python peer, each alone on
`herald dev --write-rate-limit` (Firestore's sustained rate of about one write a second per document,
a burst of 5, commits not admitted within 5 s refused ABORTED), under the same load: 10 people, each
a member of the same 4 groups, every group sent 2 messages a second for 30 s (240 messages; each
one due to 9 recipients on 2 devices: 4,320 alerts). Every person's user document is written by
every message (their badge), every group's conversation by each of its messages.

Prints, for each: alerts delivered of those due, dead letters, commits refused for contention,
write → last alert p50 / p99, Firestore document writes billed per message (herald dev's count, less
the messages themselves), requests per message, the busiest document's writes a second over 10 s,
and whether every unread count and badge total ended exact.

Usage: busy_side_by_side.py --herald-bin DIR --peer-venv DIR [--seconds N]
(Benchmarks/run.sh builds DIR = .build-release/release and the peer's venv.)
"""
import argparse
import os
import sys
import threading
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import PROJECT, Function, LocalCloud, free_port, string  # noqa: E402

PEOPLE = [f"u{i}" for i in range(10)]
GROUPS = [f"g{i}" for i in range(4)]


def run(function, herald, seconds, rate=2.0):
    cloud = LocalCloud(herald, ["--write-rate-limit"])
    port = free_port()
    process = function.start(port, {"GOOGLE_CLOUD_PROJECT": PROJECT, "GCE_METADATA_HOST": cloud.host, "FIRESTORE_ENDPOINT": cloud.base,
                                    "FCM_ENDPOINT": cloud.base, "PEER_FIRESTORE": cloud.host, "PEER_FCM_ENDPOINT": cloud.base})
    try:
        seed = [cloud.document(f"users/{u}", {"displayName": string(u.upper()),
                                              "fcmTokens": {"arrayValue": {"values": [string(f"tok-{u}-phone"), string(f"tok-{u}-tablet")]}}})
                for u in PEOPLE]
        seed += [cloud.document(f"conversations/{g}", {"members": {"arrayValue": {"values": [string(m) for m in PEOPLE]}},
                                                      "isGroup": {"booleanValue": True}, "name": string(f"Group {g}")}) for g in GROUPS]
        cloud.commit(seed)
        cloud.trigger_on_messages(port)
        before = cloud.call("GET", "/herald/requests").get("firestore", 0)
        written_before = cloud.call("GET", "/herald/writes")["written"]
        written = {}
        sent_by = {}
        lock = threading.Lock()

        def writer(g):
            start = time.time()
            for n in range(int(seconds * rate)):
                time.sleep(max(0.0, start + n / rate - time.time()))
                m = f"{g}-m{n}"
                sender = PEOPLE[n % len(PEOPLE)]
                now = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
                with lock:
                    written[m] = time.time()
                    sent_by[m] = (g, sender)
                cloud.commit([cloud.document(f"conversations/{g}/messages/{m}", {
                    "senderId": string(sender), "text": string(f"Message {m}"), "type": string("text"),
                    "timestamp": {"timestampValue": now}, "status": string("sending")})])

        threads = [threading.Thread(target=writer, args=(g,)) for g in GROUPS]
        start = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        messages = len(written)
        due = messages * (len(PEOPLE) - 1) * 2
        settled = None
        while time.time() - start < seconds + 300:
            pending = cloud.call("GET", "/herald/deliveries?state=pending")["deliveries"]
            if not pending:
                settled = time.time() - start
                break
            time.sleep(0.5)
        pushes = cloud.call("GET", "/herald/fcm/messages")["messages"]
        alerts = [p for p in pushes if p["message"].get("data", {}).get("messageId") in written]
        last = {}
        for p in alerts:
            m = p["message"]["data"]["messageId"]
            last[m] = max(last.get(m, 0), p["receivedAt"])
        latencies = sorted(last[m] - written[m] for m in last)
        dead = cloud.call("GET", "/herald/deliveries?state=dead")["deliveries"]
        writes = cloud.call("GET", "/herald/writes")
        requests = cloud.call("GET", "/herald/requests").get("firestore", 0) - before - messages
        # Exact counts: with nothing read, each person's unread count in a group is the group's messages
        # not theirs, and their badge the sum over the groups.
        exact = True
        for g in GROUPS:
            doc = cloud.call("GET", f"/v1/projects/{PROJECT}/databases/(default)/documents/conversations/{g}")
            counts = doc.get("fields", {}).get("unreadCount", {}).get("mapValue", {}).get("fields", {})
            for u in PEOPLE:
                due_count = sum(1 for (group, sender) in sent_by.values() if group == g and sender != u)
                exact &= int(counts.get(u, {}).get("integerValue", "0")) == due_count
        for u in PEOPLE:
            # Herald keeps each badge apart (badges/{userId}, every preset); the peer in the user document.
            doc = cloud.call("GET", f"/v1/projects/{PROJECT}/databases/(default)/documents/{'badges' if function.name == 'Herald' else 'users'}/{u}")
            total = int(doc.get("fields", {}).get("unreadTotal", {}).get("integerValue", "0"))
            exact &= total == sum(1 for (_, sender) in sent_by.values() if sender != u)
        peak = writes.get("peak") or {}
        return {
            "messages": messages, "alerts": len(alerts), "due": due, "dead": len(dead),
            "refused": writes["refusedForContention"], "settled": settled,
            "p50": latencies[len(latencies) // 2] if latencies else None,
            "p99": latencies[len(latencies) * 99 // 100] if latencies else None,
            "writesPerMessage": (writes["written"] - written_before - messages) / messages, "requestsPerMessage": requests / messages,
            "applied": len(last), "writesPerApplied": (writes["written"] - written_before - messages) / max(1, len(last)),
            "peak": f'{peak.get("perSecond")} ({peak.get("document")})', "exact": exact,
        }
    finally:
        Function.stop(process)
        cloud.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--herald-bin", default=".build-release/release")
    parser.add_argument("--peer-venv", default="Benchmarks/peer/.venv")
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    herald = os.path.join(args.herald_bin, "herald")
    herald_fn = Function("Herald", lambda port: [os.path.join(args.herald_bin, "onMessageCreated"), "serve", "--host", "127.0.0.1", "--port", str(port)],
                         {"LOG_FORMAT": "json"})
    peer_fn = Function("Peer", lambda port: [os.path.join(args.peer_venv, "bin", "functions-framework"), "--target", "on_message_created",
                                            "--signature-type", "cloudevent", "--source", os.path.join(compare.ROOT, "Benchmarks", "peer", "main.py"),
                                            "--port", str(port)], {"GOOGLE_CLOUD_PROJECT": "herald-demo"})
    results = {}
    for fn in (herald_fn, peer_fn):
        results[fn.name] = run(fn, herald, args.seconds)
        print(f"{fn.name}: {results[fn.name]}", file=sys.stderr)
    h, p = results["Herald"], results["Peer"]

    def ms(v):
        return "—" if v is None else f"{v * 1000:,.0f} ms"

    print(f"Busy groups on herald dev --write-rate-limit, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: "
          f"{h['messages']} messages in {args.seconds:.0f} s\n")
    print("| measure | Herald | Python peer |\n| --- | --- | --- |")
    rows = [
        ("alerts delivered / due", f"{h['alerts']:,} / {h['due']:,}", f"{p['alerts']:,} / {p['due']:,}"),
        ("messages pushed at all / written", f"{h['applied']} / {h['messages']}", f"{p['applied']} / {p['messages']}"),
        ("dead letters", h["dead"], p["dead"]),
        ("commits refused for contention (ABORTED)", h["refused"], p["refused"]),
        ("write → last alert, p50 / p99", f"{ms(h['p50'])} / {ms(h['p99'])}", f"{ms(p['p50'])} / {ms(p['p99'])}"),
        ("settled (no delivery pending) after", ms(h["settled"]), ms(p["settled"])),
        ("Firestore document writes billed per message written / per message pushed", f"{h['writesPerMessage']:.2f} / {h['writesPerApplied']:.2f}",
         f"{p['writesPerMessage']:.2f} / {p['writesPerApplied']:.2f}"),
        ("Firestore requests per message", f"{h['requestsPerMessage']:.2f}", f"{p['requestsPerMessage']:.2f}"),
        ("busiest document, writes/s over 10 s (all writers)", h["peak"], p["peak"]),
        ("unread counts and badge totals exact", "yes" if h["exact"] else "no", "yes" if p["exact"] else "no"),
    ]
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} |")


if __name__ == "__main__":
    main()
