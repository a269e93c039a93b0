import ArgumentParser
import Dispatch
import Foundation
import SDCoders
import SDWebImage
#if canImport(Glibc)
import Glibc
import SDSync
#endif

/// `sdimage bench encode`: the C encoders against the library calls cwebp and
/// avifenc make (sdcore-bench encode, same settings, same bytes out), then the
/// Swift coders against those C encoders, in this process, interleaved.
struct BenchEncode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "WebP and AVIF encode vs libwebp/libavif called directly with the same settings; then the Swift coders' overhead.")

    @Flag(help: "Fewer rounds (a smoke run, not a measurement).")
    var quick = false

    @OptionGroup var common: BenchOptions

    func run() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: benchBinaryPath(common.benchBinary))
        p.arguments = ["encode"] + (quick ? ["--quick"] : []) + (common.json ? ["--json"] : [])
        try p.run()
        p.waitUntilExit()
        if p.terminationStatus != 0 { throw ExitCode(p.terminationStatus) }
        fflush(nil)
        // The coder path adds option parsing, an SDImage and a Data copy to
        // the same sd_encode_* call; same bitmap, same settings, same bytes.
        let photo = try Samples.photo(width: 1024, height: 768, seed: 7, alpha: false)
        let image = SDImage(bitmap: photo)
        let rows: [(String, SDImageFormat, SDImageCoderOptions, () throws -> [UInt8])] = [
            ("webp lossy q75", .webP, [.encodeCompressionQuality: 0.75], { try photo.webpData(quality: 75) }),
            ("avif q60 speed 6", .avif, [.encodeCompressionQuality: 0.6, .encodeAVIFSpeed: 6],
             { try photo.avifData(quality: 60, speed: 6) }),
        ]
        if !common.json { print("\nSwift coders vs the C encoder they call (same bitmap and settings, bytes checked equal, best of 3):") }
        for (name, format, options, direct) in rows {
            var best = [Double.infinity, .infinity]
            for round in 0..<3 {
                for lane in round % 2 == 0 ? [0, 1] : [1, 0] {
                    let t0 = DispatchTime.now().uptimeNanoseconds
                    let bytes: [UInt8]
                    if lane == 0 {
                        guard let d = SDImageCodersManager.shared.encodedData(with: image, format: format, options: options) else {
                            fail("bench encode: the \(format) coder failed")
                        }
                        bytes = [UInt8](d)
                    } else {
                        bytes = try direct()
                    }
                    best[lane] = min(best[lane], Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
                    if round == 0 && lane == 1 {
                        let viaCoder = SDImageCodersManager.shared.encodedData(with: image, format: format, options: options)
                        if viaCoder.map([UInt8].init) != bytes { fail("bench encode: \(name): the coder made different bytes") }
                    }
                }
            }
            let ratio = best[1] / best[0]
            if common.json {
                let o: [String: Any] = ["bench": "encode_swift", "row": name, "width": 1024, "height": 768,
                                        "coder_ms": (best[0] * 1000).rounded() / 1000, "c_ms": (best[1] * 1000).rounded() / 1000,
                                        "ratio": (ratio * 1000).rounded() / 1000]
                print(String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]), as: UTF8.self))
            } else {
                print(name.padding(toLength: 22, withPad: " ", startingAt: 0)
                      + String(format: " 1024x768  coder %9.2f ms  sd_encode %9.2f ms  %.3fx", best[0], best[1], ratio))
            }
        }
    }
}

/// `sdimage bench player`: an animation played at 1x through
/// SDAnimatedImagePlayer on the real display clock: CPU per shown frame, peak
/// RSS, and the buffer budget checked. The reference row, same run, same
/// file: decoding every frame in order on one thread with nothing else.
struct BenchPlayer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "player",
        abstract: "Play a generated N-frame GIF at 1x: CPU per shown frame, peak RSS, buffer budget honoured.")

    @Option(help: "Frames in the generated animation.")
    var frames = 500
    @Option(help: "Width and height of the animation, in pixels.")
    var size = 1000
    @Option(help: "Frame duration in milliseconds.")
    var delayMs = 20
    @Option(help: "Player buffer budget in MiB (default: automatic).")
    var bufferMib: Int?

    @OptionGroup var common: BenchOptions

    func validate() throws {
        if frames < 2 || size < 8 || delayMs < 20 { throw ValidationError("need --frames >= 2, --size >= 8, --delay-ms >= 20") }
    }

    func run() throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("sdimage-bench-anim-\(frames)f-\(size)px-\(delayMs)ms.gif").path
        if !FileManager.default.fileExists(atPath: path) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: benchBinaryPath(common.benchBinary))
            p.arguments = ["make-anim", path + ".part", "--frames", "\(frames)", "--size", "\(size)", "--delay-ms", "\(delayMs)"]
            try p.run()
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw ExitCode(p.terminationStatus) }
            try FileManager.default.moveItem(atPath: path + ".part", toPath: path)
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))

        // Reference: every frame in order, this thread, nothing kept.
        var cpu0 = cpuSeconds()
        do {
            guard let image = SDAnimatedImage(data: data), image.animatedImageFrameCount == UInt(frames) else {
                fail("bench player: \(path) does not decode as \(frames) frames")
            }
            for i in 0..<image.animatedImageFrameCount where image.animatedImageFrame(at: i) == nil {
                fail("bench player: frame \(i) did not decode")
            }
        }
        let referenceCPU = cpuSeconds() - cpu0

        // Playback: peak RSS from here (the file's bytes are already in).
        resetPeakRSS()
        let rssBefore = rss(field: "VmRSS:")
        guard let image = SDAnimatedImage(data: data), let player = SDAnimatedImagePlayer(image: image) else {
            fail("bench player: no player for \(path)")
        }
        player.totalLoopCount = 1
        if let bufferMib { player.maxBufferSize = bufferMib << 20 }
        let shown = ShownFrames()
        let done = DispatchSemaphore(value: 0)
        player.animationFrameHandler = { index, _ in shown.add(index) }
        player.animationLoopHandler = { _ in done.signal() }
        let expected = Double(frames * delayMs) / 1000
        cpu0 = cpuSeconds()
        let t0 = DispatchTime.now().uptimeNanoseconds
        player.startPlaying()
        if done.wait(timeout: .now() + expected * 4 + 10) == .timedOut { fail("bench player: one loop did not finish in time") }
        let wall = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        let playCPU = cpuSeconds() - cpu0
        player.stopPlaying()
        let peak = rss(field: "VmHWM:")
        let (count, distinct) = shown.counts
        let budget = player.bufferBudget, peakBuffered = player.peakBufferedBytes
        let honoured = peakBuffered <= max(budget, size * size * 4)  // one frame is always kept
        let mib = { (b: Int) in Double(b) / 1048576 }
        if common.json {
            let o: [String: Any] = [
                "bench": "player", "frames": frames, "size": size, "delay_ms": delayMs, "file_mib": mib(data.count),
                "shown_frames": count, "distinct_frames": distinct, "wall_s": wall, "expected_s": expected,
                "cpu_ms_per_shown_frame": playCPU * 1000 / Double(max(1, count)),
                "reference_cpu_ms_per_frame": referenceCPU * 1000 / Double(frames),
                "rss_before_mib": mib(rssBefore), "peak_rss_mib": mib(peak),
                "buffer_budget_mib": mib(budget), "peak_buffered_mib": mib(peakBuffered), "budget_honoured": honoured,
            ]
            print(String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]), as: UTF8.self))
        } else {
            print("player: \(frames) frames of \(size)x\(size), \(delayMs) ms each (GIF, \(String(format: "%.1f", mib(data.count))) MiB), 1x, display clock")
            print(String(format: "  shown %d frames (%d distinct) in %.2f s (file says %.2f s)", count, distinct, wall, expected))
            print(String(format: "  CPU per shown frame  %.2f ms (all threads)   reference: decode alone %.2f ms/frame, one thread",
                         playCPU * 1000 / Double(max(1, count)), referenceCPU * 1000 / Double(frames)))
            print(String(format: "  peak RSS %.1f MiB (%.1f MiB before the image was opened, its file already read)",
                         mib(peak), mib(rssBefore)))
            print(String(format: "  buffer budget %.1f MiB, peak buffered %.1f MiB: %@", mib(budget), mib(peakBuffered),
                         honoured ? "honoured" : "EXCEEDED"))
        }
        if !honoured { throw ExitCode(1) }
    }

    private final class ShownFrames: Sendable {
        private let state = Locked((count: 0, seen: Set<UInt>()))
        func add(_ i: UInt) { state.withLock { s in s.count += 1; s.seen.insert(i) } }
        var counts: (Int, Int) { state.withLock { ($0.count, $0.seen.count) } }
    }
}

/// User + system CPU of the whole process (every thread), in seconds.
func cpuSeconds() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6
        + Double(u.ru_stime.tv_sec) + Double(u.ru_stime.tv_usec) / 1e6
}

/// A line of /proc/self/status in bytes ("VmRSS:", "VmHWM:").
func rss(field: String) -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
          let kb = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
    else { return 0 }
    return kb * 1024
}

/// Start the peak-RSS mark (VmHWM) afresh (Linux: "5" to clear_refs); where
/// that is refused (some containers), the mark stays as it was.
func resetPeakRSS() {
    if let h = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
        try? h.write(contentsOf: Data("5".utf8))
        try? h.close()
    }
}
