/// Narrator's version: `narrator --version` prints it, and CHANGELOG.md's newest heading names
/// it. The one place it is written.
public enum NarratorVersion {
    public static let current = "0.2.0"
}
