#!/usr/bin/env bash
# Fuzzes Herald's event decoders and Firestore value codec with libFuzzer for a bounded time.
#   Scripts/fuzz.sh [SECONDS]   (default 60)
# Builds herald-fuzz with coverage instrumentation and AddressSanitizer (in .build-fuzz/), seeds the
# corpus from Tests/Fixtures, runs libFuzzer's driver on it, and fails on the first crash, leaving
# the input in .build-fuzz/crashes/. A crash found becomes a regression test: copy the input to
# Tests/Fixtures/fuzz-regressions/ (FuzzTests replays that folder on every test run).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
SCRATCH=.build-fuzz
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")
runtime=$(find "$toolchain/lib/clang" "$toolchain/lib/swift/clang" -name 'libclang_rt.fuzzer_no_main-x86_64.a' 2>/dev/null | head -1)
[ -n "$runtime" ] || { echo "error: libFuzzer's runtime (libclang_rt.fuzzer_no_main) is not in this Swift toolchain" >&2; exit 3; }
swift build --product herald-fuzz --scratch-path "$SCRATCH" \
  -Xswiftc -DFUZZING -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
  -Xlinker "$runtime" -Xlinker -lstdc++ 2>&1 | grep -v "Cannot export local symbol" || true
fuzzer="$SCRATCH/debug/herald-fuzz"
[ -x "$fuzzer" ] || { echo "error: the fuzzer did not build" >&2; exit 3; }
# The plain build seeds the corpus (the instrumented one only fuzzes); `swift test` has built it already.
seeder=.build/debug/herald-fuzz
[ -x "$seeder" ] || { swift build --product herald-fuzz >/dev/null; }
mkdir -p "$SCRATCH/corpus" "$SCRATCH/crashes"
"$seeder" seed Tests/Fixtures "$SCRATCH/corpus"
# Inputs up to 4 MiB (an event's documents are at most 1 MiB each), so the large shapes of the seed corpus
# can grow; an input that takes over 10 s to decode counts as a crash (decoding must stay linear).
"$fuzzer" "$SCRATCH/corpus" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=4194304 \
  -artifact_prefix="$SCRATCH/crashes/" -print_final_stats=1
