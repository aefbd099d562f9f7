#!/usr/bin/env bash
# Builds narrator.wasm: the engine (Sources/NarratorEngine) and its exports (Web/NarratorWasm)
# with Embedded Swift for wasm32, linked with the toolchain's wasm-ld against Debian's wasi-libc
# (malloc, memcmp, pow; its WASI imports are narrator.js's) and compiler-rt's builtins, then
# shrunk by binaryen's wasm-opt -Oz.
# Sonic (speed) is compiled in from Debian's source of the libsonic-dev installed, fetched once
# and cached in .build-wasm/sonic-VERSION (APT_SOURCES names another deb822 sources file to
# derive the deb-src list from).
# Prints the folder it wrote narrator.wasm and the modules of Web/ (narrator.js,
# narrator-worklet.js, narrator-web.js) to (.build-wasm unless OUT is set).
#
# Usage: [OUT=dir] scripts/build-wasm.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$repo/.build-wasm}
swiftc=$(command -v swiftc)
toolchain=$(dirname "$(dirname "$(readlink -f "$swiftc")")")
wasm_ld="$toolchain/bin/wasm-ld"
unicode="$toolchain/lib/swift/embedded/wasm32-unknown-none-wasm/libswiftUnicodeDataTables.a"
libc=/usr/lib/wasm32-wasi/libc.a
builtins=$(ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a 2>/dev/null | head -1)
wasm_opt=$(command -v wasm-opt || true)
for need in "$wasm_ld" "$wasm_opt" "$unicode" "$libc" "$builtins"; do
    [[ -n "$need" && -e "$need" ]] || { echo "build-wasm: missing ${need:-libclang_rt.builtins-wasm32.a} (make deps installs wasi-libc, libclang-rt-dev-wasm32 and binaryen)" >&2; exit 1; }
done
mkdir -p "$out"

# Sonic (Apache-2.0), the speed stretcher, compiled for wasm32 from Debian's source of the very
# version the native build links (libsonic-dev): fetched once with apt's ordinary client from a
# private list of deb-src entries derived from the system's (nothing under /etc/apt changes),
# checked against the .dsc's SHA-256, and cached (never committed) in .build-wasm/sonic-VERSION.
sonic_version=$(dpkg-query -W -f='${Version}' libsonic-dev 2>/dev/null) ||
    { echo "build-wasm: missing libsonic-dev (make deps installs it; its version is the Sonic compiled in)" >&2; exit 1; }
sonic="$repo/.build-wasm/sonic-$sonic_version"
if [[ ! -f "$sonic/sonic.c" || ! -f "$sonic/sonic.h" ]]; then
    system_sources=${APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
    grep -q '^Types: deb$' "$system_sources" 2>/dev/null ||
        { echo "build-wasm: cannot fetch Sonic's source: no 'Types: deb' entry in $system_sources to derive a deb-src list from (put sonic.c and sonic.h of sonic $sonic_version in $sonic)" >&2; exit 1; }
    fetch=$(mktemp -d)
    trap 'rm -rf "$fetch"' EXIT
    mkdir -p "$fetch/lists/partial" "$fetch/parts"
    sed 's/^Types: deb$/Types: deb-src/' "$system_sources" > "$fetch/parts/src.sources"
    apt_private=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$fetch/parts" -o "Dir::State::Lists=$fetch/lists")
    apt-get -qq "${apt_private[@]}" update >/dev/null 2>&1 ||
        { echo "build-wasm: apt-get update of the deb-src list derived from $system_sources failed" >&2; exit 1; }
    # Only the upstream tarball is needed: the Debian part may be missing from the mirror.
    (cd "$fetch" && apt-get -qq "${apt_private[@]}" source --download-only "sonic=$sonic_version" >/dev/null 2>&1) || true
    upstream=${sonic_version%-*}
    upstream=${upstream#*:}
    orig="$fetch/sonic_$upstream.orig.tar.gz"
    dsc="$fetch/sonic_${sonic_version#*:}.dsc"
    [[ -f "$orig" && -f "$dsc" ]] ||
        { echo "build-wasm: apt-get source sonic=$sonic_version fetched no $(basename "$orig") and .dsc" >&2; exit 1; }
    want=$(awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on && $3 ~ /orig\.tar\.gz$/ { print $1 }' "$dsc")
    got=$(sha256sum "$orig" | cut -d' ' -f1)
    [[ -n "$want" && "$want" == "$got" ]] ||
        { echo "build-wasm: $(basename "$orig"): SHA-256 $got, the .dsc says ${want:-nothing}" >&2; exit 1; }
    tar -xzf "$orig" -C "$fetch" --wildcards '*/sonic.c' '*/sonic.h'
    mkdir -p "$sonic.tmp"
    cp "$fetch"/*/sonic.c "$fetch"/*/sonic.h "$sonic.tmp/"
    rm -rf "$sonic" && mv "$sonic.tmp" "$sonic"
fi
# The toolchain's clang, against Debian's wasi-libc headers (calloc, memcpy; no I/O is called).
# Sonic's pitch search sums differences in an `unsigned long` and multiplies the sum by the
# period, which passes 2^32 at 48 kHz: 64 bits on the native build (LP64), 32 on wasm32, where it
# wrapped and chose other pitch periods (measured: 3 of the sample chains at 0.75 and 1.5
# differed). So sonic.c is compiled with `long` meaning `long long` after the C library's headers
# (size_t and the allocator keep their wasm32 types; sonic.h names no `long`): the native sums.
cat > "$out/sonic-lp64.c" <<EOF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#define long long long
#include "$sonic/sonic.c"
EOF
"$toolchain/bin/clang" --target=wasm32-wasi -O2 -nostdlibinc -isystem /usr/include/wasm32-wasi \
    -w -c "$out/sonic-lp64.c" -o "$out/sonic.o"
rm -f "$out/sonic-lp64.c"
# -Xllvm -inline-threshold=0: LLVM's inliner off (Swift's SIL inliner still inlines): 5.8 KB
# gzipped less, no slower mixing measured (docs/wasm.md#size).
sources=("$repo"/Sources/NarratorEngine/*.swift "$repo"/Web/NarratorWasm/*.swift)
"$swiftc" -target wasm32-unknown-none-wasm -enable-experimental-feature Embedded -enable-experimental-feature Extern \
    -wmo -parse-as-library -module-name NarratorWasm -package-name narrator -Osize \
    -Xfrontend -disable-stack-protector -Xllvm -inline-threshold=0 -warnings-as-errors -I "$repo/Sources/CSonic" -Xcc -I"$sonic" \
    -c "${sources[@]}" -o "$out/narrator.o"
# Exported: the @_cdecl("narrator_…") functions of Web/NarratorWasm, nothing else.
exports=()
for name in $(grep -ho '@_cdecl("narrator_[a-z_]*")' "$repo"/Web/NarratorWasm/*.swift | sed 's/@_cdecl("\(.*\)")/\1/'); do
    exports+=("--export=$name")
done
# Linked with its debug sections and target features (what wasm-opt reads to know the features
# the code uses), then binaryen's wasm-opt -Oz shrinks the code and strips them; WASM_KEEP_NAMES=1
# keeps the name section and narrator.o (to measure what takes the space: docs/wasm.md#size).
# --converge runs -Oz until it shrinks no more; the module defines its memory (zero-filled) and
# wasm-ld puts its data at 1024, the stack above it: nothing lives in the low 1 KB, which lets
# binaryen fold constant offsets into loads and stores (2.6 KB gzipped less together).
"$wasm_ld" --no-entry "${exports[@]}" --gc-sections -z stack-size=1048576 \
    "$out/narrator.o" "$out/sonic.o" "$unicode" "$libc" "$builtins" -o "$out/narrator.linked.wasm"
strip=(--strip-debug --strip-producers --strip-target-features)
[[ -z ${WASM_KEEP_NAMES:-} ]] || strip=(-g --strip-producers --strip-target-features)
"$wasm_opt" -Oz --converge --zero-filled-memory --low-memory-unused "${strip[@]}" "$out/narrator.linked.wasm" -o "$out/narrator.wasm.tmp"
mv "$out/narrator.wasm.tmp" "$out/narrator.wasm"
rm -f "$out/narrator.linked.wasm"
# The browser build's modules: narrator.js, the AudioWorklet processor and the page's player.
cp "$repo"/Web/*.js "$out/"
[[ -n ${WASM_KEEP_NAMES:-} ]] || rm -f "$out/narrator.o" "$out/sonic.o"
echo "$out"
