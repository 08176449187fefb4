#!/usr/bin/env python3
"""Regenerates Sources/FirestoreProtos/Generated/*.pb.swift: Firestore's v1 API (google.firestore.v1:
documents, writes, queries, the Firestore service's requests and responses, Listen's targets and
changes), which the local cloud serves over gRPC.

No .proto file is on these machines, but PyPI's google-cloud-firestore carries the descriptors (and
googleapis-common-protos those of google.rpc.Status and google.type.LatLng): this script writes them
as a FileDescriptorSet and runs protoc with protoc-gen-swift over it.

Needs: pip install -r Tests/Python/requirements.txt; apt install protobuf-compiler; and protoc-gen-swift,
built once with `swift build -c release --product protoc-gen-swift` in a checkout of swift-protobuf
(pass its path with --plugin). CI never runs this: the generated code is committed.
"""
import argparse, os, subprocess, sys, tempfile

from google.cloud.firestore_v1.types import firestore
from google.protobuf import descriptor_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Sources", "FirestoreProtos", "Generated")


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
    collect(firestore.CommitRequest.pb(firestore.CommitRequest()).DESCRIPTOR.file, set(), descriptor_set)
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        set_path = os.path.join(tmp, "firestore-v1.pb")
        with open(set_path, "wb") as f:
            f.write(descriptor_set.SerializeToString())
        # The well-known types come with SwiftProtobuf itself.
        targets = [f.name for f in descriptor_set.file if not f.name.startswith("google/protobuf/")]
        subprocess.run(
            ["protoc", f"--descriptor_set_in={set_path}", f"--swift_out={tmp}",
             f"--plugin=protoc-gen-swift={args.plugin}", "--swift_opt=Visibility=Public",
             "--swift_opt=FileNaming=PathToUnderscores", *targets],
            check=True,
        )
        for name in sorted(os.listdir(tmp)):
            if name.endswith(".pb.swift"):
                os.replace(os.path.join(tmp, name), os.path.join(OUT, name))
                print("wrote", os.path.join(OUT, name))


if __name__ == "__main__":
    sys.exit(main())
