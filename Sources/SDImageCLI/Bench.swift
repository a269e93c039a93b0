import ArgumentParser
import Dispatch
import Foundation
import CSDCore
import SDWebImage
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
import SDSync
#endif

/// `sdimage bench`: the project's benchmarks in one place. The decode bench is
/// C (no Swift runtime in the profile): this runs CMake's `sdcore-bench`.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the benchmarks; results are ratios against baselines measured in the same run.",
        subcommands: [BenchDecode.self, BenchThumbnail.self, BenchServe.self, BenchFetch.self, BenchCache.self, BenchRedis.self, BenchEncode.self, BenchPlayer.self, BenchAll.self, BenchSoak.self, BenchBytes.self])
}

struct BenchDecode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode throughput vs TurboJPEG and libpng (runs sdcore-bench from the CMake build).")

    @Option(help: "Folder of JPEG/PNG files (default: generate a photo corpus).")
    var corpus: String?

    @OptionGroup var common: BenchOptions

    func run() throws {
        let path = benchBinaryPath(common.benchBinary)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        var args = ["decode"]
        if let corpus { args += ["--corpus", corpus] }
        if common.json { args.append("--json") }
        p.arguments = args
        try p.run()
        p.waitUntilExit()
        if p.terminationStatus != 0 { throw ExitCode(p.terminationStatus) }
    }
}

/// The C benchmark binary built by CMake.
/// What every bench takes: where sdcore-bench is (it serves the files with
/// nginx and runs the C baselines) and how to print.
struct BenchOptions: ParsableArguments {
    @Option(help: "Path of the sdcore-bench binary (default: $SDCORE_BENCH or build/release/sdcore-bench).")
    var benchBinary: String?

    @Flag(help: "Machine-readable output (one JSON object per line).")
    var json = false
}

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

    @OptionGroup var common: BenchOptions

    func run() throws {
        let binary = benchBinaryPath(common.benchBinary)
        let handshake = newHandshakeFile()
        let bench = Process()
        bench.executableURL = URL(fileURLWithPath: binary)
        bench.arguments = ["fetch", "--json", "--count", "\(count)", "--rounds", "\(rounds)", "--keep-server", handshake]
        let out = Pipe()
        bench.standardOutput = out
        try bench.run()
        // sdcore-bench prints its JSON, then keeps nginx up until we are done.
        let server = waitForServer(handshake, running: { bench.isRunning })
        // Wait for the C measurements to finish (their JSON line) before ours.
        let cLine = String(decoding: out.fileHandleForReading.availableDataLine(), as: UTF8.self)
        var urlSessionIPS: [Int: Double] = [:]
        var swiftIPS: [Int: Double] = [:]
        var loopIPS: [Int: Double] = [:]
        for concurrency in [6, 32] {
            // The Swift layer against the bare C loop, interleaved and best of
            // four each, so drift on a shared machine hits both alike.
            for round in 0..<4 {
                // alternate which goes first, so neither always runs on a warmer machine
                for lane in round % 2 == 0 ? [0, 1] : [1, 0] {
                    if lane == 0 {
                        loopIPS[concurrency] = max(loopIPS[concurrency] ?? 0,
                                                   measureCLoop(base: server.base, files: server.files, concurrency: concurrency))
                    } else {
                        swiftIPS[concurrency] = max(swiftIPS[concurrency] ?? 0,
                                                    measureDownloader(base: server.base, files: server.files, concurrency: concurrency))
                    }
                }
            }
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
        if common.json {
            var merged = c
            for (k, v) in urlSessionIPS { merged["urlsession_c\(k)_ips"] = v.rounded() }
            for (k, v) in swiftIPS {
                let c = loopIPS[k] ?? 0
                merged["sdwebimage_c\(k)_ips"] = v.rounded()
                merged["sdwebimage_c\(k)_loop_ips"] = c.rounded()
                merged["sdwebimage_c\(k)_ratio"] = c > 0 ? (v / c * 1000).rounded() / 1000 : 0
            }
            let text = try JSONSerialization.data(withJSONObject: merged, options: [.sortedKeys])
            print(String(decoding: text, as: UTF8.self))
            return
        }
        print("sdimage bench fetch: \(server.files) JPEGs x \(rounds) rounds, nginx on loopback")
        print("decode-only (same threads): \(fmt(c["decode_only_ips"])) images/s\n")
        print("concurrency  plain-curl  (tuned)  sd_loop(dl)  ratio (tuned)  sd_loop(dl+decode) ratio   URLSession  sd_loop/URLSession")
        for k in [6, 32] {
            let row = c["c\(k)"] as? [String: Any] ?? [:]
            let us = urlSessionIPS[k] ?? 0
            let dl = (row["download_ips"] as? Double) ?? 0
            print(String(format: "%11d %11.0f %8.0f %12.0f %6.3f %7.3f %19.0f %6.3f %12.0f %18.2f", k,
                         (row["plain_curl_ips"] as? Double) ?? 0, (row["plain_curl_tuned_ips"] as? Double) ?? 0,
                         dl, (row["download_ratio"] as? Double) ?? 0, (row["download_ratio_tuned"] as? Double) ?? 0,
                         (row["decode_ips"] as? Double) ?? 0, (row["decode_ratio"] as? Double) ?? 0, us,
                         us > 0 ? dl / us : 0))
        }
        print("(plain-curl: curl's default 16 KiB receive buffer; tuned: the loop's 128 KiB)")
        print("\nSwift layer: SDWebImageDownloader vs the bare C loop, fetch + decode, interleaved, best of 4")
        print("concurrency  sd_loop(dl+decode)  SDWebImageDownloader  ratio")
        for k in [6, 32] {
            let cIPS = loopIPS[k] ?? 0
            let sw = swiftIPS[k] ?? 0
            print(String(format: "%11d %19.0f %21.0f %6.3f", k, cIPS, sw, cIPS > 0 ? sw / cIPS : 0))
        }
        print("\ntargets: download >= 0.9x plain curl; download+decode >= 0.85x decode-only; Swift >= 0.9x sd_loop")
    }

    private func fmt(_ v: Any?) -> String { String(format: "%.0f", (v as? Double) ?? 0) }

    /// The baseline for the Swift layer: the C loop driven directly (as
    /// sdcore-bench does), fetch + decode, every request submitted at once.
    private func measureCLoop(base: String, files: Int, concurrency: Int) -> Double {
        var loop: OpaquePointer?
        guard sd_loop_new(&loop) == 0, let loop else { return 0 }
        defer { sd_loop_free(loop) }
        _ = sd_loop_set(loop, SD_LOOP_MAX_CONCURRENT, Int64(concurrency))
        guard sd_loop_use_decoder(loop, 0) == 0, sd_loop_start(loop) == 0 else { return 0 }
        let total = files * rounds
        let done = Counter(signalAt: total)
        let user = Unmanaged.passUnretained(done).toOpaque()
        var events = sd_transfer_events()
        events.size = MemoryLayout<sd_transfer_events>.size
        events.complete = { _, result, user in
            sd_result_free(result)
            Unmanaged<Counter>.fromOpaque(user!).takeUnretainedValue().add()
        }
        let start = Date()
        for i in 0..<total {
            var request: OpaquePointer?
            guard sd_request_new(benchImageURL(base, i % files), &request) == 0 else { return 0 }
            _ = sd_loop_submit(loop, request, &events, user, nil)
            sd_request_free(request)
        }
        done.reached.wait() // no polling: a waking waiter would cost the loop thread CPU
        return Double(total) / Date().timeIntervalSince(start)
    }

    /// Fetch and decode every file `rounds` times through SDWebImageDownloader
    /// (maxConcurrentDownloads = concurrency); images per second. Requests go
    /// in a window of 4x the concurrency so the queue never runs dry, yet no
    /// two requests for one URL overlap (that would coalesce them).
    private func measureDownloader(base: String, files: Int, concurrency: Int) -> Double {
        let config = SDWebImageDownloaderConfig()
        config.maxConcurrentDownloads = concurrency
        config.maxConnectionsPerHost = 0  // like the bare loop it is compared with: no per-host cap
        let downloader = SDWebImageDownloader(config: config)
        let total = files * rounds
        let window = DispatchSemaphore(value: min(concurrency * 4, max(1, files - 1)))
        let group = DispatchGroup()
        let failures = Counter()
        let start = Date()
        for i in 0..<total {
            window.wait()
            group.enter()
            let url = URL(string: benchImageURL(base, i % files))
            downloader.downloadImage(with: url) { image, _, _, finished in
                guard finished else { return }
                if image == nil { failures.add() }
                window.signal()
                group.leave()
            }
        }
        group.wait()
        let seconds = Date().timeIntervalSince(start)
        if failures.value > 0 { FileHandle.standardError.write(Data("SDWebImageDownloader: \(failures.value) downloads failed\n".utf8)) }
        return Double(total) / seconds
    }

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
            let url = URL(string: benchImageURL(base, i % files))!
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

/// A new, empty file for sdcore-bench's handshake (mkstemp: never a path
/// left by another process; a fixed name with our pid once met a folder
/// `sdimage serve` had left under the same name, and the wait ran out).
func newHandshakeFile() -> String {
    var template = Array((FileManager.default.temporaryDirectory.path + "/sdimage-bench-XXXXXX").utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { fail("cannot create a handshake file in \(FileManager.default.temporaryDirectory.path)") }
    close(fd)
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// sdcore-bench writes "BASE_URL FILES" to the handshake file once nginx serves
/// (up to 10 minutes: it generates the images first). `running` says whether
/// it still runs: one that exited without writing fails at once.
func waitForServer(_ handshake: String, running: () -> Bool) -> (base: String, files: Int) {
    for _ in 0..<6000 {
        // read only once it has bytes: FoundationEssentials' read of an empty file
        // leaks its 4 KiB buffer (LeakSanitizer, the ASan soak)
        var st = stat()
        if stat(handshake, &st) == 0, st.st_size > 0, let text = try? String(contentsOfFile: handshake, encoding: .utf8) {
            let parts = text.split(separator: " ")
            if parts.count == 2, let n = Int(parts[1].trimmingCharacters(in: .whitespacesAndNewlines)) {
                return (String(parts[0]), n)
            }
        }
        if !running() { fail("sdcore-bench exited before its server answered (handshake \(handshake))") }
        Thread.sleep(forTimeInterval: 0.1)
    }
    fail("sdcore-bench did not start its server (no handshake in \(handshake) after 6,000 checks)")
}

final class Counter: Sendable {
    private let n = Locked(0)
    private let target: Int
    /// Signalled once, when the count reaches `signalAt`.
    let reached = DispatchSemaphore(value: 0)
    init(signalAt target: Int = -1) { self.target = target }
    func add() {
        let now = n.withLock { n in n += 1; return n }
        if now == target { reached.signal() }
    }
    var value: Int { n.current }
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
