/// Words of messages that depend on a number.
public enum Wording {
    /// "1 word", "2 words", "0 words"; `plural` for nouns that do not take an "s"
    /// ("1 match", "2 matches").
    public static func count(_ number: Int, _ singular: String, plural: String? = nil) -> String {
        "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
    }
}
