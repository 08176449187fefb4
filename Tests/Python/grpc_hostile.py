"""Hostile and unusual gRPC calls to a Firestore endpoint (HOST:PORT), with grpcio's raw channel:
prints one JSON object of {case: status code name} for the Swift test to check.

Usage: grpc_hostile.py HOST:PORT PROJECT
"""
import json
import sys

import grpc

host, project = sys.argv[1], sys.argv[2]
channel = grpc.insecure_channel(host)
metadata = [("authorization", "Bearer owner")]
database = f"projects/{project}/databases/(default)"


def call(method, payload, stream=False, compression=None):
    path = f"/google.firestore.v1.Firestore/{method}"
    try:
        if stream:
            responses = channel.unary_stream(path)(payload, metadata=metadata, timeout=10, compression=compression)
            list(responses)
        else:
            channel.unary_unary(path)(payload, metadata=metadata, timeout=10, compression=compression)
        return "OK"
    except grpc.RpcError as error:
        return error.code().name


def field(number, value):
    """A length-delimited protobuf field."""
    return bytes([number << 3 | 2, len(value)]) + value


results = {
    "garbage": call("Commit", b"\xff\xff\xff\xff"),
    "unknownMethod": call("Frobnicate", b""),
    "otherService": None,
    "emptyCommit": call("Commit", field(1, database.encode())),
    "badDatabase": call("Commit", field(1, b"projects/other-project/databases/(default)")),
    "runQueryWithoutQuery": call("RunQuery", field(1, f"{database}/documents".encode()), stream=True),
    "write": call("Write", field(1, database.encode()), stream=True),
    # Refused as the message's prefix is read, with the reason: not the call's own end, cancelled.
    "compressed": call("Commit", field(1, database.encode()) * 64, compression=grpc.Compression.Gzip),
    "oversized": call("Commit", b"\x0a\x81\x80\x80\x08" + bytes(16 * 2**20 + 1)),
}
try:
    channel.unary_unary("/google.longrunning.Operations/ListOperations")(b"", metadata=metadata, timeout=10)
    results["otherService"] = "OK"
except grpc.RpcError as error:
    results["otherService"] = error.code().name
print(json.dumps(results))
