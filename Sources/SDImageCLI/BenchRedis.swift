import ArgumentParser
import Dispatch
import Foundation
import SDWebImage
import SDWebImageRedis
#if canImport(Glibc)
import Glibc
import SDSync
#endif

/// `sdimage bench redis`: what the shared tier costs and buys. Latency of one
/// image at a time — a Redis (L2) hit, a local disk hit and a fetch from
/// nginx, each read and decoded to the same bitmap on the same thread — and
/// the throughput of 1, 2 and 3 `sdimage fetch --fleet-lock` processes
/// loading the same list through one Redis with empty local caches.
struct BenchRedis: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redis",
        abstract: "Redis tier: L2 hit vs disk hit vs loopback fetch latency (p50/p99); fleet throughput for 1-3 processes.")

    @Option(help: "Number of generated JPEGs served.")
    var count = 200

    @Option(help: "Latency rounds over the files (samples = count x rounds).")
    var rounds = 3

    @Option(help: ArgumentHelp("Use this Redis (redis://host:port); its databases 10-14 are flushed. Default: start a redis-server on a free loopback port.", valueName: "url"))
    var redis: String?

    @OptionGroup var common: BenchOptions

    func run() throws {
        let server = try BenchServer(binary: benchBinaryPath(common.benchBinary), count: count)
        defer { server.stop() }
        let own = redis == nil ? try RedisServerProcess() : nil
        defer { own?.stop() }
        let base = redis ?? own!.url
        let urls = server.urls
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdimage-bench-redis-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }

        // fill a local disk cache and the Redis tier with the same bytes
        let tier = try SDImageRedisCache(url: base + "/10", namespace: "bench", options: Self.tierOptions)
        tier.store.removeAllData()
        let config = SDImageCacheConfig()
        config.shouldCacheImagesInMemory = false
        let local = SDImageCache(namespace: "bench", diskCacheDirectory: dir + "/local", config: config)
        let downloader = SDWebImageDownloader(config: SDWebImageDownloaderConfig())
        for url in urls {
            guard let data = try? Data(contentsOf: url) else { fail("cannot fetch \(url)") }
            try? local.storeImageData(toDisk: data, forKey: url.absoluteString)
            try? tier.store.setData(data, forKey: url.absoluteString, extendedData: nil)
        }
        guard tier.store.totalCount() == urls.count else { fail("Redis at \(base) did not take every image") }

        // one image at a time, read + decode, the three places interleaved per image
        var l2: [Double] = [], disk: [Double] = [], net: [Double] = []
        var l2Bytes: [Double] = [], diskBytes: [Double] = []
        var wrong = 0
        for _ in 0..<rounds {
            for url in urls {
                let key = url.absoluteString
                l2.append(ms { if tier.cache.imageFromDiskCache(forKey: key) == nil { wrong += 1 } })
                disk.append(ms { if local.imageFromDiskCache(forKey: key) == nil { wrong += 1 } })
                net.append(ms { if fetch(downloader, url) == nil { wrong += 1 } })
                l2Bytes.append(ms { _ = tier.store.data(forKey: key) })
                diskBytes.append(ms { _ = local.diskImageData(forKey: key) })
            }
        }
        if wrong > 0 { fail("bench redis: \(wrong) reads or fetches failed") }

        // the fleet: k processes, fresh local caches, an empty Redis database each run
        let list = dir + "/urls.txt"
        try urls.map(\.absoluteString).joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        var fleet: [(String, Int, Double)] = []
        for (db, k, lock) in [(11, 1, true), (12, 2, true), (13, 3, true), (14, 3, false)] {
            let url = base + "/\(db)"
            try SDRedisDiskCache(url: url).removeAllData()
            let wall = try runFleet(k, url, list, lock: lock, dir: dir + "/fleet-\(db)")
            fleet.append((lock ? "fleet-lock" : "no lock", k, Double(k * urls.count) / wall))
        }

        let p = { (xs: [Double], q: Double) -> Double in (percentile(xs, q) * 1000).rounded() / 1000 }
        if common.json {
            var out: [String: Any] = [
                "bench": "redis", "images": urls.count, "samples": l2.count,
                "l2_hit_ms_p50": p(l2, 0.5), "l2_hit_ms_p99": p(l2, 0.99),
                "disk_hit_ms_p50": p(disk, 0.5), "disk_hit_ms_p99": p(disk, 0.99),
                "fetch_ms_p50": p(net, 0.5), "fetch_ms_p99": p(net, 0.99),
                "l2_bytes_ms_p50": p(l2Bytes, 0.5), "disk_bytes_ms_p50": p(diskBytes, 0.5),
            ]
            for (mode, k, ips) in fleet { out["fleet_\(mode == "no lock" ? "nolock" : "lock")_\(k)_ips"] = ips.rounded() }
            let text = try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])
            print(String(decoding: text, as: UTF8.self))
            return
        }
        print("sdimage bench redis: \(urls.count) JPEGs (\(bytesOf(urls, local)) KB average), Redis and nginx on loopback\n")
        print("one image at a time, read + decode to the same bitmap     p50 ms    p99 ms")
        print(String(format: "  Redis hit (L2: GET, CRC-32 check, decode)          %8.3f  %8.3f", p(l2, 0.5), p(l2, 0.99)))
        print(String(format: "  local disk hit (read, decode)                      %8.3f  %8.3f", p(disk, 0.5), p(disk, 0.99)))
        print(String(format: "  fetch from nginx (HTTP/1.1, decode)                %8.3f  %8.3f", p(net, 0.5), p(net, 0.99)))
        print(String(format: "  bytes only: Redis GET + check %.3f, disk read %.3f (p50)", p(l2Bytes, 0.5), p(diskBytes, 0.5)))
        print("\nfleet: processes loading the same \(urls.count) URLs, empty local caches, one Redis")
        for (mode, k, ips) in fleet {
            print(String(format: "  %d process%@, %@  %8.0f images/s delivered in all", k, k == 1 ? "  " : "es",
                         mode.padding(toLength: 10, withPad: " ", startingAt: 0), ips))
        }
    }

    static var tierOptions: SDRedisDiskCache.Options {
        var o = SDRedisDiskCache.Options()
        o.timeout = 5
        return o
    }

    private func ms(_ body: () -> Void) -> Double {
        let t0 = DispatchTime.now().uptimeNanoseconds
        body()
        return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
    }

    private func fetch(_ d: SDWebImageDownloader, _ url: URL) -> SDImage? {
        let done = DispatchSemaphore(value: 0)
        let box = ImageBox()
        d.downloadImage(with: url, options: [], context: nil, progress: nil) { image, _, _, finished in
            if finished { box.image = image; done.signal() }
        }
        done.wait()
        return box.image
    }

    private func bytesOf(_ urls: [URL], _ c: SDImageCache) -> Int {
        let total = urls.reduce(0) { $0 + (c.diskImageData(forKey: $1.absoluteString)?.count ?? 0) }
        return urls.isEmpty ? 0 : total / urls.count / 1000
    }

    /// Wall time of k `sdimage fetch` processes started together.
    private func runFleet(_ k: Int, _ redis: String, _ list: String, lock: Bool, dir: String) throws -> Double {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let start = DispatchTime.now().uptimeNanoseconds
        let procs = try (0..<k).map { i -> Process in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: me)
            p.arguments = ["fetch", "--list", list, "--cache-dir", dir + "-\(i)", "--redis", redis, "--concurrency", "8",
                           "--json"] + (lock ? ["--fleet-lock"] : [])
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }
        for p in procs {
            p.waitUntilExit()
            if p.terminationStatus != 0 { fail("a fleet process failed (exit \(p.terminationStatus))") }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
}

private final class ImageBox: Sendable {
    private let box = Locked<SDImage?>(nil)
    var image: SDImage? {
        get { box.current }
        set { box.set(newValue) }
    }
}

/// The q-quantile of `xs` by nearest rank (0.5: the median); 0 when empty.
/// The one rule behind every p50/p95/p99 `sdimage` prints.
func percentile(_ xs: [Double], _ q: Double) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? 0 : s[min(s.count - 1, Int(Double(s.count - 1) * q + 0.5))]
}

/// A redis-server of the bench's own on a free loopback port, nothing persisted.
final class RedisServerProcess {
    let url: String
    private let process = Process()

    init() throws {
        let port = freeLoopbackPort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["redis-server", "--port", "\(port)", "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        url = "redis://127.0.0.1:\(port)"
        for _ in 0..<200 {
            if canConnect(port) { return }
            usleep(25_000)
        }
        process.terminate()
        fail("redis-server did not start (make deps installs it)")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// Whether something listens on 127.0.0.1:port.
func canConnect(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
    }
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return Int(UInt16(bigEndian: addr.sin_port))
}
