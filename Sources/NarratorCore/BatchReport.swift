import Foundation

/// One worker's part of a batch (`--shard K/N`): the items whose ordinal (1-based, in the
/// manifest's order) leaves K when divided by N, counting N as 0. N workers given 1/N … N/N
/// take every item once, with nothing shared between them: a Kubernetes Indexed Job (K =
/// `JOB_COMPLETION_INDEX` + 1), a Slurm array (`SLURM_ARRAY_TASK_ID`), GNU parallel over hosts.
/// Round robin, not ranges: neighbouring items (a book's pages, recorded on one day, about
/// the same length) spread over the workers.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 1...count.
    public let index: Int
    public let count: Int

    /// The whole batch in one worker.
    public static let whole = Shard(uncheckedIndex: 1, count: 1)
    /// More workers than this is a typo (a cluster job array is smaller).
    public static let maxCount = 100_000

    private init(uncheckedIndex index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// `K/N`, with 1 ≤ K ≤ N ≤ `maxCount`.
    public init(parsing text: String, source: String = "--shard") throws(NarratorError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        func number(_ part: Substring) -> Int? {
            guard (1...6).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(part)
        }
        guard parts.count == 2, let index = number(parts[0]), let count = number(parts[1]) else {
            throw NarratorError(file: source, "'\(text)' is not K/N (this worker's number K of N workers, e.g. 2/8)")
        }
        guard (1...Self.maxCount).contains(count) else { throw NarratorError(file: source, "N must be between 1 and \(Self.maxCount), got \(count)") }
        guard (1...count).contains(index) else { throw NarratorError(file: source, "K must be between 1 and N (\(count)), got \(index)") }
        self.index = index
        self.count = count
    }

    /// Whether item `ordinal` (1-based) is this worker's.
    public func contains(_ ordinal: Int) -> Bool { (ordinal - 1) % count == index - 1 }

    public var description: String { "\(index)/\(count)" }
}

/// What a batch over a manifest reports, as JSON Lines: a header line, then one line per item
/// of the worker's shard, in the manifest's order. The header names the batch (`report`),
/// the manifest (its item count and a digest of its bytes: the parts of one batch must come
/// from the same manifest) and the shard. `merge` joins the reports of N workers into the
/// one an unsharded run writes, byte for byte: the item lines are kept as they were written,
/// ordered by item, under the header of shard 1/1.
public enum BatchReport {
    public struct Header: Sendable, Equatable {
        /// What ran: `align`.
        public var report: String
        public var manifestDigest: String
        public var items: Int
        public var shard: Shard

        public init(report: String, manifestDigest: String, items: Int, shard: Shard) {
            self.report = report
            self.manifestDigest = manifestDigest
            self.items = items
            self.shard = shard
        }

        public var line: String {
            "{\"report\": \(EventEncoder.quoted(report)), \"manifest\": {\"items\": \(items), \"digest\": \(EventEncoder.quoted(manifestDigest))}, \"shard\": \(EventEncoder.quoted(shard.description))}"
        }
    }

    /// A manifest's identity: FNV-1a (64 bits) of its bytes, in hex. It tells apart the
    /// manifests of different batches, not a forgery (it is not a cryptographic hash).
    public static func digest(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "fnv1a64:" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// One item's line: `{"item": ORDINAL, FIELDS}`, where `fields` is the rest of the object's
    /// members, already encoded (`"audio": "a.wav", "words": 3`).
    public static func itemLine(ordinal: Int, fields: String) -> String {
        fields.isEmpty ? "{\"item\": \(ordinal)}" : "{\"item\": \(ordinal), \(fields)}"
    }

    /// The report: the header, then the item lines, each ending in a newline.
    public static func text(header: Header, items: [String]) -> String {
        ([header.line] + items).map { $0 + "\n" }.joined()
    }

    /// Joins the reports of every worker of one batch (any order) into the report of the
    /// whole batch. Each part must be a report of the same kind and manifest, the parts must be
    /// shards 1/N … N/N once each, and each must hold exactly its shard's items; otherwise one
    /// error naming the part and the place.
    public static func merge(_ parts: [(path: String, data: Data)]) throws(NarratorError) -> String {
        guard let first = parts.first else { throw NarratorError(file: "merge", "no reports to merge") }
        var header: Header?
        var seenShards: [Int: String] = [:]
        var lines: [Int: String] = [:]
        for part in parts {
            guard let text = String(data: part.data, encoding: .utf8) else { throw NarratorError(file: part.path, "not UTF-8 text") }
            var rows = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
            if rows.last == "" { rows.removeLast() }
            guard let top = rows.first else { throw NarratorError(file: part.path, "empty: a report starts with its header line") }
            let mine = try parseHeader(top, file: part.path)
            if let header {
                guard mine.report == header.report else {
                    throw NarratorError(file: part.path, place: "line 1", "a '\(mine.report)' report, but \(first.path) is a '\(header.report)' report")
                }
                guard mine.manifestDigest == header.manifestDigest, mine.items == header.items else {
                    throw NarratorError(file: part.path, place: "line 1", "comes from another manifest than \(first.path) (its items or digest differ)")
                }
                guard mine.shard.count == header.shard.count else {
                    throw NarratorError(file: part.path, place: "line 1", "shard \(mine.shard) of a batch in \(mine.shard.count), but \(first.path) is of a batch in \(header.shard.count)")
                }
            } else {
                header = mine
            }
            if let other = seenShards[mine.shard.index] {
                throw NarratorError(file: part.path, place: "line 1", "shard \(mine.shard) again (\(other) is that shard too)")
            }
            seenShards[mine.shard.index] = part.path
            var expected = mine.shard.index
            for (offset, row) in rows.dropFirst().enumerated() {
                let place = "line \(offset + 2)"
                let ordinal = try parseOrdinal(row, file: part.path, place: place)
                guard ordinal == expected, ordinal <= mine.items else {
                    throw NarratorError(
                        file: part.path, place: place,
                        expected > mine.items
                            ? "item \(ordinal) is past the shard's last item"
                            : "item \(ordinal) where shard \(mine.shard)'s item \(expected) should be")
                }
                lines[ordinal] = row
                expected += mine.shard.count
            }
            if expected <= mine.items {
                throw NarratorError(file: part.path, "ends before item \(expected) of shard \(mine.shard): the worker did not finish")
            }
        }
        guard var whole = header else { throw NarratorError(file: first.path, "no header") }
        let missing = (1...whole.shard.count).filter { seenShards[$0] == nil }
        if !missing.isEmpty {
            let names = missing.prefix(10).map { "\($0)/\(whole.shard.count)" }.joined(separator: ", ")
            throw NarratorError(file: "merge", "missing the report of shard \(names)\(missing.count > 10 ? ", …" : "")")
        }
        whole.shard = .whole
        return text(header: whole, items: (0..<whole.items).map { lines[$0 + 1]! })
    }

    static func parseHeader(_ line: String, file: String) throws(NarratorError) -> Header {
        let root = JSONCursor(try JSONValue.parse(Data(line.utf8), file: "\(file): line 1"), file: file, path: "line 1")
        let top = try root.object(allowing: ["report", "manifest", "shard"])
        let report = try top.required("report", in: root).string()
        let manifestCursor = try top.required("manifest", in: root)
        let manifest = try manifestCursor.object(allowing: ["items", "digest"])
        let items = try manifest.required("items", in: manifestCursor).integer(in: 0...maxItems)
        let digest = try manifest.required("digest", in: manifestCursor).string()
        let shard = try Shard(parsing: try top.required("shard", in: root).string(), source: "\(file): line 1: shard")
        return Header(report: report, manifestDigest: digest, items: items, shard: shard)
    }

    static func parseOrdinal(_ line: String, file: String, place: String) throws(NarratorError) -> Int {
        let root = JSONCursor(try JSONValue.parse(Data(line.utf8), file: "\(file): \(place)"), file: file, path: place)
        return try root.object().required("item", in: root).integer(in: 1...maxItems)
    }

    /// More items than a manifest may hold.
    public static let maxItems = 10_000_000
}
