"""Firestore's REST API served by calling a Firestore endpoint over gRPC: the inverse of what
`herald dev` does with a gRPC call. The differential test sends the same REST requests through this
bridge to Google's emulator and to Herald, so both answer over gRPC: the same operations must give
the same results on that transport too.

Serves the calls Herald's Firestore client makes (commit, batchGet, runQuery, runAggregationQuery,
beginTransaction, rollback); a gRPC error becomes Google's REST error body with the status's name.

Usage: grpc_rest_bridge.py TARGET_HOST:PORT   (prints "listening on 127.0.0.1:PORT")
"""
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from google.cloud.firestore_v1.types import firestore as fs

target = sys.argv[1]
channel = grpc.insecure_channel(target)

# REST method → (gRPC method, request type, response type, server-streaming, field the path fills).
METHODS = {
    "commit": ("Commit", fs.CommitRequest, fs.CommitResponse, False, "database"),
    "batchGet": ("BatchGetDocuments", fs.BatchGetDocumentsRequest, fs.BatchGetDocumentsResponse, True, "database"),
    "runQuery": ("RunQuery", fs.RunQueryRequest, fs.RunQueryResponse, True, "parent"),
    "runAggregationQuery": ("RunAggregationQuery", fs.RunAggregationQueryRequest, fs.RunAggregationQueryResponse, True, "parent"),
    "beginTransaction": ("BeginTransaction", fs.BeginTransactionRequest, fs.BeginTransactionResponse, False, "database"),
    "rollback": ("Rollback", fs.RollbackRequest, None, False, "database"),
}

HTTP_STATUS = {
    "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "UNIMPLEMENTED": 501, "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


def as_json(message_type, message):
    return json.loads(message_type.to_json(message, use_integers_for_enums=False, always_print_fields_with_no_presence=False))


class Bridge(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        resource, _, method = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).removeprefix("/v1/").rpartition(":")
        if method not in METHODS:
            return self.answer(404, {"error": {"code": 404, "status": "NOT_FOUND", "message": f"not bridged: {method}"}})
        name, request_type, response_type, streaming, path_field = METHODS[method]
        request = request_type.from_json(body or b"{}")
        setattr(request, path_field, resource.removesuffix("/documents") if path_field == "database" else resource)
        path = f"/google.firestore.v1.Firestore/{name}"
        serializer = request_type.serialize
        deserializer = response_type.deserialize if response_type else (lambda data: None)
        metadata = [("authorization", self.headers.get("Authorization", "Bearer owner"))]
        try:
            if streaming:
                call = channel.unary_stream(path, request_serializer=serializer, response_deserializer=deserializer)
                answer = [as_json(response_type, item) for item in call(request, metadata=metadata, timeout=30)]
            else:
                call = channel.unary_unary(path, request_serializer=serializer, response_deserializer=deserializer)
                result = call(request, metadata=metadata, timeout=30)
                answer = as_json(response_type, result) if response_type else {}
        except grpc.RpcError as error:
            status = error.code().name
            code = HTTP_STATUS.get(status, 500)
            return self.answer(code, {"error": {"code": code, "status": status, "message": error.details() or ""}})
        self.answer(200, answer)


server = ThreadingHTTPServer(("127.0.0.1", 0), Bridge)
print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
