#!/usr/bin/env python3
"""Writes Tests/Fixtures/custom-layout/: an app whose layout no preset has, as a herald export.

  rooms/{roomId}                 participantIds[], kind "group"/"direct", title (groups), unreadCounts {uid: n}
  rooms/{roomId}/posts/{postId}  authorId, body, sentAt, contentType, seenBy[]
  users/{uid}                    displayName, badgeCount, isOnline, lastActiveAt
  users/{uid}/devices/{token}    token, platform                         (export/: tokens in a subcollection)
  users/{uid}.pushTokens         {TOKEN: true}                           (map-keys/: tokens as map keys)

misfits/ is export/ with planted misfits, each named in MISFITS below (the test reads that list).
Run: python3 Scripts/make-custom-layout.py
"""
import json, os, shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Tests", "Fixtures", "custom-layout")
PROJECT = "herald-local"
PREFIX = f"projects/{PROJECT}/databases/(default)/documents/"
CREATED = "2026-11-20T09:00:00Z"

NAMES = ["Ann", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jo", "Kim", "Lu", "Max", "Nia"]
USERS = [f"u{n + 1}" for n in range(len(NAMES))]
BODIES = ["Lunch at noon?", "On my way", "Who has the keys?", "Running late, sorry", "Photos from Sunday", "Meeting moved to 3",
          "Can you call me?", "Great news!", "See you tomorrow", "Thanks for yesterday"]


def s(v): return {"stringValue": v}
def i(v): return {"integerValue": str(v)}
def b(v): return {"booleanValue": v}
def t(v): return {"timestampValue": v}
def a(*v): return {"arrayValue": {"values": list(v)} if v else {}}
def m(**v): return {"mapValue": {"fields": v}}


def token(uid, n):
    # Shaped like an FCM registration token: an instance id, a colon, a long base64url part.
    return f"{uid}dev{n}x7Qk:APA91b" + ("H" * 20) + f"{uid}{n}" + ("q" * 100)


def doc(path, fields):
    return {"name": PREFIX + path, "fields": fields, "createTime": CREATED, "updateTime": CREATED}


def world(tokens_as):
    docs = []
    for n, (uid, name) in enumerate(zip(USERS, NAMES)):
        fields = {"displayName": s(name), "badgeCount": i(0), "isOnline": b(n % 3 == 0),
                  "lastActiveAt": t(f"2026-11-20T08:{n:02d}:00Z")}
        devices = [token(uid, d) for d in range(1 + n % 2)]
        if tokens_as == "map-keys":
            fields["pushTokens"] = m(**{d: b(True) for d in devices})
        docs.append(doc(f"users/{uid}", fields))
        if tokens_as == "subcollection":
            for d in devices:
                docs.append(doc(f"users/{uid}/devices/{d}", {"token": s(d), "platform": s("ios" if n % 2 else "android")}))
    for r in range(14):
        group = r % 3 == 0
        members = [USERS[r], USERS[(r + 1) % 14]] + ([USERS[(r + 2) % 14], USERS[(r + 5) % 14]] if group else [])
        fields = {"participantIds": a(*map(s, members)), "kind": s("group" if group else "direct"),
                  "unreadCounts": m(**{u: i(0) for u in members})}
        if group:
            fields["title"] = s(f"Team {r}")
        docs.append(doc(f"rooms/r{r + 1}", fields))
        for p in range(10):
            author = members[p % len(members)]
            post = {"authorId": s(author), "body": s(f"{BODIES[(r + p) % len(BODIES)]} ({r + 1}.{p + 1})"), "sentAt": t(f"2026-11-{10 + p:02d}T{r:02d}:30:00Z"),
                    "contentType": s("image" if p == 4 else "text"), "seenBy": a(*map(s, [x for x in members if x != author][:1]))}
            docs.append(doc(f"rooms/r{r + 1}/posts/p{p + 1}", post))
    return docs


MISFITS = {
    "rooms/r2": "participantIds is string",
    "rooms/r3": "member u99 has no user document",
    "rooms/r4/posts/p2": "authorId is missing",
    "rooms/r5/posts/p3": "body is integer",
    "rooms/r6/posts/p1": "sender u9 (authorId) is not a member of rooms/r6",
    "users/u7": "badgeCount is string",
}


def misfits(docs):
    by_path = {d["name"][len(PREFIX):]: d for d in docs}
    by_path["rooms/r2"]["fields"]["participantIds"] = s("u2,u3")
    by_path["rooms/r3"]["fields"]["participantIds"]["arrayValue"]["values"].append(s("u99"))
    del by_path["rooms/r4/posts/p2"]["fields"]["authorId"]
    by_path["rooms/r5/posts/p3"]["fields"]["body"] = i(42)
    by_path["rooms/r6/posts/p1"]["fields"]["authorId"] = s("u9")
    by_path["users/u7"]["fields"]["badgeCount"] = s("three")
    return docs


def write(folder, docs):
    path = os.path.join(OUT, folder)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    docs = sorted(docs, key=lambda d: d["name"])
    with open(os.path.join(path, "documents.jsonl"), "w") as f:
        for d in docs:
            f.write(json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
    with open(os.path.join(path, "metadata.json"), "w") as f:
        json.dump({"format": "herald-export", "project": PROJECT, "documents": len(docs)}, f, indent=2)
        f.write("\n")


write("export", world("subcollection"))
write("map-keys", world("map-keys"))
write("misfits", misfits(world("subcollection")))
with open(os.path.join(OUT, "misfits.json"), "w") as f:
    json.dump(MISFITS, f, indent=2, sort_keys=True)
    f.write("\n")
