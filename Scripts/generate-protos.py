#!/usr/bin/env python3
"""Regenerates Sources/FirestoreEventsProtobuf/Generated/*.pb.swift from Google's published descriptors.

Eventarc's Firestore payload is google.events.cloud.firestore.v1.DocumentEventData. No .proto file is
on these machines, but PyPI's google-events package carries the descriptors: this script writes them
as a FileDescriptorSet and runs protoc with protoc-gen-swift over it.

Needs: pip install google-events; apt install protobuf-compiler; and protoc-gen-swift, built once with
`swift build -c release --product protoc-gen-swift` in a checkout of swift-protobuf (pass its path
with --plugin). CI never runs this: the generated code is committed.
"""
import argparse, os, subprocess, sys, tempfile

from google.events.cloud.firestore_v1 import DocumentEventData
from google.protobuf import descriptor_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Sources", "FirestoreEventsProtobuf", "Generated")


def collect(file_descriptor, seen, out):
    if file_descriptor.name in seen:
        return
    seen.add(file_descriptor.name)
    for dependency in file_descriptor.dependencies:
        collect(dependency, seen, out)
    proto = descriptor_pb2.FileDescriptorProto()
    file_descriptor.CopyToProto(proto)
    out.file.append(proto)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plugin", required=True, help="path to protoc-gen-swift")
    args = parser.parse_args()
    descriptor_set = descriptor_pb2.FileDescriptorSet()
    collect(DocumentEventData.pb(DocumentEventData()).DESCRIPTOR.file, set(), descriptor_set)
    with tempfile.TemporaryDirectory() as tmp:
        set_path = os.path.join(tmp, "firestore-events.pb")
        with open(set_path, "wb") as f:
            f.write(descriptor_set.SerializeToString())
        # Timestamp and Struct come with SwiftProtobuf itself; generate only Google's event and LatLng types.
        targets = [f.name for f in descriptor_set.file if not f.name.startswith("google/protobuf/")]
        subprocess.run(
            ["protoc", f"--descriptor_set_in={set_path}", f"--swift_out={tmp}",
             f"--plugin=protoc-gen-swift={args.plugin}", "--swift_opt=Visibility=Internal",
             "--swift_opt=FileNaming=PathToUnderscores", *targets],
            check=True,
        )
        for name in os.listdir(tmp):
            if name.endswith(".pb.swift"):
                os.replace(os.path.join(tmp, name), os.path.join(OUT, name))
                print("wrote", os.path.join(OUT, name))


if __name__ == "__main__":
    sys.exit(main())
