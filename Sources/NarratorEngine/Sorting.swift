/// The engine's sorts: every one goes through `stableOrder`, one non-generic function, so that
/// the whole engine shares one specialization of the standard library's sort (Embedded Swift
/// emits one per element type and comparison otherwise, 3–4 KB of WebAssembly each:
/// docs/wasm.md#size). The standard library's sort is stable, and so is this: the results are
/// those `sorted(by:)` gave at each call site.

/// The positions `0..<count` in the order `precedes` (comparing two positions) gives, equal
/// ones in their own order.
@inline(never)
func stableOrder(_ count: Int, by precedes: (Int, Int) -> Bool) -> [Int] {
    Array(0..<count).sorted(by: precedes)
}

/// `items` sorted by `precedes`, equal ones in their own order (as `sorted(by:)`).
func stablySorted<Element>(_ items: [Element], by precedes: (Element, Element) -> Bool) -> [Element] {
    stableOrder(items.count) { precedes(items[$0], items[$1]) }.map { items[$0] }
}

/// `names` in `String`'s order (`<`, as `sorted()`).
@inline(never)
func sortedNames(_ names: [String]) -> [String] { stablySorted(names, by: <) }

/// The keys of any collection of names in `String`'s order.
func sortedNames<Names: Sequence<String>>(_ names: Names) -> [String] { sortedNames(Array(names)) }

/// `names` in the order of their UTF-8 bytes (JSON's canonical key order, EventEncoder's).
@inline(never)
func sortedByUTF8(_ names: [String]) -> [String] { stablySorted(names) { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
