import ArgumentParser
import Foundation

/// `sdimage bench`: the project's benchmarks in one place. The decode bench is
/// C (no Swift runtime in the profile): this runs CMake's `sdcore-bench`.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the benchmarks; results are ratios against baselines measured in the same run.",
        subcommands: [BenchDecode.self])
}

struct BenchDecode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode throughput vs TurboJPEG and libpng (runs sdcore-bench from the CMake build).")

    @Option(help: "Folder of JPEG/PNG files (default: generate a photo corpus).")
    var corpus: String?

    @Option(help: "Path of the sdcore-bench binary (default: $SDCORE_BENCH or build/release/sdcore-bench).")
    var benchBinary: String?

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let path = benchBinary ?? env["SDCORE_BENCH"] ?? "build/release/sdcore-bench"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            fail("\(path) not found: build it with 'make build' (CMake) or pass --bench-binary")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        var args = ["decode"]
        if let corpus { args += ["--corpus", corpus] }
        if json { args.append("--json") }
        p.arguments = args
        try p.run()
        p.waitUntilExit()
        if p.terminationStatus != 0 { throw ExitCode(p.terminationStatus) }
    }
}
