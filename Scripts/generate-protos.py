#!/usr/bin/env python3
"""Regenerates the committed SwiftProtobuf code from Google's published descriptors:

  events     Sources/Firestore/FirestoreEventsProtobuf/Generated: Eventarc's Firestore payload
             (google.events.cloud.firestore.v1.DocumentEventData), from PyPI's google-events
  firestore  Sources/Firestore/FirestoreProtos/Generated: Firestore's v1 API (google.firestore.v1: documents,
             writes, queries, the Firestore service's requests and responses, Listen's targets and
             changes), which the local cloud serves over gRPC, from google-cloud-firestore (and
             googleapis-common-protos for google.rpc.Status and google.type.LatLng)

No .proto file is on these machines, but those PyPI packages carry the descriptors: this script
writes them as a FileDescriptorSet and runs protoc with protoc-gen-swift over it.

Needs: pip install -r Tests/Python/requirements.txt; apt install protobuf-compiler; and
protoc-gen-swift, built once with `swift build -c release --product protoc-gen-swift` in a checkout
of swift-protobuf (pass its path with --plugin). CI never runs this: the generated code is committed.

Usage: generate-protos.py --plugin PATH [events|firestore ...]   (both when none is named)
"""
import argparse, os, subprocess, sys, tempfile

from google.protobuf import descriptor_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def events_root():
    from google.events.cloud.firestore_v1 import DocumentEventData
    return DocumentEventData.pb(DocumentEventData()).DESCRIPTOR.file


def firestore_root():
    from google.cloud.firestore_v1.types import firestore
    return firestore.CommitRequest.pb(firestore.CommitRequest()).DESCRIPTOR.file


# name → (the file whose dependencies are all generated, output folder, visibility of the types)
TARGETS = {
    "events": (events_root, "Sources/Firestore/FirestoreEventsProtobuf/Generated", "Internal"),
    "firestore": (firestore_root, "Sources/Firestore/FirestoreProtos/Generated", "Public"),
}


def collect(file_descriptor, seen, out):
    if file_descriptor.name in seen:
        return
    seen.add(file_descriptor.name)
    for dependency in file_descriptor.dependencies:
        collect(dependency, seen, out)
    proto = descriptor_pb2.FileDescriptorProto()
    file_descriptor.CopyToProto(proto)
    out.file.append(proto)


def generate(plugin, root, out, visibility):
    descriptor_set = descriptor_pb2.FileDescriptorSet()
    collect(root(), set(), descriptor_set)
    out = os.path.join(ROOT, out)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        set_path = os.path.join(tmp, "descriptors.pb")
        with open(set_path, "wb") as f:
            f.write(descriptor_set.SerializeToString())
        # The well-known types (Timestamp, Struct, …) come with SwiftProtobuf itself.
        targets = [f.name for f in descriptor_set.file if not f.name.startswith("google/protobuf/")]
        subprocess.run(
            ["protoc", f"--descriptor_set_in={set_path}", f"--swift_out={tmp}",
             f"--plugin=protoc-gen-swift={plugin}", f"--swift_opt=Visibility={visibility}",
             "--swift_opt=FileNaming=PathToUnderscores", *targets],
            check=True,
        )
        for name in sorted(os.listdir(tmp)):
            if name.endswith(".pb.swift"):
                os.replace(os.path.join(tmp, name), os.path.join(out, name))
                print("wrote", os.path.join(out, name))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plugin", required=True, help="path to protoc-gen-swift")
    parser.add_argument("targets", nargs="*", help=f"what to generate, of {', '.join(TARGETS)} (all when none is named)")
    args = parser.parse_args()
    unknown = [name for name in args.targets if name not in TARGETS]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)}: choose from {', '.join(TARGETS)}")
    for name in args.targets or TARGETS:
        generate(args.plugin, *TARGETS[name])


if __name__ == "__main__":
    sys.exit(main())
