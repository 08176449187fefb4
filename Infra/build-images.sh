#!/usr/bin/env bash
# Builds Herald's images with buildah, and optionally pushes them: one per function
# (localhost/herald-onmessagecreated, …: that function's executable alone, `serve` by default) and
# localhost/herald (the developer tool: `herald dev` in a container, as Infra/compose.yaml runs it).
#   Infra/build-images.sh [--from-host] [--push REPOSITORY] [--dry-run] [PRODUCT ...]
# --dry-run prints each step (`+ command`) instead of running it.
# --from-host builds the binaries here (Infra/link/swift-build-release) and puts each on
# `FROM scratch` with rootfs.sh, for machines that cannot pull a Swift base image. Without a Docker
# engine, buildah runs with the vfs driver and chroot isolation. Prints each image's size at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
FROM_HOST=false
PUSH=""
DRY_RUN=false
PRODUCTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --from-host) FROM_HOST=true; shift ;;
    --push) PUSH=${2:?--push needs a repository}; shift 2 ;;
    --dry-run) DRY_RUN=true; shift ;;
    -*) echo "usage: $0 [--from-host] [--push REPOSITORY] [--dry-run] [PRODUCT ...]" >&2; exit 2 ;;
    *) PRODUCTS+=("$1"); shift ;;
  esac
done
# The functions as FunctionCatalog.all declares them (written by `swift run herald infra`), and the developer tool.
source Infra/functions.sh
[ ${#PRODUCTS[@]} -gt 0 ] || PRODUCTS=("${FUNCTIONS[@]}" herald)
step() { if $DRY_RUN; then echo "+ $*"; else "$@"; fi; }
$DRY_RUN || command -v buildah >/dev/null 2>&1 || { echo "error: buildah is not installed (apt-get install buildah)" >&2; exit 3; }
BUILDAH=(buildah --storage-driver vfs)
image_of() { if [ "$1" = herald ]; then echo herald; else echo "herald-$(echo "$1" | tr '[:upper:]' '[:lower:]')"; fi; }
SCRATCH=${HERALD_RELEASE_BUILD:-.build-release}
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
for product in "${PRODUCTS[@]}"; do
  tag="localhost/$(image_of "$product"):latest"
  if $FROM_HOST; then
    step Infra/link/swift-build-release "$product" --scratch-path "$SCRATCH"
    # herald's image carries the function executables (built with it), which `herald dev` starts.
    more=()
    if [ "$product" = herald ]; then for function in "${FUNCTIONS[@]}"; do more+=("$SCRATCH/release/$function"); done; fi
    step bash Infra/image/rootfs.sh "$SCRATCH/release/$product" "$context/rootfs" app "${more[@]}"
    step "${BUILDAH[@]}" bud --isolation chroot -t "$tag" -f Infra/image/Containerfile.prebuilt "$context"
  else
    step "${BUILDAH[@]}" bud --isolation chroot --build-arg PRODUCT="$product" -t "$tag" -f Infra/Containerfile .
  fi
  if [ -n "$PUSH" ]; then
    step "${BUILDAH[@]}" push "$tag" "docker://$PUSH/$(image_of "$product"):latest"
  fi
done
$DRY_RUN && exit 0
for product in "${PRODUCTS[@]}"; do
  "${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' "localhost/$(image_of "$product"):latest"
done
