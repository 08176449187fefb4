"""onMessageCreated as a user would otherwise write it: Python on Google's Functions Framework with
firebase-admin, doing what Herald's onMessageCreated does for the default schema. It is Herald's
benchmark peer (Benchmarks/run.sh), written the way Firebase's samples write such functions.

A new message in conversations/{c}/messages/{m}: read the conversation and its members' user
documents, then in one batch record the event id (a redelivered event is skipped), move the
conversation's lastMessage forward, count the message unread for each recipient (per conversation
and the user's badge), mark the message sent; then push it to each recipient's devices.

Environment:
  GOOGLE_CLOUD_PROJECT   the project
  PEER_FIRESTORE         host:port of a Firestore REST endpoint (the local cloud); unset: Google
  PEER_FCM_ENDPOINT      base URL of an FCM v1 endpoint (the local cloud); unset: Google
  PEER_DOCUMENTS         a JSON snapshot {"documents": [...]}: read from it, build the writes and
                         messages but commit and send nothing (the benchmark's "no downstream I/O")
"""
import base64
import json
import os
from datetime import datetime

import firebase_admin
import functions_framework
from firebase_admin import credentials, firestore, messaging
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.events.cloud.firestore import DocumentEventData

PROJECT = os.environ.get("GOOGLE_CLOUD_PROJECT", "herald-demo")


class _Anonymous(credentials.Base):
    """No credentials: the local cloud, like Google's emulators, takes unauthenticated calls."""

    def get_credential(self):
        return AnonymousCredentials()


local = "PEER_FIRESTORE" in os.environ or "PEER_DOCUMENTS" in os.environ
app = firebase_admin.initialize_app(_Anonymous() if local else None, {"projectId": PROJECT})
db = firestore.client(app)
if "PEER_FIRESTORE" in os.environ:
    # The local cloud speaks Firestore's REST API; the client's default transport is gRPC.
    from google.cloud.firestore_v1.services.firestore import FirestoreClient
    from google.cloud.firestore_v1.services.firestore.transports.rest import FirestoreRestTransport

    db._firestore_api_internal = FirestoreClient(transport=FirestoreRestTransport(
        host=os.environ["PEER_FIRESTORE"], credentials=AnonymousCredentials(), url_scheme="http"))
if "PEER_FCM_ENDPOINT" in os.environ:
    messaging._get_messaging_service(app)._fcm_url = f"{os.environ['PEER_FCM_ENDPOINT']}/v1/projects/{PROJECT}/messages:send"


def _value(v):
    """A Firestore REST JSON value as the Python value the client library would give."""
    (kind, x), = v.items()
    if kind == "integerValue":
        return int(x)
    if kind == "timestampValue":
        return datetime.fromisoformat(x.replace("Z", "+00:00"))
    if kind == "arrayValue":
        return [_value(i) for i in x.get("values", [])]
    if kind == "mapValue":
        return {k: _value(i) for k, i in x.get("fields", {}).items()}
    return x


SNAPSHOT = None
if "PEER_DOCUMENTS" in os.environ:
    with open(os.environ["PEER_DOCUMENTS"]) as f:
        SNAPSHOT = {d["name"].split("/documents/", 1)[1]: {k: _value(v) for k, v in d.get("fields", {}).items()}
                    for d in json.load(f)["documents"]}


def _read(path):
    if SNAPSHOT is not None:
        return SNAPSHOT.get(path)
    snapshot = db.document(path).get()
    return snapshot.to_dict() if snapshot.exists else None


def _read_all(paths):
    if SNAPSHOT is not None:
        return {p.split("/")[-1]: SNAPSHOT[p] for p in paths if p in SNAPSHOT}
    return {s.id: s.to_dict() for s in db.get_all([db.document(p) for p in paths]) if s.exists}


@functions_framework.cloud_event
def on_message_created(event):
    data = DocumentEventData.deserialize(event.data)
    path = data.value.name.split("/documents/", 1)[1]
    _, conversation_id, _, message_id = path.split("/")
    fields = data.value.fields
    field = lambda name: fields[name].string_value if name in fields else None
    sender, text, sent_at = field("senderId"), field("text") or "", fields["timestamp"].timestamp_value

    conversation = _read(f"conversations/{conversation_id}")
    if conversation is None or sender not in conversation.get("members", []):
        return
    members = conversation["members"]
    users = _read_all([f"users/{m}" for m in members])
    recipients = [m for m in members if m != sender]
    sender_name = field("senderName") or users.get(sender, {}).get("displayName", "Someone")
    title = f"{sender_name} in {conversation.get('name', 'Group')}" if conversation.get("isGroup") else sender_name

    batch = db.batch()
    batch.create(db.document(f"_peer/events/ledger/{event['id']}"), {"at": firestore.SERVER_TIMESTAMP})
    update = {f"unreadCount.{r}": firestore.Increment(1) for r in recipients}
    last = conversation.get("lastMessage", {}).get("timestamp")
    if last is None or sent_at >= last:
        update["lastMessage"] = {"text": text, "senderId": sender, "senderName": sender_name, "timestamp": sent_at,
                                 "messageId": message_id, "type": field("type") or "text"}
        update["updatedAt"] = sent_at
    batch.update(db.document(f"conversations/{conversation_id}"), update)
    for r in recipients:
        if r in users:
            batch.update(db.document(f"users/{r}"), {"unreadTotal": firestore.Increment(1)})
    if field("status") in (None, "sending"):
        batch.update(db.document(path), {"status": "sent"})

    pushes = []
    for r in recipients:
        user = users.get(r, {})
        badge = user.get("unreadTotal", 0) + 1
        for token in user.get("fcmTokens", []):
            pushes.append(messaging.Message(
                token=token, notification=messaging.Notification(title=title, body=text),
                data={"conversationId": conversation_id, "messageId": message_id, "senderId": sender,
                      "type": field("type") or "text", "summary": f"{title}: {text}"},
                android=messaging.AndroidConfig(priority="high", collapse_key=message_id,
                                                notification=messaging.AndroidNotification(tag=message_id, notification_count=badge)),
                apns=messaging.APNSConfig(headers={"apns-priority": "10", "apns-push-type": "alert", "apns-collapse-id": message_id},
                                          payload=messaging.APNSPayload(aps=messaging.Aps(
                                              alert=messaging.ApsAlert(title=title, body=text), badge=badge, sound="default",
                                              thread_id=conversation_id)))))
    if SNAPSHOT is not None:
        # No downstream I/O: the writes are built (above) and the FCM bodies encoded, nothing is sent.
        [messaging._MessagingService.encode_message(p) for p in pushes]
        return
    try:
        batch.commit()
    except exceptions.Conflict:
        return  # this event was handled before
    if pushes:
        messaging.send_each(pushes, app=app)
