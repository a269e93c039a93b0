import ArgumentParser
import Foundation
import Logging
import SDSync
import SDWebImage
import SDWebImageRedis
#if Serve
import Configuration
import SDImageServe
import SystemPackage
#endif

/// `sdimage serve`: imgproxy's processing URLs over HTTP, rendered by the
/// library (Sources/SDImageServe). Built with the Serve trait only.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve thumbnails: imgproxy's signed processing URLs over HTTP (needs the Serve trait).",
        discussion: """
            URLs: /SIGNATURE/OPTIONS/plain/SOURCE_URL@EXT or /SIGNATURE/OPTIONS/BASE64URL_SOURCE.EXT, \
            options rs/resize, s/size, rt, w, h, dpr, el, g, q, f, bg, ar as imgproxy names them. \
            Signature: URL-safe base64 of HMAC-SHA256(key, salt + the path after it). \
            Every flag has an environment variable SDIMAGE_SERVE_<FLAG> (e.g. SDIMAGE_SERVE_KEY) \
            and a key in the --config file (JSON, the flag's name: {"max-renders": 8, \
            "allow-source-host": ["cdn.internal"]}); a flag wins over its variable, the variable \
            over the file. Sources on non-public addresses are refused unless their host is \
            given with --allow-source-host.
            """)

    @Flag(help: "Local use: loopback only, a generated key and salt, a sample image and an example URL printed.")
    var dev = false
    @Option(help: "Address to listen on, HOST:PORT (port 0: any free one). Default 127.0.0.1:8080.")
    var listen: String?
    @Option(help: "Signing key, hex (imgproxy's IMGPROXY_KEY).")
    var key: String?
    @Option(help: "Signing salt, hex (imgproxy's IMGPROXY_SALT).")
    var salt: String?
    @Flag(help: "Serve unsigned URLs (any first segment, e.g. \"insecure\"). Never the default.")
    var insecureAllowUnsigned = false
    @Option(help: "A source host allowed on a non-public address (repeatable; a name or an IP literal, any port; HOST:PORT or [V6]:PORT for that port alone; ADDRESS/BITS for a range of addresses a URL names); a redirect reaches it so only from such a host.")
    var allowSourceHost: [String] = []
    @Option(help: "Cache-Control max-age of results, seconds (default 31536000).")
    var maxAge: Int?
    @Option(help: "Only sources whose URL starts with this prefix are rendered, others 404 (imgproxy's IMGPROXY_ALLOWED_SOURCES). Repeatable; default: any. It never opens a private address (--allow-source-host does).")
    var allowedSource: [String] = []
    @Option(help: "A preset, NAME=OPTIONS (as in a URL, '/' between them), for pr:NAME; one named 'default' comes before every URL's options. Repeatable; SDIMAGE_SERVE_PRESETS (or IMGPROXY_PRESETS) holds them comma-separated.")
    var preset: [String] = []
    @Option(help: "Default quality of JPEG, WebP and AVIF results, 1...100 (default: imgproxy's, JPEG 80, WebP 79, AVIF 63).")
    var quality: Int?
    @Option(help: "Shrink sources on load only down to N times the output, then Lanczos-3, 1...8 (default 2: fine detail does not alias; 1: as imgproxy and thumbor, fewer pixels decoded).")
    var shrinkMargin: Int?
    @Option(help: "Memory for encoded results, MiB (default 64).")
    var resultCacheMb: Int?
    @Option(help: "Disk for encoded results, MiB (default 1024; under --cache-dir/results).")
    var resultDiskMb: Int?
    @Option(help: "Disk for source images, MiB (default 1024; under --cache-dir; 0: none kept, each render fetches its source, as imgproxy).")
    var sourceDiskMb: Int?
    @Option(help: "Directory of the source and result caches (default: a fresh one under the temporary directory, removed at exit).")
    var cacheDir: String?
    @Option(help: "Renders at once (default: twice the cores).")
    var maxRenders: Int?
    @Option(help: "Sources fetched at once with sandboxed decoders, each before its render's turn and holding its bytes until that turn comes (a slow origin holds one of these, not a render); waiters queue as renders do (default: four per render).")
    var maxFetches: Int?
    @Option(help: "Renders waiting for a turn; past it 503 with Retry-After (default 64).")
    var queueDepth: Int?
    @Option(help: "Seconds a render may wait for a turn; past it 503 with Retry-After (default 60; 0: no limit).")
    var queueTimeout: Double?
    @Option(help: "Image requests one client address may have in flight; past it 429 with Retry-After (default 0: no limit).")
    var maxClientRequests: Int?
    @Option(help: "Largest source, MiB (default 20).")
    var maxSourceMb: Int?
    @Option(help: "Largest result side in pixels; a larger one is refused with 422 before it is drawn (default 16384; imgproxy's IMGPROXY_MAX_RESULT_DIMENSION).")
    var maxResultDimension: Int?
    @Option(help: "Largest source image, megapixels (default 40).")
    var maxMegapixels: Int?
    @Option(help: "Seconds a source may send nothing before it fails with 504 (default 10).")
    var sourceTimeout: Double?
    @Option(help: "Connections open at once on the image address; past it new ones wait in the kernel's backlog (default: the descriptor limit less 512; --metrics-listen's /health/live answers at the cap).")
    var maxConnections: Int?
    @Flag(help: "Run in process the decoders that by default run in sandboxed worker processes (seccomp, Landlock, memory, CPU and time limits): for benchmarks and trusted sources only.")
    var inProcessDecoders = false
    @Option(help: "CPU time one decode may use in its worker, ms; past it the worker is killed and the render fails with 422 (default 2000).")
    var decodeCpuMs: Int?
    @Option(help: "Wall time one decode may take in its worker, ms (default 10000).")
    var decodeWallMs: Int?
    @Option(help: "Address space of each decoder worker, MiB (default 2048).")
    var decodeMemoryMb: Int?
    @Option(help: "Serve /metrics on this HOST:PORT only (not beside the images); default: beside them (imgproxy's IMGPROXY_PROMETHEUS_BIND).")
    var metricsListen: String?
    @Option(help: "Seconds a connection may stay open with no request in progress before it is closed (default 60; imgproxy's IMGPROXY_KEEP_ALIVE_TIMEOUT).")
    var idleTimeout: Double?
    @Option(help: "Seconds requests in flight may take to finish after SIGTERM (default 30).")
    var drainTimeout: Double?
    @Option(help: "A Redis shared by the fleet (redis://host:port/db): sources and results cached there, one origin request per source and one render per result fleet-wide.")
    var redis: String?
    @Option(help: "With --redis: seconds a server waits for another's render (or source) before it makes its own (default 30).")
    var fleetWait: Double?
    @Option(help: "With --redis: seconds a render's lease lives unless its owner renews it (default 6).")
    var fleetLeaseTtl: Double?
    @Option(help: "Print the signed form of PATH (/OPTIONS/…) with --key and --salt, and exit.")
    var sign: String?

    @Option(name: .customLong("config"), help: "A JSON file of settings, keyed by the flags' names (SDIMAGE_SERVE_CONFIG).")
    var configFile: String?

    func run() throws {
        #if Serve
        // the server runs on Swift concurrency; this command's thread waits for it
        let failure = Locked<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let command = self
        Task {
            do { try await command.serve() } catch { failure.set(error) }
            done.signal()
        }
        done.wait()
        if let error = failure.current { throw error }
        #else
        FileHandle.standardError.write(Data("""
            sdimage serve: this sdimage was built without the Serve trait; build it with \
            `swift build --traits Serve` (make serve)\n
            """.utf8))
        throw ExitCode(2)
        #endif
    }

    #if Serve
    /// Where a setting comes from: the flag, else SDIMAGE_SERVE_<NAME>, else
    /// the --config file's key (the flag's name, lowercase with hyphens).
    struct Settings {
        let file: ConfigReader?

        func value(_ flag: String?, _ name: String) -> String? {
            if let flag { return flag }
            if let v = ProcessInfo.processInfo.environment["SDIMAGE_SERVE_" + name], !v.isEmpty { return v }
            if let v = Self.imgproxy(name) { return v }
            guard let file else { return nil }
            let key = ConfigKey(name.lowercased().replacingOccurrences(of: "_", with: "-"))
            if let s = file.string(forKey: key) { return s }
            if let i = file.int(forKey: key) { return String(i) }
            if let d = file.double(forKey: key) { return String(d) }
            if let b = file.bool(forKey: key) { return b ? "true" : "false" }
            return nil
        }

        /// imgproxy's environment, read as ours (after SDIMAGE_SERVE_*), in our units.
        static func imgproxy(_ name: String) -> String? {
            let env = ProcessInfo.processInfo.environment
            func v(_ k: String) -> String? { env[k].flatMap { $0.isEmpty ? nil : $0 } }
            switch name {
            case "KEY", "SALT", "QUALITY", "FORMAT_QUALITY", "SIGNATURE_SIZE", "PRESETS": return v("IMGPROXY_" + name)
            case "MAX_AGE": return v("IMGPROXY_TTL")
            case "IDLE_TIMEOUT": return v("IMGPROXY_KEEP_ALIVE_TIMEOUT")
            case "METRICS_LISTEN": return v("IMGPROXY_PROMETHEUS_BIND").map { $0.hasPrefix(":") ? "127.0.0.1" + $0 : $0 }
            case "MAX_RESULT_DIMENSION":  // imgproxy's 0 is "no limit": ours stays at its most
                return v("IMGPROXY_MAX_RESULT_DIMENSION").map { $0 == "0" ? "16384" : $0 }
            case "LISTEN":  // ":8080" is every interface, as imgproxy binds it
                return v("IMGPROXY_BIND").map { $0.hasPrefix(":") ? "0.0.0.0" + $0 : $0 }
            case "MAX_MEGAPIXELS":  // whole megapixels here, up; the exact pixels: imgproxyPixels
                return v("IMGPROXY_MAX_SRC_RESOLUTION").flatMap(Double.init).map { String(min(1000, max(1, Int($0.rounded(.up))))) }
            case "MAX_SOURCE_MB":  // whole MiB here, up (0: no limit); the exact bytes: imgproxyBytes
                return v("IMGPROXY_MAX_SRC_FILE_SIZE").flatMap(Int.init).map { $0 <= 0 ? "4096" : String(min(4096, ($0 + (1 << 20) - 1) >> 20)) }
            case "ALLOWED_SOURCE": return v("IMGPROXY_ALLOWED_SOURCES")
            default: return nil
            }
        }

        func list(_ flag: [String], _ name: String) -> [String] {
            if !flag.isEmpty { return flag }
            if let v = ProcessInfo.processInfo.environment["SDIMAGE_SERVE_" + name] ?? Self.imgproxy(name), !v.isEmpty {
                return v.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            }
            let key = ConfigKey(name.lowercased().replacingOccurrences(of: "_", with: "-"))
            return file?.stringArray(forKey: key) ?? file?.string(forKey: key).map { [$0] } ?? []
        }

        func bool(_ flag: Bool, _ name: String) -> Bool {
            flag || ["1", "true", "yes"].contains(value(nil, name)?.lowercased() ?? "")
        }
    }

    /// As many descriptors as the hard limit allows (a connection is one;
    /// the soft limit is often 1,024).
    static func raiseOpenFileLimit() {
        var r = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0, r.rlim_cur < r.rlim_max else { return }
        r.rlim_cur = r.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r)
    }

    func serve() async throws {
        let env = ProcessInfo.processInfo.environment
        var file: ConfigReader?
        if let path = configFile ?? env["SDIMAGE_SERVE_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 }) {
            do {
                file = ConfigReader(provider: try await FileProvider<JSONSnapshot>(filePath: FilePath(path)))
            } catch {
                throw ValidationError("--config \(path): \(error)")
            }
        }
        let settings = Settings(file: file)
        var keyHex = settings.value(key, "KEY"), saltHex = settings.value(salt, "SALT")
        if dev, keyHex == nil {
            keyHex = Self.randomHex(32)
            saltHex = Self.randomHex(16)
        }
        var signer: URLSigner?
        if let keyHex {  // comma-separated: several pairs (key rotation), as imgproxy
            let keys = keyHex.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            var salts = (saltHex ?? "").split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            if salts.count == 1 && keys.count > 1 && salts[0].isEmpty { salts = Array(repeating: "", count: keys.count) }
            let sizeText = settings.value(nil, "SIGNATURE_SIZE") ?? "32"
            guard let size = Int(sizeText), (1...32).contains(size) else {
                throw ValidationError("the signature size must be 1...32 bytes, not \(sizeText)")
            }
            guard let s = URLSigner(keysHex: keys, saltsHex: salts, signatureSize: size) else {
                throw ValidationError("--key and --salt must be hex (an even number of 0-9a-f), the key not empty, "
                                      + "as many salts as keys")
            }
            signer = s
        }
        if let path = sign {
            guard let signer else { throw ValidationError("--sign needs --key (and --salt)") }
            print("/" + signer.signature(of: Substring(path)) + path)
            return
        }
        let unsigned = settings.bool(insecureAllowUnsigned, "INSECURE_ALLOW_UNSIGNED")
        if signer == nil && !unsigned {
            throw ValidationError("no signing key: give --key and --salt (SDIMAGE_SERVE_KEY/SALT), or --dev, "
                                  + "or --insecure-allow-unsigned")
        }
        var config = ServeConfiguration()
        config.signer = unsigned && !dev ? nil : signer
        let presetList = preset.isEmpty ? (settings.value(nil, "PRESETS") ?? ProcessInfo.processInfo.environment["IMGPROXY_PRESETS"])
            .map { $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } } ?? [] : preset
        config.allowedSources = settings.list(allowedSource, "ALLOWED_SOURCE").filter { !$0.isEmpty }
        for p in presetList where !p.isEmpty {
            do throws(ProcessingURLError) { try config.presets.add(p) } catch { throw ValidationError("--preset: \(error.reason)") }
        }
        let listenAt = settings.value(listen, "LISTEN") ?? (dev ? "127.0.0.1:0" : "127.0.0.1:8080")
        guard let colon = listenAt.lastIndex(of: ":"), let port = Int(listenAt[listenAt.index(after: colon)...]),
              (0...65535).contains(port) else { throw ValidationError("--listen must be HOST:PORT, not \(listenAt)") }
        config.host = String(listenAt[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        config.port = port
        if dev && config.host != "127.0.0.1" && config.host != "::1" && config.host != "localhost" {
            throw ValidationError("--dev listens on loopback only")
        }
        if let a = settings.value(maxAge.map(String.init), "MAX_AGE") {
            guard let v = Int(a), v >= 0 else { throw ValidationError("--max-age must be a number of seconds") }
            config.maxAge = v
        }
        func number(_ flag: Int?, _ name: String, _ fallback: Int, _ range: ClosedRange<Int>) throws -> Int {
            let s = settings.value(flag.map(String.init), name) ?? String(fallback)
            guard let v = Int(s), range.contains(v) else {
                throw ValidationError("--\(name.lowercased().replacingOccurrences(of: "_", with: "-")) must be in \(range), not \(s)")
            }
            return v
        }
        func seconds(_ flag: Double?, _ name: String, _ fallback: Double) throws -> Double {
            let s = settings.value(flag.map { String($0) }, name) ?? String(fallback)
            guard let v = Double(s), v > 0, v <= 86_400 else {
                throw ValidationError("--\(name.lowercased().replacingOccurrences(of: "_", with: "-")) must be seconds in (0, 86400]")
            }
            return v
        }
        var limits = Renderer.Limits()
        limits.defaultQuality = try number(quality, "QUALITY", 80, 1...100)
        limits.qualitySetForAllFormats = settings.value(quality.map(String.init), "QUALITY") != nil
        for item in (settings.value(nil, "FORMAT_QUALITY") ?? "").split(separator: ",") {  // webp=79,avif=63
            let kv = item.split(separator: "=")
            guard kv.count == 2, let f = OutputFormat(name: kv[0].trimmingCharacters(in: .whitespaces)),
                  let q = Int(kv[1].trimmingCharacters(in: .whitespaces)), (1...100).contains(q) else {
                throw ValidationError("format quality: FORMAT=QUALITY pairs (webp=79,avif=63), not \(item)")
            }
            limits.formatQuality[f] = q
        }
        limits.shrinkOnLoadMargin = try number(shrinkMargin, "SHRINK_MARGIN", 2, 1...8)
        limits.resultCacheBytes = try number(resultCacheMb, "RESULT_CACHE_MB", 64, 0...1 << 20) << 20
        limits.resultDiskBytes = try number(resultDiskMb, "RESULT_DISK_MB", 1024, 0...1 << 24) << 20
        limits.sourceDiskBytes = try number(sourceDiskMb, "SOURCE_DISK_MB", 1024, 0...1 << 24) << 20
        limits.renders = try number(maxRenders, "MAX_RENDERS", limits.renders, 1...4096)
        limits.fetches = try number(maxFetches, "MAX_FETCHES", 4 * limits.renders, 1...1 << 16)
        limits.queueDepth = try number(queueDepth, "QUEUE_DEPTH", 64, 0...1 << 20)
        let waitText = settings.value(queueTimeout.map { String($0) }, "QUEUE_TIMEOUT") ?? "60"
        guard let wait = Double(waitText), wait >= 0, wait <= 86_400 else {
            throw ValidationError("--queue-timeout must be seconds in [0, 86400] (0: no limit), not \(waitText)")
        }
        limits.queueTimeout = wait == 0 ? nil : wait
        config.maxClientRequests = try number(maxClientRequests, "MAX_CLIENT_REQUESTS", 0, 0...1 << 20)
        var sourceBytes = try number(maxSourceMb, "MAX_SOURCE_MB", 20, 1...4096) << 20
        let megapixels = try number(maxMegapixels, "MAX_MEGAPIXELS", 40, 1...1000)
        var sourcePixels = megapixels * 1_000_000
        // imgproxy's own units, exactly, when they are what set these
        if maxSourceMb == nil, env["SDIMAGE_SERVE_MAX_SOURCE_MB"] == nil,
           let b = env["IMGPROXY_MAX_SRC_FILE_SIZE"].flatMap(Int.init), b > 0 { sourceBytes = min(sourceBytes, b) }
        if maxMegapixels == nil, env["SDIMAGE_SERVE_MAX_MEGAPIXELS"] == nil,
           let mp = env["IMGPROXY_MAX_SRC_RESOLUTION"].flatMap(Double.init), mp > 0 {
            sourcePixels = min(sourcePixels, max(1, Int(mp * 1_000_000)))
        }
        limits.maxResultPixels = megapixels * 1_000_000  // a result no larger than a source may be
        limits.maxResultSide = try number(maxResultDimension, "MAX_RESULT_DIMENSION", 16_384, 1...16_384)
        let idle = try seconds(sourceTimeout, "SOURCE_TIMEOUT", 10)
        limits.fleetMaxWait = try seconds(fleetWait, "FLEET_WAIT", 30)
        limits.fleetLeaseTTL = try seconds(fleetLeaseTtl, "FLEET_LEASE_TTL", 6)
        config.drainTimeout = .milliseconds(Int(try seconds(drainTimeout, "DRAIN_TIMEOUT", 30) * 1000))
        if let m = settings.value(metricsListen, "METRICS_LISTEN") {
            guard let colon = m.lastIndex(of: ":"), let port = Int(m[m.index(after: colon)...]), (0...65535).contains(port) else {
                throw ValidationError("--metrics-listen must be HOST:PORT, not \(m)")
            }
            config.metricsAddress = (String(m[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
        }
        config.idleTimeout = .milliseconds(Int(try seconds(idleTimeout, "IDLE_TIMEOUT", 60) * 1000))
        Self.raiseOpenFileLimit()
        var fds = rlimit()
        let descriptors = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &fds) == 0
            ? Int(min(fds.rlim_cur, 1 << 20)) : 1024
        // what the rest needs: sources, caches, the decoder workers' sockets, Redis, logs
        config.maxConnections = try number(maxConnections, "MAX_CONNECTIONS", max(64, descriptors - 512), 1...1 << 20)
        var trusted = settings.list(allowSourceHost, "ALLOW_SOURCE_HOST")
        if dev {  // the sample, served by this server, fetched from it
            trusted.append("127.0.0.1")
            let (_, data) = try Samples.sample(0, maxSize: 1600)
            config.files["/dev/sample.jpg"] = (data, "image/jpeg")
        }
        let registry = ImageServer.bootstrapMetrics()  // before anything makes a metric
        let loaderConfig = SDWebImageDownloaderConfig.server()
        var policy = loaderConfig.urlPolicy
        policy.trustedHosts += trusted
        loaderConfig.urlPolicy = policy
        loaderConfig.maxResponseBytes = sourceBytes
        loaderConfig.downloadTimeout = idle
        // a source that stalls is also below the low-speed floor and nearer
        // the total timeout: a longer --source-timeout is as patient there
        loaderConfig.downloadLowSpeedTime = max(loaderConfig.downloadLowSpeedTime, idle)
        loaderConfig.downloadTotalTimeout = max(loaderConfig.downloadTotalTimeout, idle)
        var decodeLimits = loaderConfig.decodeLimits
        decodeLimits.maxPixels = sourcePixels
        loaderConfig.decodeLimits = decodeLimits
        let configuredDir = settings.value(cacheDir, "CACHE_DIR")
        let dir = configuredDir ?? NSTemporaryDirectory() + "/sdimage-serve-\(getpid())"
        // a folder of our own goes when we do (however run() ends after this point;
        // a killed server leaves it, as any process's temporary files)
        defer { if configuredDir == nil { try? FileManager.default.removeItem(atPath: dir) } }
        // sources: their bytes on disk; little in memory (results are cached encoded)
        let cacheConfig = SDImageCacheConfig()
        cacheConfig.maxMemoryCost = 32 << 20
        cacheConfig.maxDiskSize = limits.sourceDiskBytes  // the sweep keeps it there (0: nothing is stored)
        // a source read back from the disk (or the fleet's Redis) is held to
        // the same limits as a fetched one: the folder may have been filled
        // under other limits, or by another writer
        cacheConfig.decodeLimits = decodeLimits
        limits.sourceLimits = decodeLimits  // and to the bytes a render decodes (sandboxed: every source)
        let cache = SDImageCache(namespace: "sources", diskCacheDirectory: dir, config: cacheConfig)
        let downloader = SDWebImageDownloader(config: loaderConfig)
        var loader: any SDImageLoader = downloader
        var sources: any SDImageCacheProtocol = cache
        var fleetResults: SDRedisDiskCache?
        if let url = settings.value(redis, "REDIS") {
            guard limits.sourceDiskBytes > 0 else {
                throw ValidationError("--source-disk-mb 0 with --redis: the fleet shares sources through the cache; give it room")
            }
            var o = SDRedisDiskCache.Options()
            o.logger = Logger(label: "sdwebimage.redis")
            o.connections = limits.renders + 4
            do {
                let tier = try SDImageRedisCache(url: url, namespace: "serve-sources", options: o)
                sources = tier.tiered(behind: cache)
                var fo = SDRedisFleetLoader.Options()
                fo.logger = o.logger
                fo.maxWait = limits.fleetMaxWait
                loader = SDRedisFleetLoader(loader: downloader, cache: tier, options: fo)
                fleetResults = try SDRedisDiskCache(url: url, namespace: "serve-results", options: o)
            } catch {
                throw ValidationError("--redis: \(error)")
            }
            let results = fleetResults
            config.readiness = {
                (try? results?.serverInfo()) != nil ? "redis: ok" : "redis: unreachable (degraded: serving from local caches)"
            }
        }
        if !settings.bool(inProcessDecoders, "IN_PROCESS_DECODERS") {
            // this program is the worker (main starts with DecoderIsolation.runWorkerIfAsked)
            var l = DecoderIsolation.Limits()
            l.cpuMilliseconds = try number(decodeCpuMs, "DECODE_CPU_MS", 2000, 10...600_000)
            l.wallMilliseconds = try number(decodeWallMs, "DECODE_WALL_MS", 10_000, 10...3_600_000)
            l.memoryBytes = try number(decodeMemoryMb, "DECODE_MEMORY_MB", 2048, 64...1 << 20) << 20
            do {
                limits.isolation = try DecoderIsolation(workers: limits.renders, limits: l)
            } catch {
                throw ValidationError("decoder workers: \(error.message) (--in-process-decoders runs decoders here)")
            }
        }
        let renderer = Renderer(loader: loader, cache: sources,
                                resultDirectory: limits.resultDiskBytes > 0 ? dir + "/results" : nil,
                                fleetResults: fleetResults, limits: limits)
        var logger = Logger(label: "sdimage.serve")
        logger.logLevel = env["SDIMAGE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .notice
        let server = ImageServer(configuration: config, renderer: renderer, logger: logger, registry: registry)
        let dev = self.dev, host = config.host, signerCopy = signer, keyShown = keyHex, saltShown = saltHex
        do {
            try await server.run { port in
                var lines = ["sdimage serve: listening on http://\(host):\(port)"]
                if dev, let signerCopy {
                    let path = "/rs:fit:300:300/plain/http://127.0.0.1:\(port)/dev/sample.jpg@webp"
                    lines += ["key \(keyShown ?? "") salt \(saltShown ?? "")",
                              "open http://127.0.0.1:\(port)/" + signerCopy.signature(of: Substring(path)) + path]
                }
                FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
            }
        } catch {
            FileHandle.standardError.write(Data("sdimage serve: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    static func randomHex(_ bytes: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }
    #endif
}
