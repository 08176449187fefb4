#!/usr/bin/env python3
"""Google's google-events package as an oracle for Herald's Firestore event decoding.

  generate N SEED  -> JSON list of cases: random DocumentEventData built and serialized by Google's
                      library ("protobuf": base64, "json": proto3 JSON, "jsonSnake": snake_case JSON)
                      and "neutral": what the values are, in a form both sides can compute.
  decode           -> reads a JSON list of base64 DocumentEventData from stdin (made by Herald) and
                      prints the neutral form of each, as Google's library parses it.
Neutral values: ["null"], ["bool", b], ["int", "123"], ["double", "<ieee bits>"|"nan"], ["ts", s, n],
["str", s], ["bytes", hex], ["ref", s], ["geo", bits, bits], ["array", [..]], ["map", {k: ..}].
"""
import base64, json, math, random, struct, sys

from google.events.cloud.firestore_v1 import DocumentEventData
from google.protobuf import json_format

PREFIX = "projects/p-x/databases/(default)/documents/"


def bits(d):
    return "nan" if math.isnan(d) else str(struct.unpack("<Q", struct.pack("<d", d))[0])


def neutral_value(v):
    kind = v.WhichOneof("value_type")
    if kind == "null_value": return ["null"]
    if kind == "boolean_value": return ["bool", v.boolean_value]
    if kind == "integer_value": return ["int", str(v.integer_value)]
    if kind == "double_value": return ["double", bits(v.double_value)]
    if kind == "timestamp_value": return ["ts", v.timestamp_value.seconds, v.timestamp_value.nanos]
    if kind == "string_value": return ["str", v.string_value]
    if kind == "bytes_value": return ["bytes", v.bytes_value.hex()]
    if kind == "reference_value": return ["ref", v.reference_value]
    if kind == "geo_point_value": return ["geo", bits(v.geo_point_value.latitude), bits(v.geo_point_value.longitude)]
    if kind == "array_value": return ["array", [neutral_value(x) for x in v.array_value.values]]
    if kind == "map_value": return ["map", {k: neutral_value(x) for k, x in v.map_value.fields.items()}]
    raise ValueError(kind)


def neutral_doc(pb, present):
    if not present or (pb.name == "" and len(pb.fields) == 0):
        return None
    return {"name": pb.name, "fields": {k: neutral_value(v) for k, v in pb.fields.items()},
            "createTime": [pb.create_time.seconds, pb.create_time.nanos] if pb.HasField("create_time") else None,
            "updateTime": [pb.update_time.seconds, pb.update_time.nanos] if pb.HasField("update_time") else None}


def neutral(pb):
    return {"value": neutral_doc(pb.value, pb.HasField("value")),
            "oldValue": neutral_doc(pb.old_value, pb.HasField("old_value")),
            # Herald reads an empty mask as no mask (Google's emulator sends empty masks on updates).
            "updateMask": list(pb.update_mask.field_paths) or None}


def random_string(rng):
    pool = ["a", "Z", "0", " ", "é", "e\u0301", "👩‍👩‍👧", "🍝", "\"", "\\", "\n", "\u0000", "中", "`", ".", "/", "\u2028"]
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 12)))


def random_value(rng, depth):
    kinds = ["null", "bool", "int", "double", "ts", "str", "bytes", "ref", "geo"] + (["array", "map"] if depth < 3 else [])
    k = rng.choice(kinds)
    if k == "null": return {"nullValue": None}
    if k == "bool": return {"booleanValue": rng.random() < 0.5}
    if k == "int": return {"integerValue": str(rng.choice([0, 1, -1, 2**53 + 1, -2**63, 2**63 - 1, rng.randint(-2**63, 2**63 - 1)]))}
    if k == "double":
        d = rng.choice([0.0, -0.0, 0.1, 1e300, -1e-300, 5e-324, float("nan"), float("inf"), float("-inf"), rng.uniform(-1e9, 1e9)])
        return {"doubleValue": d}
    if k == "ts":
        seconds = rng.randint(-62135596800, 253402300799)
        return {"timestampValue": {"seconds": seconds, "nanos": rng.choice([0, 1, 999999999, rng.randint(0, 999999999)])}}
    if k == "str": return {"stringValue": random_string(rng)}
    if k == "bytes": return {"bytesValue": bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 20)))}
    if k == "ref": return {"referenceValue": PREFIX + "users/u" + str(rng.randint(0, 99))}
    if k == "geo": return {"geoPointValue": {"latitude": rng.uniform(-90, 90), "longitude": rng.uniform(-180, 180)}}
    if k == "array": return {"arrayValue": {"values": [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]}}
    return {"mapValue": {"fields": {random_string(rng) or "k": random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}}}


def to_pb_value(v, pb):
    """Builds a Value message from the dict (json_format can't take raw NaN or bytes)."""
    (k, x), = v.items()
    if k == "nullValue": pb.null_value = 0
    elif k == "booleanValue": pb.boolean_value = x
    elif k == "integerValue": pb.integer_value = int(x)
    elif k == "doubleValue": pb.double_value = x
    elif k == "timestampValue": pb.timestamp_value.seconds = x["seconds"]; pb.timestamp_value.nanos = x["nanos"]
    elif k == "stringValue": pb.string_value = x
    elif k == "bytesValue": pb.bytes_value = x
    elif k == "referenceValue": pb.reference_value = x
    elif k == "geoPointValue": pb.geo_point_value.latitude = x["latitude"]; pb.geo_point_value.longitude = x["longitude"]
    elif k == "arrayValue":
        pb.array_value.SetInParent()
        for item in x["values"]: to_pb_value(item, pb.array_value.values.add())
    elif k == "mapValue":
        pb.map_value.SetInParent()
        for key, item in x["fields"].items(): to_pb_value(item, pb.map_value.fields[key])


def random_doc(rng, pb, n):
    pb.name = PREFIX + f"conversations/c{n}/messages/m{rng.randint(0, 999)}"
    for _ in range(rng.randint(0, 6)):
        to_pb_value(random_value(rng, 0), pb.fields[random_string(rng) or "f"])
    pb.create_time.seconds = rng.randint(0, 2**33); pb.create_time.nanos = rng.randint(0, 999999999)
    pb.update_time.seconds = pb.create_time.seconds + 1


def generate(count, seed):
    rng = random.Random(seed)
    cases = []
    for n in range(count):
        pb = DocumentEventData.pb(DocumentEventData())
        shape = rng.choice(["created", "updated", "deleted"])
        if shape in ("created", "updated"): random_doc(rng, pb.value, n)
        if shape in ("updated", "deleted"):
            random_doc(rng, pb.old_value, n)
            if shape == "updated": pb.old_value.name = pb.value.name
        if shape == "updated": pb.update_mask.field_paths.extend(sorted(pb.value.fields.keys())[:2])
        if shape == "deleted": pb.ClearField("value")
        cases.append({
            "kind": shape, "document": (pb.value.name or pb.old_value.name)[len(PREFIX):],
            "protobuf": base64.b64encode(pb.SerializeToString()).decode(),
            "json": json_format.MessageToDict(pb),
            "jsonSnake": json_format.MessageToDict(pb, preserving_proto_field_name=True),
            "neutral": neutral(pb),
        })
    json.dump(cases, sys.stdout, ensure_ascii=False)


def decode():
    out = []
    for item in json.load(sys.stdin):
        pb = DocumentEventData.pb(DocumentEventData())
        pb.ParseFromString(base64.b64decode(item))
        out.append(neutral(pb))
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    if sys.argv[1] == "generate": generate(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "decode": decode()
    else: sys.exit(__doc__)
