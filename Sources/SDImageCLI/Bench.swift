import ArgumentParser
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `sdimage bench`: the project's benchmarks in one place. The decode bench is
/// C (no Swift runtime in the profile): this runs CMake's `sdcore-bench`.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the benchmarks; results are ratios against baselines measured in the same run.",
        subcommands: [BenchDecode.self, BenchFetch.self])
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
        let path = benchBinaryPath(benchBinary)
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

/// The C benchmark binary built by CMake.
func benchBinaryPath(_ explicit: String?) -> String {
    let env = ProcessInfo.processInfo.environment
    let path = explicit ?? env["SDCORE_BENCH"] ?? "build/release/sdcore-bench"
    guard FileManager.default.isExecutableFile(atPath: path) else {
        fail("\(path) not found: build it with 'make build' (CMake) or pass --bench-binary")
    }
    return path
}

/// `sdimage bench fetch`: the C loop against a plain curl-multi loop (both in
/// sdcore-bench, which also starts nginx), then Foundation's URLSession — what
/// a Swift-on-Linux user would pick — against the same server, same files.
struct BenchFetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch throughput over loopback nginx: sd_loop vs plain libcurl multi vs URLSession.")

    @Option(help: "Number of generated JPEGs served.")
    var count = 300

    @Option(help: "Rounds over the file list per measurement.")
    var rounds = 8

    @Option(help: "Path of the sdcore-bench binary.")
    var benchBinary: String?

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let binary = benchBinaryPath(benchBinary)
        let handshake = FileManager.default.temporaryDirectory
            .appendingPathComponent("sdimage-bench-\(ProcessInfo.processInfo.processIdentifier)").path
        let bench = Process()
        bench.executableURL = URL(fileURLWithPath: binary)
        bench.arguments = ["fetch", "--json", "--count", "\(count)", "--rounds", "\(rounds)", "--keep-server", handshake]
        let out = Pipe()
        bench.standardOutput = out
        try bench.run()
        // sdcore-bench prints its JSON, then keeps nginx up until we are done.
        var server: (base: String, files: Int)?
        for _ in 0..<6000 {
            if server != nil { break }
            if let text = try? String(contentsOfFile: handshake, encoding: .utf8) {
                let parts = text.split(separator: " ")
                if parts.count == 2, let n = Int(parts[1].trimmingCharacters(in: .whitespacesAndNewlines)) {
                    server = (String(parts[0]), n)
                }
            }
            if server == nil { Thread.sleep(forTimeInterval: 0.1) }
        }
        guard let server else { fail("sdcore-bench did not start its server") }
        // Wait for the C measurements to finish (their JSON line) before ours.
        let cLine = String(decoding: out.fileHandleForReading.availableDataLine(), as: UTF8.self)
        var urlSessionIPS: [Int: Double] = [:]
        for concurrency in [6, 32] {
            urlSessionIPS[concurrency] = measureURLSession(base: server.base, files: server.files, concurrency: concurrency)
        }
        _ = FileManager.default.createFile(atPath: handshake + ".stop", contents: nil)
        // Process.waitUntilExit can miss the exit on Linux after URLSession ran
        // (the child stays a zombie); reap it ourselves.
        var status: Int32 = 0
        _ = waitpid(bench.processIdentifier, &status, 0)
        try? FileManager.default.removeItem(atPath: handshake)
        try? FileManager.default.removeItem(atPath: handshake + ".stop")

        guard let data = cLine.data(using: .utf8),
              let c = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            fail("could not read sdcore-bench output: \(cLine)")
        }
        if json {
            var merged = c
            for (k, v) in urlSessionIPS { merged["urlsession_c\(k)_ips"] = v.rounded() }
            let text = try JSONSerialization.data(withJSONObject: merged, options: [.sortedKeys])
            print(String(decoding: text, as: UTF8.self))
            return
        }
        print("sdimage bench fetch: \(server.files) JPEGs x \(rounds) rounds, nginx on loopback")
        print("decode-only (same threads): \(fmt(c["decode_only_ips"])) images/s\n")
        print("concurrency  plain-curl  sd_loop(dl)  ratio   sd_loop(dl+decode) ratio   URLSession  sd_loop/URLSession")
        for k in [6, 32] {
            let row = c["c\(k)"] as? [String: Any] ?? [:]
            let us = urlSessionIPS[k] ?? 0
            let dl = (row["download_ips"] as? Double) ?? 0
            print(String(format: "%11d %11.0f %12.0f %6.3f %19.0f %6.3f %12.0f %18.2f", k,
                         (row["plain_curl_ips"] as? Double) ?? 0, dl, (row["download_ratio"] as? Double) ?? 0,
                         (row["decode_ips"] as? Double) ?? 0, (row["decode_ratio"] as? Double) ?? 0, us,
                         us > 0 ? dl / us : 0))
        }
        print("\ntargets: download >= 0.9x plain curl; download+decode >= 0.85x decode-only")
    }

    private func fmt(_ v: Any?) -> String { String(format: "%.0f", (v as? Double) ?? 0) }

    /// Download every file `rounds` times through one URLSession with at most
    /// `concurrency` requests in flight; images per second.
    private func measureURLSession(base: String, files: Int, concurrency: Int) -> Double {
        let config = URLSessionConfiguration.default
        config.httpMaximumConnectionsPerHost = concurrency
        config.requestCachePolicy = .reloadIgnoringLocalCacheData
        config.urlCache = nil
        let session = URLSession(configuration: config)
        let total = files * rounds
        let slots = DispatchSemaphore(value: concurrency)
        let group = DispatchGroup()
        let start = Date()
        for i in 0..<total {
            slots.wait()
            group.enter()
            let url = URL(string: String(format: "%@/img/p%03d.jpg", base, i % files))!
            session.dataTask(with: url) { _, _, _ in
                slots.signal()
                group.leave()
            }.resume()
        }
        group.wait()
        let seconds = Date().timeIntervalSince(start)
        session.invalidateAndCancel()
        return Double(total) / seconds
    }
}

private extension FileHandle {
    /// Read up to the first newline (blocking).
    func availableDataLine() -> Data {
        var line = Data()
        while true {
            let byte = readData(ofLength: 1)
            if byte.isEmpty || byte.first == UInt8(ascii: "\n") { return line }
            line.append(byte)
        }
    }
}
