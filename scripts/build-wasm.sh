#!/usr/bin/env bash
# Builds narrator.wasm: the engine (Sources/NarratorEngine) and its exports (Web/NarratorWasm)
# with Embedded Swift for wasm32, linked with the toolchain's wasm-ld against Debian's wasi-libc
# (malloc, memcmp, pow; its WASI imports are narrator.js's) and compiler-rt's builtins, then
# shrunk by binaryen's wasm-opt -Oz.
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
sources=("$repo"/Sources/NarratorEngine/*.swift "$repo"/Web/NarratorWasm/*.swift)
"$swiftc" -target wasm32-unknown-none-wasm -enable-experimental-feature Embedded -enable-experimental-feature Extern \
    -wmo -parse-as-library -module-name NarratorWasm -package-name narrator -Osize \
    -Xfrontend -disable-stack-protector -warnings-as-errors \
    -c "${sources[@]}" -o "$out/narrator.o"
# Exported: the @_cdecl("narrator_…") functions of Web/NarratorWasm, nothing else.
exports=()
for name in $(grep -ho '@_cdecl("narrator_[a-z_]*")' "$repo"/Web/NarratorWasm/*.swift | sed 's/@_cdecl("\(.*\)")/\1/'); do
    exports+=("--export=$name")
done
# Linked with its debug sections and target features (what wasm-opt reads to know the features
# the code uses), then binaryen's wasm-opt -Oz shrinks the code and strips them; WASM_KEEP_NAMES=1
# keeps the name section and narrator.o (to measure what takes the space: docs/wasm.md#size).
"$wasm_ld" --no-entry "${exports[@]}" --gc-sections -z stack-size=1048576 \
    "$out/narrator.o" "$unicode" "$libc" "$builtins" -o "$out/narrator.linked.wasm"
strip=(--strip-debug --strip-producers --strip-target-features)
[[ -z ${WASM_KEEP_NAMES:-} ]] || strip=(-g --strip-producers --strip-target-features)
"$wasm_opt" -Oz "${strip[@]}" "$out/narrator.linked.wasm" -o "$out/narrator.wasm.tmp"
mv "$out/narrator.wasm.tmp" "$out/narrator.wasm"
rm -f "$out/narrator.linked.wasm"
# The browser build's modules: narrator.js, the AudioWorklet processor and the page's player.
cp "$repo"/Web/*.js "$out/"
[[ -n ${WASM_KEEP_NAMES:-} ]] || rm -f "$out/narrator.o"
echo "$out"
