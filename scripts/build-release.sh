#!/usr/bin/env bash
# Builds products for release the way narrator ships: optimized, the Swift runtime and Foundation
# linked statically (no libswiftCore, libFoundation... to map and relocate at each start).
# docs/benchmarks.md, Process start, says what each step saves. (Package.swift links the runtime
# statically in any release build on Linux; --static-swift-stdlib here says it again.)
#
# Usage: scripts/build-release.sh [PRODUCT ...]     (default: narrator)
# Prints the folder of the built binaries; the build's output goes to stderr only when it fails.
# Environment: SCRATCH  the scratch path (default .build-bench, the benchmarks' build)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scratch=${SCRATCH:-$repo/.build-bench}
flags=(-c release --static-swift-stdlib --scratch-path "$scratch")
cd "$repo"
products=("$@")
[[ ${#products[@]} -gt 0 ]] || products=(narrator)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for product in "${products[@]}"; do
    swift build "${flags[@]}" --product "$product" >"$log" 2>&1 || {
        cat "$log" >&2
        printf 'build-release: building %s failed\n' "$product" >&2
        exit 1
    }
done
swift build "${flags[@]}" --show-bin-path
