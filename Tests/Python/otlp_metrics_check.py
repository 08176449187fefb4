"""Decodes OTLP/HTTP JSON metric exports with OpenTelemetry's own protobuf definitions (opentelemetry-proto).

stdin: a JSON array of request bodies (strings). stdout: a JSON array of the data points they hold,
as the proto reads them: {service, name, type, attributes, value | count, sum, bucketCounts,
explicitBounds, monotonic, temporality}. Fails on any field the proto does not define or a wrong type,
and on a histogram whose bucket counts do not add up to its count.
"""
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality


def value(any_value):
    return getattr(any_value, any_value.WhichOneof("value"))


def attributes(point):
    return {a.key: value(a.value) for a in point.attributes}


def main():
    points = []
    for body in json.load(sys.stdin):
        message = json_format.ParseDict(json.loads(body), ExportMetricsServiceRequest())
        for resource_metrics in message.resource_metrics:
            service = {a.key: value(a.value) for a in resource_metrics.resource.attributes}.get("service.name")
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    base = {"service": service, "name": metric.name, "type": kind, "unit": metric.unit}
                    if kind == "sum":
                        for p in metric.sum.data_points:
                            points.append({**base, "attributes": attributes(p), "value": p.as_double, "monotonic": metric.sum.is_monotonic,
                                           "temporality": AggregationTemporality.Name(metric.sum.aggregation_temporality)})
                    elif kind == "gauge":
                        for p in metric.gauge.data_points:
                            points.append({**base, "attributes": attributes(p), "value": p.as_double})
                    elif kind == "histogram":
                        for p in metric.histogram.data_points:
                            if sum(p.bucket_counts) != p.count or len(p.bucket_counts) != len(p.explicit_bounds) + 1:
                                raise ValueError(f"{metric.name}: buckets {list(p.bucket_counts)} do not add up to {p.count}")
                            points.append({**base, "attributes": attributes(p), "count": p.count, "sum": p.sum,
                                           "bucketCounts": list(p.bucket_counts), "explicitBounds": list(p.explicit_bounds),
                                           "temporality": AggregationTemporality.Name(metric.histogram.aggregation_temporality)})
                    else:
                        raise ValueError(f"{metric.name}: unexpected {kind}")
    json.dump(points, sys.stdout)


if __name__ == "__main__":
    main()
