import Foundation
import NarratorCore
import Testing

/// `--shard K/N` and `narrator merge`: the partition and the merge, against reports written
/// out by hand here.
@Suite struct BatchReportTests {
    @Test(arguments: ["1/1", "1/2", "2/2", "7/8", "100000/100000"])
    func goodShards(text: String) throws {
        let shard = try Shard(parsing: text)
        #expect(shard.description == text)
    }

    @Test(arguments: ["", "1", "0/2", "3/2", "1/0", "-1/2", "a/b", "1/2/3", "1 /2", "+1/2", "1/100001", "99999999999999999999/2", "１/2", "1/"])
    func badShardsAreOneError(text: String) {
        #expect(throws: NarratorError.self) { try Shard(parsing: text) }
    }

    /// Every item belongs to exactly one of the N shards, for N from 1 to 12.
    @Test func theShardsPartitionTheItems() throws {
        for count in 1...12 {
            let shards = try (1...count).map { index in try Shard(parsing: "\(index)/\(count)") }
            for ordinal in 1...50 {
                let owners = shards.filter { $0.contains(ordinal) }
                #expect(owners.count == 1, "item \(ordinal) in \(owners) of \(count)")
                // Round robin: item k goes to worker ((k − 1) mod N) + 1.
                #expect(owners.first?.index == (ordinal - 1) % count + 1)
            }
        }
    }

    static let header = #"{"report": "align", "manifest": {"items": 5, "digest": "fnv1a64:0000000000000001"}, "shard": "SHARD"}"#
    static func item(_ k: Int) -> String { #"{"item": \#(k), "audio": "a\#(k).wav", "words": \#(k * 3)}"# }

    static func part(_ shard: String, _ items: [Int], header: String = header) -> (path: String, data: Data) {
        let text = ([header.replacingOccurrences(of: "SHARD", with: shard)] + items.map(item)).map { $0 + "\n" }.joined()
        return ("part-\(shard.replacingOccurrences(of: "/", with: "-")).jsonl", Data(text.utf8))
    }

    @Test func mergedPartsAreTheWholeReport() throws {
        let whole = String(decoding: Self.part("1/1", [1, 2, 3, 4, 5]).data, as: UTF8.self)
        let merged = try BatchReport.merge([Self.part("2/2", [2, 4]), Self.part("1/2", [1, 3, 5])])
        #expect(merged == whole)
        let three = try BatchReport.merge([Self.part("3/3", [3]), Self.part("1/3", [1, 4]), Self.part("2/3", [2, 5])])
        #expect(three == whole)
        // A shard with no items (more workers than items).
        let many = try BatchReport.merge((1...7).map { k in Self.part("\(k)/7", k <= 5 ? [k] : []) })
        #expect(many == whole)
        // A whole report merges to itself.
        #expect(try BatchReport.merge([Self.part("1/1", [1, 2, 3, 4, 5])]) == whole)
    }

    @Test func badPartsAreOneErrorNamingThePart() {
        func fails(_ parts: [(path: String, data: Data)], saying: String) {
            do {
                _ = try BatchReport.merge(parts)
                Issue.record("merged, expected an error saying \(saying)")
            } catch {
                #expect(error.description.contains(saying), "\(error.description)")
                #expect(!error.description.contains("\n"))
            }
        }
        fails([Self.part("1/2", [1, 3, 5])], saying: "missing the report of shard 2/2")
        fails([Self.part("1/2", [1, 3, 5]), Self.part("1/2", [1, 3, 5])], saying: "shard 1/2 again")
        fails([Self.part("1/2", [1, 3]), Self.part("2/2", [2, 4])], saying: "ends before item 5 of shard 1/2")
        fails([Self.part("1/2", [1, 3, 5]), Self.part("2/2", [2, 3])], saying: "item 3 where shard 2/2's item 4 should be")
        fails([Self.part("1/2", [1, 3, 5]), Self.part("2/2", [2, 4, 6])], saying: "past the shard's last item")
        fails([Self.part("1/2", [1, 3, 5]), Self.part("2/3", [2, 5])], saying: "of a batch in 3")
        let other = Self.header.replacingOccurrences(of: "0000000000000001", with: "0000000000000002")
        fails([Self.part("1/2", [1, 3, 5]), Self.part("2/2", [2, 4], header: other)], saying: "comes from another manifest")
        let validate = Self.header.replacingOccurrences(of: "\"align\"", with: "\"validate\"")
        fails([Self.part("1/2", [1, 3, 5]), Self.part("2/2", [2, 4], header: validate)], saying: "a 'validate' report")
        fails([("empty.jsonl", Data())], saying: "empty.jsonl: empty")
        fails([("bytes.jsonl", Data([0xff, 0xfe, 0x00]))], saying: "not UTF-8")
        fails([("garbage.jsonl", Data("{\"report\": \"align\"\n".utf8))], saying: "garbage.jsonl")
        fails([("keys.jsonl", Data((Self.header.replacingOccurrences(of: "SHARD", with: "1/1").dropLast() + ", \"x\": 1}\n").utf8))], saying: "unknown key")
        fails([("shard.jsonl", Data(Self.header.replacingOccurrences(of: "SHARD", with: "0/1").utf8))], saying: "K must be between 1 and N")
        var broken = Self.part("1/1", [1, 2, 3, 4, 5])
        broken.data = Data(String(decoding: broken.data, as: UTF8.self).replacingOccurrences(of: #"{"item": 4,"#, with: #"{"item": 4.5,"#).utf8)
        fails([broken], saying: "line 5")
        fails([], saying: "no reports")
    }

    @Test func theDigestTellsManifestsApart() {
        let a = BatchReport.digest(Data("{\"audio\": \"a.wav\"}\n".utf8))
        let b = BatchReport.digest(Data("{\"audio\": \"b.wav\"}\n".utf8))
        #expect(a != b && a.count == "fnv1a64:".count + 16)
        // FNV-1a 64 of "a" (a published test vector).
        #expect(BatchReport.digest(Data("a".utf8)) == "fnv1a64:af63dc4c8601ec8c")
    }
}
