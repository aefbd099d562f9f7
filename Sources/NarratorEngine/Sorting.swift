/// The engine's sorts of names: one non-generic function each, so that every caller shares one
/// specialization of the standard library's sort (Embedded Swift emits one per element type and
/// call site otherwise, about 3.5 KB of WebAssembly each: docs/wasm.md#size). The order is the
/// standard library's, so the results are the same as `sorted()` at each call site.

/// `names` in `String`'s order (`<`, as `sorted()`).
@inline(never)
func sortedNames(_ names: [String]) -> [String] { names.sorted() }

/// The keys of any collection of names in `String`'s order.
func sortedNames<Names: Sequence<String>>(_ names: Names) -> [String] { sortedNames(Array(names)) }

/// `names` in the order of their UTF-8 bytes (JSON's canonical key order, EventEncoder's).
@inline(never)
func sortedByUTF8(_ names: [String]) -> [String] { names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
