import ArgumentParser
import Dispatch
import Foundation
import Logging
import SDWebImage
import SDWebImageRedis
#if canImport(Glibc)
import Glibc
import SDSync
#endif

/// `sdimage fetch`: load images through SDWebImageManager (cache, then network).
struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load images through SDWebImageManager: memory, disk, then network; summary and failures at the end.",
        discussion: """
            Exit status: 0 when every image loaded, 1 when some failed, 2 on a usage error.
            With --cold-warm-hot the list is loaded three times in one process:
            as the cache stands (cold on an empty cache), after dropping the memory
            cache (warm: from disk) and again (hot: from memory).
            """)

    @Argument(help: "Image URLs (http, https, file).")
    var urls: [String] = []

    @Option(help: "A file with one URL per line ('#' starts a comment).")
    var list: String?

    @OptionGroup(title: "Network") var network: FetchNetworkOptions
    @OptionGroup(title: "Untrusted URLs") var safety: FetchSafetyOptions
    @OptionGroup(title: "Cache") var cache: FetchCacheOptions
    @OptionGroup(title: "Decode") var decode: FetchDecodeOptions
    @OptionGroup(title: "Output") var output: FetchOutputOptions
    @OptionGroup(title: "Fleet (a shared Redis tier)") var fleet: FetchFleetOptions

    var concurrency: Int { network.concurrency }
    var maxPerHost: Int { network.maxPerHost }
    var retries: Int { network.retries }
    var timeout: Double? { network.timeout }
    var maxRedirects: Int? { network.maxRedirects }
    var maxBytes: Int? { network.maxBytes }
    var proxy: String? { network.proxy }
    var insecure: Bool { network.insecure }
    var serverPolicy: Bool { safety.serverPolicy }
    var trustHost: [String] { safety.trustHost }
    var noFile: Bool { safety.noFile }
    var cacheOptions: CacheOptions { cache.cacheOptions }
    var noCache: Bool { cache.noCache }
    var memoryCache: Int { cache.memoryCache }
    var refresh: Bool { cache.refresh }
    var progressive: Bool { decode.progressive }
    var thumbnail: Int? { decode.thumbnail }
    var maxPixels: Int? { decode.maxPixels }
    var maxDimension: Int? { decode.maxDimension }
    var maxCodecMemory: Int? { decode.maxCodecMemory }
    var decodeBudget: Int? { decode.decodeBudget }
    var out: String? { output.out }
    var contactSheet: String? { output.contactSheet }
    var json: Bool { output.json }
    var coldWarmHot: Bool { output.coldWarmHot }
    var redis: String? { fleet.redis }
    var fleetLock: Bool { fleet.fleetLock }

    func validate() throws {
        if concurrency <= 0 { throw ValidationError("--concurrency must be positive") }
        if retries < 0 { throw ValidationError("--retries must not be negative") }
        if maxPerHost < 0 { throw ValidationError("--max-per-host must not be negative") }
        if let b = maxBytes, b <= 0 { throw ValidationError("--max-bytes must be positive") }
        if let t = thumbnail, t <= 0 { throw ValidationError("--thumbnail must be positive") }
        if let l = decode.settleLevels, l < -1 || l > 255 { throw ValidationError("--settle-levels must be -1 (never end early) to 255") }
        try validateFilter(decode.filter)
        if let r = maxRedirects, r < 0 { throw ValidationError("--max-redirects must not be negative") }
        if let t = timeout, !(t > 0) { throw ValidationError("--timeout must be positive") }
        for (flag, v) in [("--max-pixels", maxPixels), ("--max-dimension", maxDimension),
                          ("--max-codec-memory", maxCodecMemory), ("--decode-budget", decodeBudget)] {
            if let v, v <= 0 { throw ValidationError("\(flag) must be positive") }
        }
        if memoryCache < 0 { throw ValidationError("--memory-cache must not be negative") }
        if urls.isEmpty && list == nil { throw ValidationError("give URLs or --list FILE") }
        if noCache && coldWarmHot { throw ValidationError("--cold-warm-hot needs the cache") }
        if fleetLock && redis == nil { throw ValidationError("--fleet-lock needs --redis") }
    }

    func run() throws {
        var all = urls
        if let list {
            guard let text = try? String(contentsOfFile: list, encoding: .utf8) else {
                throw ValidationError("cannot read \(list)")
            }
            all += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        let targets = all.map { URL(string: $0) }
        let downloaderConfig = serverPolicy ? SDWebImageDownloaderConfig.server() : SDWebImageDownloaderConfig()
        downloaderConfig.logger = Logger(label: "sdwebimage.downloader")
        SDWebImageDownloader.coreLogger = Logger(label: "sdwebimage.core")
        downloaderConfig.maxConcurrentDownloads = concurrency
        downloaderConfig.maxConnectionsPerHost = maxPerHost
        if let maxBytes { downloaderConfig.maxResponseBytes = maxBytes }
        if let levels = decode.settleLevels { downloaderConfig.thumbnailSettleLevels = levels }
        var limits = downloaderConfig.decodeLimits
        if let maxPixels { limits.maxPixels = maxPixels }
        if let maxDimension { limits.maxDimension = maxDimension }
        if let maxCodecMemory { limits.maxCodecMemory = maxCodecMemory << 20 }
        downloaderConfig.decodeLimits = limits
        var isolation: DecoderIsolation?
        if decode.isolateDecoders {  // this program is the worker (main starts with runWorkerIfAsked)
            var l = DecoderIsolation.Limits()
            if let ms = decode.decodeCpuMs { l.cpuMilliseconds = max(1, ms) }
            do {
                isolation = try DecoderIsolation(workers: concurrency, limits: l)
            } catch {
                throw ValidationError("--isolate-decoders: \(error.message)")
            }
            downloaderConfig.decoderIsolation = isolation
        }
        let config = SDImageCacheConfig()
        config.maxMemoryCost = coldWarmHot ? 0 : memoryCache << 20  // hot pass: every image stays in memory
        config.shouldCacheImagesInMemory = coldWarmHot || memoryCache > 0
        config.decodeLimits = limits  // a cache folder or Redis others write to gets the same caps
        config.decoderIsolation = isolation
        config.logger = Logger(label: "sdwebimage.cache")  // the library's lines on stderr at SDIMAGE_LOG_LEVEL
        let cache = cacheOptions.open(config)
        downloaderConfig.proxy = proxy
        if let maxRedirects { downloaderConfig.maxRedirects = maxRedirects }
        if let timeout { downloaderConfig.downloadTotalTimeout = timeout }
        if let decodeBudget { ImageDecoder.memoryBudget = decodeBudget << 20 }
        var policy = downloaderConfig.urlPolicy
        if noFile && policy.allowedSchemes == nil { policy.allowedSchemes = ["http", "https"] }
        policy.trustedHosts += trustHost
        downloaderConfig.urlPolicy = policy
        var redisTier: SDImageRedisCache?
        if let redis {
            var o = SDRedisDiskCache.Options()
            o.logger = Logger(label: "sdwebimage.redis")
            o.connections = concurrency
            do { redisTier = try SDImageRedisCache(url: redis, options: o, config: config) } catch {
                throw ValidationError("--redis: \(error)")
            }
        }
        let tiers: any SDImageCacheProtocol
        if let redisTier {
            tiers = redisTier.tiered(behind: cache)
        } else {
            tiers = cache
        }
        defer { redisTier?.waitForPendingWrites() }
        let downloader = SDWebImageDownloader(config: downloaderConfig)
        var fleet: SDRedisFleetLoader?
        if fleetLock, let redisTier {
            var o = SDRedisFleetLoader.Options()
            o.logger = Logger(label: "sdwebimage.redis")
            o.maxWait = downloaderConfig.downloadTimeout
            fleet = SDRedisFleetLoader(loader: downloader, cache: redisTier, options: o)
        }
        let manager = SDWebImageManager(cache: tiers, loader: fleet ?? downloader, logger: Logger(label: "sdwebimage.manager"))
        if retries > 0 { manager.retryPolicy = SDWebImageRetryPolicy(maxRetryCount: retries) }

        var options: SDWebImageOptions = [.retryFailed]
        if progressive { options.insert(.progressiveLoad) }
        if refresh { options.insert(.refreshCached) }
        if decode.wholeFile { options.insert(.fetchWholeFile) }
        if insecure { options.insert(.allowInvalidSSLCertificates) }
        var context: SDWebImageContext = [:]
        if let t = thumbnail { context[.imageThumbnailPixelSize] = CGSize(width: t, height: t) }
        if let f = decode.filter.flatMap(Resampling.Filter.init(name:)) { context[.imageResampling] = f }
        if noCache {
            options.insert(.fromLoaderOnly)
            context[.storeCacheType] = SDImageCacheType.none
            context[.originalStoreCacheType] = SDImageCacheType.none  // a thumbnail's original neither
        }

        var passes: [(String, Pass)] = []
        let names = coldWarmHot ? ["cold", "warm", "hot"] : ["fetch"]
        for (n, name) in names.enumerated() {
            if n == 1 {
                cache.waitForPendingWrites()
                cache.clearMemory()
            }
            let pass = Pass(manager: manager, targets: targets, options: options, context: context,
                            concurrency: concurrency, keepImages: contactSheet != nil || out != nil, label: name,
                            quiet: json)
            let redisBefore = redisTier?.hits ?? 0
            pass.run()
            pass.countRedis((redisTier?.hits ?? 0) - redisBefore)
            cache.waitForPendingWrites()
            passes.append((name, pass))
        }
        let last = passes.last!.1
        if let out { try writePNGs(last, to: out) }
        if let contactSheet, let sheet = ContactSheet.make(last.images.compactMap { $0 }) {
            guard let png = sheet.pngData() else { throw ValidationError("could not encode the contact sheet") }
            try png.write(to: URL(fileURLWithPath: contactSheet))
            if !json { print("contact sheet: \(contactSheet) (\(sheet.width)x\(sheet.height))") }
        }
        report(passes, fleet: fleet?.statistics)
        if passes.contains(where: { $0.1.failures > 0 }) { throw ExitCode(1) }
    }

    private func writePNGs(_ pass: Pass, to dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for (i, image) in pass.images.enumerated() {
            guard let image, let png = image.pngData() else { continue }
            let name = (pass.targets[i]?.deletingPathExtension().lastPathComponent ?? "image")
                .replacingOccurrences(of: "/", with: "_")
            try png.write(to: URL(fileURLWithPath: dir).appendingPathComponent(String(format: "%04d-%@.png", i, name)))
        }
    }

    private func report(_ passes: [(String, Pass)], fleet: SDRedisFleetLoader.Statistics?) {
        if json {
            var out: [String: Any] = [:]
            for (name, p) in passes { out[name] = p.summary }
            if passes.count == 1 { out = passes[0].1.summary }
            if let f = fleet {
                out["fleet"] = ["fetched": f.fetched, "shared": f.shared, "took_over": f.tookOver,
                                "uncoordinated": f.uncoordinated, "waits_timed_out": f.waitsTimedOut, "gone": f.gone]
            }
            if let data = try? JSONSerialization.data(withJSONObject: out,
                                                       options: [.sortedKeys]) {
                print(String(decoding: data, as: UTF8.self))
            }
            return
        }
        var rows: [(String, (Pass) -> String)] = [
            ("images ok", { "\($0.counts.ok)" }), ("failed", { "\($0.counts.failures)" }),
            ("animated", { "\($0.counts.animated)" }), ("their frames", { "\($0.counts.animatedFrames)" }),
            ("from network", { "\($0.counts.network)" }), ("from disk", { "\($0.counts.disk)" }),
            ("from Redis", { "\($0.counts.redis)" }), ("from memory", { "\($0.counts.memory)" }),
            ("MB downloaded", { String(format: "%.1f", Double($0.counts.bytes) / 1e6) }),
            ("MB fetched", { String(format: "%.2f", Double($0.transferred.fetched) / 1e6) }),
            ("of whole files", { let t = $0.transferred; return t.whole > 0 ? String(format: "%.0f%%", 100 * Double(t.fetched) / Double(t.whole)) : "-" }),
            ("wall time (s)", { String(format: "%.2f", $0.counts.wall) }),
            ("images/s", { let c = $0.counts; return String(format: "%.0f", c.wall > 0 ? Double(c.ok) / c.wall : 0) }),
            ("p50 latency (ms)", { String(format: "%.1f", $0.percentile(0.5)) }),
            ("p95 latency (ms)", { String(format: "%.1f", $0.percentile(0.95)) }),
        ]
        if redis == nil { rows.removeAll { $0.0 == "from Redis" } }
        print("")
        print("".padding(toLength: 18, withPad: " ", startingAt: 0)
              + passes.map { $0.0.leftPad(10) }.joined(separator: " "))
        for (label, value) in rows {
            print(label.padding(toLength: 18, withPad: " ", startingAt: 0) + passes.map { value($0.1).leftPad(10) }.joined(separator: " "))
        }
        if let f = fleet {
            print("fleet: \(f.fetched) fetched holding the lease (\(f.tookOver) taken over), \(f.shared) read from Redis "
                  + "after another process fetched them, \(f.uncoordinated) fetched alone (\(f.waitsTimedOut) waits ran out), "
                  + "\(f.gone) failed on another process's 404/410")
        }
        for (name, p) in passes {
            for (i, e) in p.errors.enumerated() where e != nil {
                let prefix = passes.count > 1 ? "[\(name)] " : ""
                FileHandle.standardError.write(Data("\(prefix)FAILED \(p.targets[i]?.absoluteString ?? "(invalid URL)"): \(e!)\n".utf8))
            }
        }
    }
}

private extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}

/// One run over the list.
final class Pass: Sendable {
    let manager: SDWebImageManager
    let targets: [URL?]
    let options: SDWebImageOptions
    let context: SDWebImageContext
    let concurrency: Int
    let keepImages: Bool
    let label: String
    let quiet: Bool
    private struct Stats {
        var images: [SDImage?]
        var errors: [String?]
        var latencies: [Double] = []
        var ok = 0, failures = 0, network = 0, disk = 0, redis = 0, memory = 0, bytes = 0, done = 0
        /// Bytes the transfers received, and the whole files' lengths (more
        /// when thumbnails ended their transfers early).
        var fetched = 0, whole = 0, transfers = 0
        /// Animations among the images, their frames and seconds per loop.
        var animated = 0, animatedFrames = 0, animatedSeconds = 0.0
        var wall = 0.0
    }
    private let stats: Locked<Stats>
    var images: [SDImage?] { stats.current.images }
    var failures: Int { stats.current.failures }
    var errors: [String?] { stats.current.errors }

    init(manager: SDWebImageManager, targets: [URL?], options: SDWebImageOptions, context: SDWebImageContext,
         concurrency: Int, keepImages: Bool, label: String, quiet: Bool) {
        self.manager = manager
        self.targets = targets
        self.options = options
        self.context = context
        self.concurrency = concurrency
        self.keepImages = keepImages
        self.label = label
        self.quiet = quiet
        stats = Locked(Stats(images: Array(repeating: nil, count: targets.count),
                             errors: Array(repeating: nil, count: targets.count)))
    }

    func run() {
        let window = DispatchSemaphore(value: concurrency)
        let group = DispatchGroup()
        let start = Date()
        let bar = ProgressBar(total: targets.count, label: label, enabled: !quiet)
        var ctx = context
        ctx[.callbackQueue] = DispatchQueue(label: "sdimage.fetch")
        // every transfer's bytes against its file's length (an operation
        // says it stopped after its loads were answered: counted until every
        // one that started has)
        let started = NotificationCenter.default.addObserver(forName: .SDWebImageDownloadStart, object: nil,
                                                             queue: nil) { [stats] _ in stats.withLock { $0.transfers += 1 } }
        let stopped = NotificationCenter.default.addObserver(forName: .SDWebImageDownloadStop, object: nil,
                                                             queue: nil) { [stats] n in
            let m = (n.object as? SDWebImageDownloaderOperation)?.metrics
            stats.withLock { s in
                s.transfers -= 1
                guard let m else { return }
                s.fetched += m.bytes
                s.whole += m.endedEarly && m.fullLength > 0 ? m.fullLength : m.bytes + m.resumedBytes
            }
        }
        defer {
            for _ in 0..<30_000 where stats.current.transfers > 0 { usleep(1000) }
            NotificationCenter.default.removeObserver(started)
            NotificationCenter.default.removeObserver(stopped)
        }
        for (i, url) in targets.enumerated() {
            window.wait()
            group.enter()
            let t0 = Date()
            // With --refresh the completion can run twice (the cached image,
            // then a changed one) or once (the server says it is current):
            // keep the last answer and count the URL when the load is over.
            let last = LastAnswer()
            let op = manager.loadImage(with: url, options: options, context: ctx) { image, data, error, type, finished, _ in
                guard finished else { return }
                last.set(image: error == nil ? image : nil, bytes: data?.count ?? 0, error: error, type: type)
            }
            let finish: @Sendable () -> Void = { [self] in
                record(i, last, ms: Date().timeIntervalSince(t0) * 1000, bar: bar)
                window.signal()
                group.leave()
            }
            if let op { op.whenFinished(finish) } else { finish() }
        }
        group.wait()
        stats.withLock { $0.wall = Date().timeIntervalSince(start) }
        bar.finish()
    }

    private func record(_ i: Int, _ last: LastAnswer, ms: Double, bar: ProgressBar) {
        let (image, bytes, error, type) = last.get()
        let keepImages = self.keepImages
        let (d, b) = stats.withLock { s in
            s.done += 1
            if let image {
                s.ok += 1
                if keepImages { s.images[i] = image }
                if image.sd_isAnimated {
                    s.animated += 1
                    s.animatedFrames += image.sd_imageFrameCount
                    s.animatedSeconds += image.duration
                }
                switch type {
                case .memory: s.memory += 1
                case .disk: s.disk += 1
                default: s.network += 1; s.bytes += bytes
                }
                s.latencies.append(ms)
            } else {
                s.failures += 1
                s.errors[i] = error.map { "\($0)" } ?? "no image"
            }
            return (s.done, s.bytes)
        }
        bar.update(done: d, bytes: b)
    }

    /// Of the disk hits, `n` came from the Redis tier (it answers as a disk).
    func countRedis(_ n: Int) {
        stats.withLock { s in
            s.redis = min(n, s.disk)
            s.disk -= s.redis
        }
    }

    func percentile(_ p: Double) -> Double { SDImageCLI.percentile(stats.current.latencies, p) }

    /// The counters now, for the table.
    var counts: (ok: Int, failures: Int, animated: Int, animatedFrames: Int, network: Int, disk: Int, redis: Int,
                 memory: Int, bytes: Int, wall: Double) {
        let s = stats.current
        return (s.ok, s.failures, s.animated, s.animatedFrames, s.network, s.disk, s.redis, s.memory, s.bytes, s.wall)
    }

    /// Bytes the transfers received, and the lengths of the files they were of.
    var transferred: (fetched: Int, whole: Int) { let s = stats.current; return (s.fetched, s.whole) }

    var summary: [String: Any] {
        let s = stats.current
        return ["images": targets.count, "ok": s.ok, "failed": s.failures, "animated": s.animated,
                "animated_frames": s.animatedFrames, "animated_duration_s": (s.animatedSeconds * 1000).rounded() / 1000,
                "network": s.network, "disk": s.disk, "redis": s.redis, "memory": s.memory,
                "bytes": s.bytes, "bytes_fetched": s.fetched, "bytes_whole": s.whole, "wall_s": (s.wall * 1000).rounded() / 1000,
                "p50_ms": (percentile(0.5) * 10).rounded() / 10, "p95_ms": (percentile(0.95) * 10).rounded() / 10,
                "failures": s.errors.enumerated().compactMap { i, e in e.map { ["url": targets[i]?.absoluteString ?? "", "error": $0] } }]
    }
}

/// The last final answer of one load.
private final class LastAnswer: Sendable {
    private let state = Locked<(SDImage?, Int, (any Error)?, SDImageCacheType)>((nil, 0, nil, .none))

    func set(image: SDImage?, bytes: Int, error: (any Error)?, type: SDImageCacheType) {
        state.set((image, bytes, error, type))
    }

    func get() -> (SDImage?, Int, (any Error)?, SDImageCacheType) { state.current }
}

/// A live bar on a terminal (count, bytes, rate, ETA); plain lines otherwise.
final class ProgressBar: Sendable {
    private let total: Int
    private let label: String
    private let enabled: Bool
    private let tty = isatty(2) != 0
    private let start = Date()
    /// When the bar was last drawn, and the last quarter printed (no terminal).
    private let shown = Locked((lastPrint: Date.distantPast, lastTenth: -1))

    init(total: Int, label: String, enabled: Bool) {
        self.total = total
        self.label = label
        self.enabled = enabled
    }

    func update(done: Int, bytes: Int) {
        guard enabled else { return }
        shown.withLock { shown in draw(done: done, bytes: bytes, &shown.lastPrint, &shown.lastTenth) }
    }

    private func draw(done: Int, bytes: Int, _ lastPrint: inout Date, _ lastTenth: inout Int) {
        let elapsed = Date().timeIntervalSince(start)
        let rate = elapsed > 0 ? Double(bytes) / elapsed / 1e6 : 0
        let eta = done > 0 ? elapsed / Double(done) * Double(total - done) : 0
        if tty {
            guard Date().timeIntervalSince(lastPrint) > 0.1 || done == total else { return }
            lastPrint = Date()
            let width = 30, filled = total > 0 ? width * done / total : width
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            FileHandle.standardError.write(Data(String(format: "\r%@ [%@] %d/%d  %.1f MB  %.1f MB/s  ETA %.0fs ",
                                                       label, bar, done, total, Double(bytes) / 1e6, rate, eta).utf8))
        } else {
            let tenth = total > 0 ? done * 4 / total : 4  // quarters
            guard tenth != lastTenth else { return }
            lastTenth = tenth
            FileHandle.standardError.write(Data(String(format: "%@: %d/%d images, %.1f MB, %.1f MB/s\n",
                                                       label, done, total, Double(bytes) / 1e6, rate).utf8))
        }
    }

    func finish() {
        if enabled && tty { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

/// A grid of thumbnails on a dark background.
enum ContactSheet {
    static func make(_ images: [SDImage], cell: Int = 160, gap: Int = 8) -> SDImage? {
        guard !images.isEmpty else { return nil }
        let cols = Int(Double(images.count).squareRoot().rounded(.up))
        let rows = (images.count + cols - 1) / cols
        let w = cols * (cell + gap) + gap, h = rows * (cell + gap) + gap
        let thumbs: [Bitmap?] = images.map { image in
            let s = min(Double(cell) / Double(image.width), Double(cell) / Double(image.height), 1)
            return try? image.bitmap.scaled(width: max(1, Int(Double(image.width) * s)), height: max(1, Int(Double(image.height) * s)))
        }
        let sheet = try? Bitmap(width: w, height: h) { raw in
            let d = raw.bindMemory(to: UInt32.self)
            for i in 0..<(w * h) { d[i] = 0xFF20_2226 }
            for (n, t) in thumbs.enumerated() {
                guard let t else { continue }
                let x0 = gap + (n % cols) * (cell + gap) + (cell - t.width) / 2
                let y0 = gap + (n / cols) * (cell + gap) + (cell - t.height) / 2
                t.withUnsafeBytes { src in
                    let s = src.bindMemory(to: UInt32.self)
                    for y in 0..<t.height {
                        for x in 0..<t.width {
                            let p = s[y * (t.bytesPerRow / 4) + x], a = p >> 24
                            let bg: UInt32 = 0xFF20_2226
                            // source-over onto the background (premultiplied)
                            var out: UInt32 = 0xFF00_0000
                            for shift: UInt32 in [0, 8, 16] {
                                let c = ((p >> shift) & 255) + ((bg >> shift) & 255) * (255 - a) / 255
                                out |= min(255, c) << shift
                            }
                            d[(y0 + y) * w + x0 + x] = out
                        }
                    }
                }
                if images[n].sd_isAnimated && t.width >= 32 && t.height >= 24 {
                    badge(d, width: w, x: x0 + 4, y: y0 + 4)
                }
            }
        }
        return sheet.map { SDImage(bitmap: $0) }
    }

    static let badgeColour: UInt32 = 0xFFE0_3C31

    /// The animation badge on a thumbnail's corner: a red tag with a white
    /// "play" triangle (the sheet shows an animation's first frame).
    static func badge(_ d: UnsafeMutableBufferPointer<UInt32>, width w: Int, x x0: Int, y y0: Int) {
        let bw = 24, bh = 16
        for y in 0..<bh {
            for x in 0..<bw {
                // the triangle: from (9, 4) to (9, 12), tip at (16, 8)
                let inTriangle = x >= 9 && x <= 16 && abs(y - 8) * 7 <= (16 - x) * 4
                d[(y0 + y) * w + x0 + x] = inTriangle ? 0xFFFF_FFFF : badgeColour
            }
        }
    }
}
