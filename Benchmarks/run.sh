#!/usr/bin/env bash
# Herald beside its Python peer, in one run: installs wrk and buildah (apt) and the peer (PyPI, into
# Benchmarks/peer/.venv), builds Herald's release binaries as the images ship them (static Swift
# runtime) and, with buildah, the images; builds a minimal C server as the floor for start-up; then
# prints one table (Benchmarks/compare.py), and a second of busy groups on `herald dev
# --write-rate-limit` (Benchmarks/busy_side_by_side.py).
#   Benchmarks/run.sh [--quick] [--dry-run]
# --dry-run prints the builds and the comparison it would run (`+ command`), installs and runs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --dry-run ] || [ "${2:-}" = --dry-run ]; then
  source Infra/functions.sh
  for product in herald "${FUNCTIONS[@]}" herald-bench; do echo "+ Infra/link/swift-build-release $product"; done
  echo "+ Infra/build-images.sh --from-host"
  echo "+ Benchmarks/compare.py (functions: $(python3 -c 'import sys; sys.path.insert(0, "Benchmarks"); import compare; print(" ".join(compare.FUNCTIONS))'))"
  echo "+ Benchmarks/busy_side_by_side.py"
  exit 0
fi
for tool in wrk buildah; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool" >/dev/null || echo "could not install $tool" >&2
  fi
done
if [ ! -x Benchmarks/peer/.venv/bin/functions-framework ]; then
  python3 -m venv Benchmarks/peer/.venv
  Benchmarks/peer/.venv/bin/pip install -q --disable-pip-version-check -r Benchmarks/peer/requirements.txt
fi
SCRATCH=${HERALD_RELEASE_BUILD:-.build-release}
# The functions as FunctionCatalog.all declares them (written by `swift run herald infra`).
source Infra/functions.sh
for product in herald "${FUNCTIONS[@]}" herald-bench; do
  Infra/link/swift-build-release "$product" --scratch-path "$SCRATCH" >&2
done
# The images' sizes are measured when buildah can build them here (Infra/build-images.sh reuses the build above).
if command -v buildah >/dev/null 2>&1; then
  Infra/build-images.sh --from-host >&2 || echo "the images did not build; their sizes are not measured" >&2
fi
Benchmarks/peer/.venv/bin/python Benchmarks/compare.py --herald-bin "$SCRATCH/release" --peer-venv Benchmarks/peer/.venv "$@"
echo
exec Benchmarks/peer/.venv/bin/python Benchmarks/busy_side_by_side.py --herald-bin "$SCRATCH/release" --peer-venv Benchmarks/peer/.venv
