#!/usr/bin/env python3
"""Google's published API descriptions and firebase-admin as oracles for the request bodies Herald sends.

  discovery  stdin: [{"api": "fcm"|"firestore", "schema": NAME, "body": {...}}, ...]
             stdout: a list of error lists, one per body: every member must be declared in Google's
             discovery document (shipped in google-api-python-client), with the declared type and enum.
  fcm        stdin: [spec, ...] (token, title, body, data, android{...}, apns{...}, analytics_label)
             stdout: firebase-admin's own encoding of each message, as the v1 API receives it.
"""
import json, os, sys

import googleapiclient


def discovery(api):
    base = os.path.join(os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents")
    with open(os.path.join(base, f"{api}.v1.json")) as f:
        return json.load(f)


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def check(doc, schema, value, path, errors):
    # proto3 JSON: null stands for the default value (and is the canonical google.protobuf.NullValue).
    if value is None:
        return
    if "$ref" in schema:
        return check(doc, doc["schemas"][schema["$ref"]], value, path, errors)
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return errors.append(f"{path}: expected an object")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, member in value.items():
            # proto3 JSON parsers take a field's original snake_case name as well as its lowerCamel name.
            declared = key if key in props else camel(key)
            if declared in props:
                check(doc, props[declared], member, f"{path}.{key}", errors)
            elif extra is not None:
                check(doc, extra, member, f"{path}.{key}", errors)
            else:
                errors.append(f"{path}.{key}: not a field of {schema.get('id', 'this object')}")
    elif kind == "array":
        if not isinstance(value, list):
            return errors.append(f"{path}: expected an array")
        for i, item in enumerate(value):
            check(doc, schema["items"], item, f"{path}[{i}]", errors)
    elif kind == "string":
        if not isinstance(value, str):
            return errors.append(f"{path}: expected a string")
        # Case-insensitive: FCM takes "high" as firebase-admin sends it, though discovery lists "HIGH".
        if "enum" in schema and value.upper() not in [e.upper() for e in schema["enum"]]:
            errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
        if schema.get("format") in ("int64", "uint64"):
            try: int(value)
            except ValueError: errors.append(f"{path}: {value!r} is not an int64")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{path}: expected an integer")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) and value not in ("NaN", "Infinity", "-Infinity"):
            errors.append(f"{path}: expected a number")
    elif kind == "boolean":
        if not isinstance(value, bool):
            errors.append(f"{path}: expected a boolean")
    elif kind == "any":
        pass


def run_discovery():
    docs = {}
    out = []
    for item in json.load(sys.stdin):
        doc = docs.setdefault(item["api"], discovery(item["api"]))
        errors = []
        if item["schema"] not in doc["schemas"]:
            errors.append(f"no schema {item['schema']}")
        else:
            check(doc, {"$ref": item["schema"]}, item["body"], item["schema"], errors)
        out.append(errors)
    json.dump(out, sys.stdout)


def run_fcm():
    from firebase_admin import messaging
    from firebase_admin import _messaging_encoder
    import warnings
    warnings.simplefilter("ignore")
    out = []
    for spec in json.load(sys.stdin):
        android = apns = None
        if "android" in spec:
            a = spec["android"]
            note = None
            keys = ("tag", "channel_id", "notification_count", "click_action", "title_loc_key", "title_loc_args", "body_loc_key", "body_loc_args")
            if any(k in a for k in keys):
                note = messaging.AndroidNotification(**{k: a.get(k) for k in keys})
            android = messaging.AndroidConfig(priority=a.get("priority"), collapse_key=a.get("collapse_key"), notification=note)
        if "apns" in spec:
            p = spec["apns"]
            headers = {k: v for k, v in {"apns-priority": p.get("priority"), "apns-push-type": p.get("push_type"),
                                         "apns-collapse-id": p.get("collapse_id")}.items() if v is not None}
            alert_keys = ("title", "body", "title_loc_key", "title_loc_args", "loc_key", "loc_args")
            alert = messaging.ApsAlert(**{k: p.get(k) for k in alert_keys}) if ("title" in p or "body" in p) else None
            aps = messaging.Aps(alert=alert, badge=p.get("badge"), sound=p.get("sound"), thread_id=p.get("thread_id"), category=p.get("category"),
                                mutable_content=p.get("mutable_content") or None, content_available=p.get("content_available") or None)
            apns = messaging.APNSConfig(headers=headers or None, payload=messaging.APNSPayload(aps=aps))
        notification = None
        if "title" in spec or "body" in spec:
            notification = messaging.Notification(title=spec.get("title"), body=spec.get("body"))
        message = messaging.Message(token=spec["token"], notification=notification, data=spec.get("data") or None,
                                    android=android, apns=apns,
                                    fcm_options=messaging.FCMOptions(analytics_label=spec["analytics_label"]) if "analytics_label" in spec else None)
        out.append(_messaging_encoder.MessageEncoder().default(message))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    {"discovery": run_discovery, "fcm": run_fcm}[sys.argv[1]]()
