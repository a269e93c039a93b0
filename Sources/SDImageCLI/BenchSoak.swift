import ArgumentParser
import Dispatch
import Foundation
import SDWebImage
#if canImport(Glibc)
import Glibc
import SDCache
import SDSync
#endif

/// `sdimage bench soak`: many manager loads with random cancels, priorities,
/// thumbnail sizes and cache hits against nginx on loopback; resident memory
/// and open descriptors sampled along the way.
struct BenchSoak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Soak: N manager loads (random cancels, priorities, hits); RSS and fd curves; checks they stay flat.")

    @Option(help: "Loads in total.")
    var loads = 20_000

    @Option(help: "Distinct images served (fewer: more cache hits).")
    var count = 300

    @Option(name: .customLong("memory-mib"), help: "Memory cache limit in MiB (small, so it fills and evicts).")
    var memoryMiB = 64

    @OptionGroup var common: BenchOptions

    func run() throws {
        let server = try BenchServer(binary: benchBinaryPath(common.benchBinary), count: count)
        defer { server.stop() }
        let urls = server.urls
        // Warm up first: process-wide one-time set-up (TLS and resolver
        // libraries, dispatch threads) opens files that stay open; measure after.
        _ = soak(urls, loads: 100)
        usleep(200_000)
        let fdBase = Self.openFDs()
        let (tally, curve, wall) = soak(urls, loads: loads)
        // The manager, downloader and loop are gone: their sockets must be too.
        usleep(200_000)
        let fdAfter = Self.openFDs()
        let half = curve.dropFirst(curve.count / 2)
        let rssGrowth = (half.map(\.rssMiB).max() ?? 0) - (half.map(\.rssMiB).min() ?? 0)
        let result: [String: Any] = [
            "bench": "soak", "loads": loads, "wall_s": (wall * 10).rounded() / 10,
            "ok": tally.ok, "cancelled": tally.cancelled, "failed": tally.failed,
            "memory_hits": tally.memory, "disk_hits": tally.disk, "network": tally.network,
            "fd_baseline": fdBase, "fd_after": fdAfter, "rss_second_half_spread_mib": (rssGrowth * 10).rounded() / 10,
            "curve": curve.map { ["loads": $0.loads, "rss_mib": ($0.rssMiB * 10).rounded() / 10, "fds": $0.fds,
                                  "memory_cache_mib": ($0.cacheMiB * 10).rounded() / 10] },
        ]
        if common.json {
            let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(String(format: "soak: %d loads in %.1f s: %d ok (%d memory, %d disk, %d network), %d cancelled, %d failed",
                         loads, wall, tally.ok, tally.memory, tally.disk, tally.network, tally.cancelled, tally.failed))
            print(String(format: "RSS spread over the second half: %.1f MiB; open fds %d before, %d after", rssGrowth, fdBase, fdAfter))
        }
        if tally.failed > 0 || fdAfter > fdBase {
            FileHandle.standardError.write(Data("soak: \(tally.failed) failed loads, fds \(fdBase) -> \(fdAfter)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The loads themselves; everything they use is released on return.
    private func soak(_ urls: [URL], loads: Int) -> (SoakTally, [(loads: Int, rssMiB: Double, fds: Int, cacheMiB: Double)], Double) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdimage-soak-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = SDImageCacheConfig()
        config.maxMemoryCost = memoryMiB << 20
        let cache = SDImageCache(namespace: "soak", diskCacheDirectory: dir, config: config)
        let manager = SDWebImageManager(cache: cache, loader: SDWebImageDownloader())
        var rng = SystemRandomNumberGenerator()
        let window = DispatchSemaphore(value: 32)
        let group = DispatchGroup()
        let tally = SoakTally()
        var curve: [(loads: Int, rssMiB: Double, fds: Int, cacheMiB: Double)] = []
        let step = max(1, loads / 20)
        let start = Date()
        for i in 0..<loads {
            window.wait()
            group.enter()
            var options: SDWebImageOptions = [.retryFailed]
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: options.insert(.lowPriority)
            case 1: options.insert(.highPriority)
            default: break
            }
            var context: SDWebImageContext = [:]
            if Int.random(in: 0..<4, using: &rng) == 0 {
                context[.imageThumbnailPixelSize] = CGSize(width: 128, height: 128)
            }
            let url = urls[Int.random(in: 0..<urls.count, using: &rng)]
            let cancel = Int.random(in: 0..<10, using: &rng) == 0
            let op = manager.loadImage(with: url, options: options, context: context) { image, _, error, type, finished, _ in
                guard finished else { return }
                tally.record(image: image != nil, error: error, type: type)
                window.signal()
                group.leave()
            }
            if cancel { op?.cancel() }
            if (i + 1) % step == 0 {
                curve.append((i + 1, Self.rssMiB(), Self.openFDs(), Double(cache.memoryCost) / 1048576))
                if !common.json && loads == self.loads {
                    FileHandle.standardError.write(Data(String(format: "soak: %6d loads, RSS %7.1f MiB, fds %4d, memory cache %6.1f MiB\n",
                                                               i + 1, curve.last!.rssMiB, curve.last!.fds, curve.last!.cacheMiB).utf8))
                }
            }
        }
        group.wait()
        cache.waitForPendingWrites()
        return (tally, curve, Date().timeIntervalSince(start))
    }

    static func rssMiB() -> Double { Double(SystemMemory.residentBytes) / 1048576 }

    static func openFDs() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }
}

final class SoakTally: Sendable {
    struct Counts: Sendable { var ok = 0, cancelled = 0, failed = 0, memory = 0, disk = 0, network = 0 }
    private let counts = Locked(Counts())
    var ok: Int { counts.current.ok }
    var cancelled: Int { counts.current.cancelled }
    var failed: Int { counts.current.failed }
    var memory: Int { counts.current.memory }
    var disk: Int { counts.current.disk }
    var network: Int { counts.current.network }
    func record(image: Bool, error: (any Error)?, type: SDImageCacheType) {
        counts.withLock { c in
            if let e = error as? SDWebImageError, e.code == .cancelled { c.cancelled += 1; return }
            guard image, error == nil else { c.failed += 1; return }
            c.ok += 1
            switch type {
            case .memory: c.memory += 1
            case .disk: c.disk += 1
            default: c.network += 1
            }
        }
    }
}
