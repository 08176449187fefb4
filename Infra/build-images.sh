#!/usr/bin/env bash
# Builds Herald's image (Infra/Containerfile) with buildah, and optionally pushes it.
#   Infra/build-images.sh [--from-host] [--tag NAME] [--push REPOSITORY]
# --from-host builds the binary here (swift build -c release --static-swift-stdlib) and puts it on
# `FROM scratch` with rootfs.sh, for machines that cannot pull a Swift base image. Without a Docker
# engine, buildah runs with the vfs driver and chroot isolation. Prints the image's size at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
FROM_HOST=false
TAG=localhost/herald:latest
PUSH=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from-host) FROM_HOST=true; shift ;;
    --tag) TAG=${2:?--tag needs a value}; shift 2 ;;
    --push) PUSH=${2:?--push needs a repository}; shift 2 ;;
    *) echo "usage: $0 [--from-host] [--tag NAME] [--push REPOSITORY]" >&2; exit 2 ;;
  esac
done
command -v buildah >/dev/null 2>&1 || { echo "error: buildah is not installed (apt-get install buildah)" >&2; exit 3; }
BUILDAH=(buildah --storage-driver vfs)
if $FROM_HOST; then
  SCRATCH=${HERALD_RELEASE_BUILD:-.build-release}
  swift build -c release --product herald --static-swift-stdlib --scratch-path "$SCRATCH"
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
  bash Infra/image/rootfs.sh "$SCRATCH/release/herald" "$context/rootfs"
  "${BUILDAH[@]}" bud --isolation chroot -t "$TAG" -f Infra/image/Containerfile.prebuilt "$context"
else
  "${BUILDAH[@]}" bud --isolation chroot -t "$TAG" -f Infra/Containerfile .
fi
"${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$TAG"
if [ -n "$PUSH" ]; then
  "${BUILDAH[@]}" push "$TAG" "docker://$PUSH/herald:latest"
fi
