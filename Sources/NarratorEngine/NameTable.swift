/// Values by name: positions in one `[String: Int]`, values in an array. Embedded Swift emits
/// a whole Dictionary (resize, copy, insert, deinit: about 3.5 KB of WebAssembly) for every
/// value type; the engine's working tables share this one instead (docs/wasm.md#size).
/// Names compare as `String`s do, as a dictionary's keys; nothing is ever removed.
struct NameTable<Value> {
    private var positions: [String: Int] = [:]
    /// The values, in the order their names were first set; a value changed in place through
    /// the position `position(of:orAdd:)` gives (never appended to here).
    var values: [Value] = []

    /// The value named `name`, nil if none is; setting nil is not allowed.
    subscript(name: String) -> Value? {
        get { positions[name].map { values[$0] } }
        set {
            guard let newValue else { preconditionFailure("NameTable: a name is never removed") }
            values[position(of: name) { newValue }] = newValue
        }
    }

    /// The position of `name`'s value, made by `make` if it has none yet.
    mutating func position(of name: String, orAdd make: () -> Value) -> Int {
        if let position = positions[name] { return position }
        values.append(make())
        positions[name] = values.count - 1
        return values.count - 1
    }
}

extension NameTable: Sendable where Value: Sendable {}
