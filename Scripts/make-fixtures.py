#!/usr/bin/env python3
"""Writes Tests/Fixtures/: every scenario of every schema preset in every event encoding.

Payloads are built and serialized with Google's own google-events package (protobuf bytes and
proto3 JSON), so the fixtures are what Eventarc sends, not what Herald thinks it sends.
Encodings per scenario:
  *.binary-protobuf.json  {"headers": {ce-...}, "body": base64 DocumentEventData}  (Eventarc's default)
  *.binary-json.json      {"headers": {ce-...}, "body": proto3 JSON}
  *.structured.json       application/cloudevents+json with "data"
  *.legacy.json           1st-gen {"data": ..., "context": ...}
  *.legacy-flat.json      the older 1st-gen shape, context fields beside "data" (+ "params")
Also <preset>/documents.json, a snapshot for `invoke --documents`; <preset>/presence.json for
`presenceSweeper sweep --documents … --at 2026-11-20T09:02:00Z`; and <preset>/account-change.json, where
another user still holds the token user-written gives (presets that keep tokens on the server).
Run: pip install google-events; python3 Scripts/make-fixtures.py
"""
import base64, json, os, shutil

from google.events.cloud.firestore_v1 import DocumentEventData
from google.protobuf import json_format

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Tests", "Fixtures")
PROJECT = "herald-demo"
DB = f"projects/{PROJECT}/databases/(default)/documents"


def s(v): return {"stringValue": v}
def i(v): return {"integerValue": str(v)}
def b(v): return {"booleanValue": v}
def ts(v): return {"timestampValue": v}
def arr(*vs): return {"arrayValue": {"values": list(vs)}}
def m(**kv): return {"mapValue": {"fields": kv}}


def doc(path, fields, created="2026-11-20T09:00:00.123456Z", updated=None):
    return {"name": f"{DB}/{path}", "fields": fields, "createTime": created, "updateTime": updated or created}


# Per preset: the documents a message event touches, and the scenarios' events.
PRESETS = {
    "default": {
        "message": "conversations/c-family/messages/m-1001",
        "conversation": ("conversations/c-family", {
            "members": arr(s("alice"), s("bob"), s("carol")), "isGroup": b(True), "name": s("Family"),
            "lastMessage": m(text=s("Morning!"), senderId=s("bob"), timestamp=ts("2026-11-20T08:00:00Z")),
            "unreadCount": m(alice=i(0), bob=i(0), carol=i(2)),
        }),
        "message_fields": {"senderId": s("alice"), "senderName": s("Alice"), "text": s("Dinner at 6pm"),
                           "type": s("text"), "timestamp": ts("2026-11-20T09:00:00.120Z"), "status": s("sending"),
                           "readBy": arr(s("alice"))},
        "read_field": "readBy", "reader": s("bob"),
        "users": {"alice": {"displayName": s("Alice"), "fcmTokens": arr(s("tok-alice-phone"))},
                  "bob": {"displayName": s("Bob"), "fcmTokens": arr(s("tok-bob-phone"), s("tok-bob-ipad"))},
                  "carol": {"displayName": s("Carol"), "fcmTokens": arr(s("tok-carol-phone"))}},
        "user_update": ("bob", {"fcmTokens": arr(s("tok-bob-phone"), s("tok-bob-ipad"), s("tok-bob-new"))}),
    },
    "prd000": {
        "message": "conversations/c-42/messages/m-7",
        "conversation": ("conversations/c-42", {
            "participants": arr(s("u-ana"), s("u-ben")), "isGroup": b(False),
            "lastMessage": m(text=s("hi"), senderId=s("u-ben"), timestamp=ts("2026-11-20T08:59:00Z")),
        }),
        "message_fields": {"senderId": s("u-ana"), "text": s("Hey"), "timestamp": ts("2026-11-20T09:00:00Z"),
                           "readBy": arr(s("u-ana")), "status": s("sent")},
        "read_field": "readBy", "reader": s("u-ben"),
        "users": {"u-ana": {"displayName": s("Ana"), "status": s("online"), "heartbeat": ts("2026-11-20T08:59:30Z")},
                  "u-ben": {"displayName": s("Ben"), "status": s("online"), "heartbeat": ts("2026-11-20T08:58:00Z")}},
        "user_update": ("u-ana", {"status": s("online"), "heartbeat": ts("2026-11-20T09:00:30Z")}),
    },
    "prd001": {
        "message": "messages/msg-555",
        "conversation": ("conversations/conv-9", {
            "participants": arr(s("john"), s("mia")), "type": s("direct"), "isGroup": b(False),
            "lastMessage": ts("2026-11-20T08:30:00Z"),
        }),
        "message_fields": {"conversationId": s("conv-9"), "senderId": s("john"), "text": s("Hey"),
                           "timestamp": ts("2026-11-20T09:00:00Z"), "readBy": arr(s("john"))},
        "read_field": "readBy", "reader": s("mia"),
        "users": {"john": {"displayName": s("John"), "online": b(True), "lastSeen": ts("2026-11-20T09:00:00Z")},
                  "mia": {"displayName": s("Mia"), "online": b(False), "lastSeen": ts("2026-11-20T07:00:00Z")}},
        "user_update": ("mia", {"online": b(True), "lastSeen": ts("2026-11-20T09:01:00Z")}),
    },
    "prd004": {
        "message": "chats/chat-77/messages/msg-1",
        "conversation": ("chats/chat-77", {
            "memberIDs": arr(s("u1"), s("u2"), s("u3")), "type": s("group"), "groupName": s("Family"),
            "memberNames": m(u1=s("Alice"), u2=s("Bob"), u3=s("Carol")),
            "lastMessageText": s("ok"), "lastMessageSenderID": s("u2"),
            "lastMessageTimestamp": ts("2026-11-20T08:00:00Z"), "updatedAt": ts("2026-11-20T08:00:00Z"),
        }),
        "message_fields": {"senderID": s("u1"), "senderName": s("Alice"), "text": s("Dinner at 6pm 🍝"),
                           "timestamp": ts("2026-11-20T09:00:00Z"), "deliveryStatus": s("sending"),
                           "readBy": arr(s("u1"))},
        "read_field": "readBy", "reader": s("u2"),
        "users": {"u1": {"displayName": s("Alice"), "fcmToken": s("tok-u1"), "isOnline": b(True)},
                  "u2": {"displayName": s("Bob"), "fcmToken": s("tok-u2"), "isOnline": b(False)},
                  "u3": {"displayName": s("Carol"), "fcmToken": s("tok-u3"), "isOnline": b(True)}},
        "user_update": ("u2", {"fcmToken": s("tok-u2-new"), "isOnline": b(True)}),
    },
}

# Presence fields per preset: (online field, online value, offline value, heartbeat field).
PRESENCE = {
    "default": ("online", b(True), "heartbeatAt"),
    "prd000": ("status", s("online"), "heartbeat"),
    "prd001": ("online", b(True), "lastSeen"),
    "prd004": ("isOnline", b(True), "lastSeenTimestamp"),
}
# The previous owner of the token the user-written event gives, where the preset keeps tokens on the server.
PREVIOUS_OWNER = {
    "default": ("dave", {"displayName": s("Dave"), "fcmTokens": arr(s("tok-dave-tablet"), s("tok-bob-new"))}),
    "prd004": ("u9", {"displayName": s("Dan"), "fcmToken": s("tok-u2-new")}),
}


def write_snapshot(folder, name, documents):
    with open(os.path.join(folder, name), "w") as f:
        json.dump({"documents": documents}, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_sweep_snapshots(preset, p, folder):
    """At 09:02:00: Gone's heartbeat is 2 minutes old (offline, last seen 09:00:00), Here's 10 s,
    Quiet is typing since 09:01:00 while online; Away is offline already."""
    online_field, online, heartbeat = PRESENCE[preset]
    people = {
        "gone": {online_field: online, heartbeat: ts("2026-11-20T09:00:00Z"), "typingIn": s("c-1"), "typingAt": ts("2026-11-20T08:59:59Z")},
        "here": {online_field: online, heartbeat: ts("2026-11-20T09:01:50Z")},
        "quiet": {online_field: online, heartbeat: ts("2026-11-20T09:01:55Z"), "typingIn": s("c-1"), "typingAt": ts("2026-11-20T09:01:00Z")},
        "away": {online_field: s("offline") if preset == "prd000" else b(False), heartbeat: ts("2026-11-20T07:00:00Z")},
    }
    write_snapshot(folder, "presence.json", [doc(f"users/{u}", f, updated="2026-11-20T09:01:55Z") for u, f in people.items()])
    if preset in PREVIOUS_OWNER:
        # The user as the user-written event leaves it, and the previous owner still holding the token.
        changed_uid, changed = p["user_update"]
        users = {**p["users"], changed_uid: {**p["users"][changed_uid], **changed}}
        owner, fields = PREVIOUS_OWNER[preset]
        snapshot = [doc(*p["conversation"])] + [
            doc(f"users/{u}", f, updated="2026-11-20T09:06:00Z" if u == changed_uid else None) for u, f in {**users, owner: fields}.items()]
        write_snapshot(folder, "account-change.json", snapshot)


# Every value kind, for the codec tests.
ALL_KINDS = {
    "null": {"nullValue": None}, "yes": b(True), "no": b(False),
    "int": i(9007199254740993), "intMin": i(-9223372036854775808), "intMax": i(9223372036854775807),
    "double": {"doubleValue": 0.1}, "negZero": {"doubleValue": -0.0}, "nan": {"doubleValue": "NaN"},
    "inf": {"doubleValue": "Infinity"}, "negInf": {"doubleValue": "-Infinity"}, "tiny": {"doubleValue": 5e-324},
    "time": ts("2026-11-20T09:00:00.123456789Z"), "epochBefore": ts("1969-12-31T23:59:59.999999999Z"),
    "yearOne": ts("0001-01-01T00:00:00Z"), "yearMax": ts("9999-12-31T23:59:59.999999999Z"),
    "text": s("Ünïcödé 👩‍👩‍👧 e\u0301 \"quoted\" \\ \n\t\u0000 end"), "empty": s(""),
    "bytes": {"bytesValue": base64.b64encode(bytes(range(256))).decode()},
    "ref": {"referenceValue": f"{DB}/users/alice"},
    "geo": {"geoPointValue": {"latitude": 48.8584, "longitude": -2.2945}},
    "list": arr(i(1), s("two"), arr(b(True)), m(k=s("v"))), "emptyList": {"arrayValue": {}},
    "nested": m(a=m(b=m(c=arr(m(d={"nullValue": None}))))), "emptyMap": {"mapValue": {}},
    "key with spaces.and`ticks": s("odd keys are fine"),
}


def event_data(value=None, old_value=None, mask=None):
    message = {}
    if value is not None: message["value"] = value
    if old_value is not None: message["oldValue"] = old_value
    if mask is not None: message["updateMask"] = {"fieldPaths": mask}
    pb = DocumentEventData.pb(DocumentEventData())
    json_format.ParseDict(message, pb)
    return pb


def write_encodings(folder, name, kind, path, pb, event_id, time="2026-11-20T09:00:01.250Z"):
    ce_type = f"google.cloud.firestore.document.v1.{kind}"
    source = f"//firestore.googleapis.com/projects/{PROJECT}/databases/(default)"
    attrs = {"id": event_id, "source": source, "type": ce_type, "specversion": "1.0",
             "subject": f"documents/{path}", "time": time, "database": "(default)",
             "namespace": "(default)", "document": path, "location": "europe-west1", "project": PROJECT}
    proto_json = json_format.MessageToDict(pb)  # camelCase proto3 JSON, int64 as strings
    headers = {f"ce-{k}": v for k, v in attrs.items()}
    out = {
        "binary-protobuf": {"headers": {**headers, "content-type": "application/protobuf"},
                            "body": base64.b64encode(pb.SerializeToString(deterministic=True)).decode()},
        "binary-json": {"headers": {**headers, "content-type": "application/json"}, "body": proto_json},
        "structured": {**attrs, "datacontenttype": "application/json", "data": proto_json},
        "structured-base64": {**attrs, "datacontenttype": "application/protobuf",
                              "data_base64": base64.b64encode(pb.SerializeToString()).decode()},
    }
    legacy_type = {"created": "create", "updated": "update", "deleted": "delete", "written": "write"}[kind]
    legacy_context = {"eventId": event_id, "timestamp": time,
                      "eventType": f"providers/cloud.firestore/eventTypes/document.{legacy_type}",
                      "resource": f"{DB}/{path}"}
    # 1st-gen JSON: snake_case names as proto-plus writes them (old_value, update_mask, integer_value, ...).
    legacy_data = json_format.MessageToDict(pb, preserving_proto_field_name=True)
    out["legacy"] = {"data": legacy_data, "context": legacy_context}
    out["legacy-flat"] = {"data": legacy_data, **legacy_context, "params": {}}
    for encoding, content in out.items():
        with open(os.path.join(folder, f"{name}.{encoding}.json"), "w") as f:
            json.dump(content, f, indent=2, ensure_ascii=False)
            f.write("\n")


def main():
    if os.path.isdir(OUT):
        for entry in os.listdir(OUT):
            if entry in PRESETS or entry == "values":
                shutil.rmtree(os.path.join(OUT, entry))
    for preset, p in PRESETS.items():
        folder = os.path.join(OUT, preset)
        os.makedirs(folder)
        message = doc(p["message"], p["message_fields"])
        write_encodings(folder, "message-created", "created", p["message"], event_data(value=message), f"{preset}-evt-1")
        read_fields = dict(p["message_fields"])
        read_fields[p["read_field"]] = arr(*p["message_fields"][p["read_field"]]["arrayValue"]["values"], p["reader"])
        read_message = doc(p["message"], read_fields, updated="2026-11-20T09:05:00Z")
        write_encodings(folder, "message-read", "updated", p["message"],
                        event_data(value=read_message, old_value=message, mask=[p["read_field"]]), f"{preset}-evt-2")
        uid, changed = p["user_update"]
        before = doc(f"users/{uid}", p["users"][uid])
        after = doc(f"users/{uid}", {**p["users"][uid], **changed}, updated="2026-11-20T09:06:00Z")
        write_encodings(folder, "user-written", "written", f"users/{uid}",
                        event_data(value=after, old_value=before, mask=sorted(changed)), f"{preset}-evt-3")
        write_encodings(folder, "message-deleted", "deleted", p["message"], event_data(old_value=message), f"{preset}-evt-4")
        snapshot = [doc(*p["conversation"])] + [doc(f"users/{u}", f) for u, f in p["users"].items()] + [message]
        write_snapshot(folder, "documents.json", snapshot)
        write_sweep_snapshots(preset, p, folder)
    values = os.path.join(OUT, "values")
    os.makedirs(values)
    write_encodings(values, "all-kinds", "written", "kinds/every",
                    event_data(value=doc("kinds/every", ALL_KINDS)), "values-evt-1")
    # Eventarc drops data over its size limit: an event with empty data.
    write_encodings(values, "data-omitted", "created", "conversations/c-big/messages/m-huge", event_data(), "values-evt-2")
    print("fixtures written under", OUT)


if __name__ == "__main__":
    main()
