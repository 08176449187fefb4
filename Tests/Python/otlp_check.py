"""Decodes OTLP/HTTP JSON trace exports with OpenTelemetry's own protobuf definitions (opentelemetry-proto).

stdin: a JSON array of request bodies (strings). stdout: a JSON array of the spans they hold, as the
proto reads them. Fails on any field the proto does not define, a wrong type, or an id of the wrong
length (OTLP's JSON writes trace and span ids as hex, where protobuf's JSON mapping expects base64:
they are converted as a collector does).
"""
import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

ID_LENGTHS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids_to_base64(span):
    for key, length in ID_LENGTHS.items():
        if key in span:
            raw = bytes.fromhex(span[key])
            if len(raw) != length:
                raise ValueError(f"{key} {span[key]!r} is not {length} bytes")
            span[key] = base64.b64encode(raw).decode()


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind)


def main():
    spans = []
    for body in json.load(sys.stdin):
        request = json.loads(body)
        for resource_spans in request.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    hex_ids_to_base64(span)
        message = json_format.ParseDict(request, ExportTraceServiceRequest())
        for resource_spans in message.resource_spans:
            service = {a.key: value(a.value) for a in resource_spans.resource.attributes}.get("service.name")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    if span.end_time_unix_nano < span.start_time_unix_nano:
                        raise ValueError(f"{span.name} ends before it starts")
                    spans.append({
                        "service": service,
                        "name": span.name,
                        "traceId": span.trace_id.hex(),
                        "spanId": span.span_id.hex(),
                        "parentSpanId": span.parent_span_id.hex(),
                        "kind": Span.SpanKind.Name(span.kind),
                        "status": span.status.code,
                        "durationNanos": span.end_time_unix_nano - span.start_time_unix_nano,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                    })
    json.dump(spans, sys.stdout)


if __name__ == "__main__":
    main()
