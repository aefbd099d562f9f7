import Foundation

#if NARRATOR_LIBFUZZER
    import CLibFuzzer

    // Built by `make fuzz` (-sanitize=fuzzer,address -DNARRATOR_LIBFUZZER): libFuzzer's driver
    // runs the target named by NARRATOR_FUZZ_TARGET. SwiftPM links an executable's entry point
    // as `<module>_main` (so that tests can link the module), hence this one instead of the
    // runtime's own main.
    @_cdecl("narrator_fuzz_main")
    public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var argc = argc
        var argv = argv
        _ = selected
        return LLVMFuzzerRunDriver(&argc, &argv, fuzzerTestOneInput)
    }

    private let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["NARRATOR_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(
                Data("narrator-fuzz: set NARRATOR_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: " "))\n".utf8))
            exit(2)
        }
        return target
    }()

    // `make fuzz` removes it (under NARRATOR_FUZZ_WORKDIR) when the run ends.
    private let workspace = Workspace.make()

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
        let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
        _ = selected.run(data, in: workspace)
        return 0
    }
#else
    /// Without libFuzzer: replays inputs through a target, one line per file, so that a crash
    /// input can be run under a debugger and the regression test can run each in its own process.
    ///
    ///     narrator-fuzz TARGET FILE...     (TARGET: narrator-fuzz --list)
    @main struct Replay {
        static func main() {
            let arguments = Array(CommandLine.arguments.dropFirst())
            if arguments == ["--list"] {
                print(FuzzTarget.allCases.map(\.rawValue).joined(separator: "\n"))
                return
            }
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
                FileHandle.standardError.write(
                    Data("usage: narrator-fuzz TARGET FILE... (targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: " ")))\n".utf8))
                exit(2)
            }
            let workspace = Workspace.make()
            defer { workspace.remove() }
            for file in arguments.dropFirst() {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("narrator-fuzz: cannot read \(file)\n".utf8))
                    exit(1)
                }
                switch target.run(data, in: workspace) {
                case .accepted(let summary): print("\(file): accepted: \(summary)")
                case .rejected(let error): print("\(file): rejected: \(error)")
                }
            }
        }
    }
#endif
