#!/usr/bin/env bash
# Shows that Herald needs no system SQLite (issue 19): in a private mount namespace where SQLite's
# development files (sqlite3.h, sqlite3ext.h, libsqlite3.so, libsqlite3.a) are removed by overlays
# (the runtime library libsqlite3.so.0 stays: the Swift toolchain itself loads it), as on a stock
# Swift image without libsqlite3-dev, it builds everything from scratch (its own
# scratch path), checks that `herald` loads no libsqlite3, runs the README's first command offline
# until the demo message's pushes are recorded, and runs the tests named by FILTER (default: the
# local cloud's). Needs root (unshare, overlay mounts). About 15 minutes on 2 cores.
#   Scripts/without-system-sqlite.sh [FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${HERALD_IN_NAMESPACE:-}" != 1 ]; then
  exec env HERALD_IN_NAMESPACE=1 unshare --mount --propagation private "$0" "$@"
fi
FILTER=${1:-LocalCloudTests}
SCRATCH=.build-nosqlite
# Each folder is overlaid with a layer that deletes SQLite's development files from it (whiteouts).
hide() {
  local folder=$1
  shift
  local layer
  layer=$(mktemp -d)
  mkdir "$layer/upper" "$layer/work"
  for name in "$@"; do
    if [ -e "$folder/$name" ]; then mknod "$layer/upper/$name" c 0 0; echo "hidden: $folder/$name"; fi
  done
  mount -t overlay overlay -o "lowerdir=$folder,upperdir=$layer/upper,workdir=$layer/work" "$folder"
}
hide /usr/include sqlite3.h sqlite3ext.h
hide /usr/lib/x86_64-linux-gnu libsqlite3.so libsqlite3.a
if printf '#include <sqlite3.h>\nint main(void) { return sqlite3_libversion_number(); }\n' | cc -x c - -o /dev/null -lsqlite3 2>/dev/null; then
  echo "error: the system's SQLite is still usable here" >&2
  exit 1
fi
echo "check: a C program using the system's SQLite no longer builds"
rm -rf "$SCRATCH"
swift build --scratch-path "$SCRATCH" --build-tests
if ldd "$SCRATCH/debug/herald" | grep -i sqlite; then
  echo "error: herald loads a system SQLite" >&2
  exit 1
fi
echo "check: herald loads no libsqlite3"
log=$(mktemp)
"$SCRATCH/debug/herald" dev --ephemeral --port 18787 --seed demo --send 'alice→family: Dinner at 6pm' >"$log" 2>&1 &
dev=$!
trap 'kill "$dev" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 600); do
  if grep -q "push" "$log" && curl -fsS "http://127.0.0.1:18787/herald/fcm/messages" 2>/dev/null | grep -q "Dinner at 6pm"; then break; fi
  sleep 0.1
done
curl -fsS "http://127.0.0.1:18787/herald/fcm/messages" | grep -q "Dinner at 6pm" || { cat "$log" >&2; echo "error: no push recorded" >&2; exit 1; }
echo "check: herald dev --seed demo --send delivered the demo message's pushes"
kill "$dev"
wait "$dev" 2>/dev/null || true
swift test --skip-build --scratch-path "$SCRATCH" --filter "$FILTER"
