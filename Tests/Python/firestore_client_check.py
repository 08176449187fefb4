"""Drives a Firestore endpoint with Google's own Python client (google-cloud-firestore, on its REST
transport or its default, gRPC) and prints one JSON line of results for the Swift test to check.

Usage: firestore_client_check.py HOST:PORT PROJECT [rest|grpc]
"""
import json
import os
import sys

from google.api_core.exceptions import Conflict
from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore
from google.cloud.firestore_v1 import transforms
from google.cloud.firestore_v1.base_query import FieldFilter, Or
from google.cloud.firestore_v1.services.firestore import FirestoreClient
from google.cloud.firestore_v1.services.firestore.transports.rest import FirestoreRestTransport

host, project = sys.argv[1], sys.argv[2]
transport = sys.argv[3] if len(sys.argv) > 3 else "rest"
if transport == "grpc":
    # The client's default: gRPC to the emulator's host, as an app configured for an emulator runs.
    os.environ["FIRESTORE_EMULATOR_HOST"] = host
    db = firestore.Client(project=project)
else:
    db = firestore.Client(project=project, credentials=AnonymousCredentials())
    # The high-level client speaks gRPC; give it the GAPIC client over the REST transport instead.
    db._firestore_api_internal = FirestoreClient(
        transport=FirestoreRestTransport(host=host, credentials=AnonymousCredentials(), url_scheme="http"))

results = {}
users = db.collection("users")
users.document("alice").set({"name": "Alice", "age": 31, "tags": ["a"], "unread": 0})
users.document("bob").set({"name": "Bob", "age": 25, "tags": ["b"], "unread": 2})
users.document("carol").set({"name": "Carol", "age": 40, "tags": ["a", "c"]})
users.document("alice").update({"unread": firestore.Increment(3), "tags": firestore.ArrayUnion(["z"]),
                                "seen": firestore.SERVER_TIMESTAMP})
alice = users.document("alice").get()
results["alice"] = {k: v for k, v in alice.to_dict().items() if k != "seen"}
results["aliceSeenIsTime"] = hasattr(alice.get("seen"), "timestamp")
results["missingExists"] = users.document("nobody").get().exists

results["older"] = [d.id for d in users.where(filter=FieldFilter("age", ">", 30)).order_by("age").stream()]
results["tagA"] = [d.id for d in users.where(filter=FieldFilter("tags", "array_contains", "a")).stream()]
results["inNames"] = [d.id for d in users.where(filter=FieldFilter("name", "in", ["Bob", "Carol"])).stream()]
results["orQuery"] = sorted(d.id for d in users.where(filter=Or([FieldFilter("age", "<", 30), FieldFilter("name", "==", "Carol")])).stream())
results["limitDesc"] = [d.id for d in users.order_by("age", direction=firestore.Query.DESCENDING).limit(2).stream()]
results["startAfter"] = [d.id for d in users.order_by("age").start_after({"age": 25}).stream()]
results["count"] = users.count().get()[0][0].value

try:
    users.document("alice").create({"name": "again"})
    results["createTwice"] = "accepted"
except Conflict:  # HTTP 409 over REST; its subclass AlreadyExists over gRPC
    results["createTwice"] = "Conflict"
except Exception as error:
    results["createTwice"] = type(error).__name__

batch = db.batch()
batch.set(db.collection("rooms").document("r1"), {"title": "Family"})
batch.set(db.collection("rooms").document("r1").collection("messages").document("m1"), {"text": "hi"})
batch.delete(users.document("carol"))
batch.commit()
results["afterBatch"] = sorted(d.id for d in users.stream())
results["groupMessages"] = [d.reference.path for d in db.collection_group("messages").stream()]


@firestore.transactional
def move(transaction, source, target):
    snapshot = source.get(transaction=transaction)
    amount = snapshot.get("unread")
    transaction.update(source, {"unread": 0})
    transaction.update(target, {"unread": firestore.Increment(amount)})


move(db.transaction(), users.document("alice"), users.document("bob"))
results["afterTransaction"] = {d.id: d.get("unread") for d in users.stream()}
results["getAll"] = sorted(s.id for s in db.get_all([users.document("alice"), users.document("nobody")]) if s.exists)
print(json.dumps(results, sort_keys=True))
