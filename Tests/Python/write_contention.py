"""Commits to one document at once over gRPC (grpcio's raw channel and Google's own request types),
as fast as they come: prints {"codes": {STATUS: count}, "aborted": first ABORTED message} for the
Swift test of herald dev's write-rate limit.

Usage: write_contention.py HOST:PORT PROJECT COUNT
"""
import json
import sys
from concurrent.futures import ThreadPoolExecutor

import grpc
from google.cloud.firestore_v1.types import CommitRequest, Document, Value, Write

host, project, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
channel = grpc.insecure_channel(host)
database = f"projects/{project}/databases/(default)"
commit = channel.unary_unary("/google.firestore.v1.Firestore/Commit")


def one(i):
    request = CommitRequest(database=database, writes=[Write(update=Document(
        name=f"{database}/documents/counters/hot-grpc", fields={"n": Value(integer_value=i)}))])
    try:
        commit(CommitRequest.serialize(request), metadata=[("authorization", "Bearer owner")], timeout=30)
        return ("OK", None)
    except grpc.RpcError as error:
        return (error.code().name, error.details())


with ThreadPoolExecutor(count) as pool:
    results = list(pool.map(one, range(count)))
codes = {}
for code, _ in results:
    codes[code] = codes.get(code, 0) + 1
aborted = next((details for code, details in results if code == "ABORTED"), None)
print(json.dumps({"codes": codes, "aborted": aborted}))
