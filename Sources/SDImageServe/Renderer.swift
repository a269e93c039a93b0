#if Serve
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Metrics
import SDCache
import SDCoders
import SDSync
import SDWebImage
import SDWebImageRedis

/// One rendered result: the encoded bytes and their validators.
public struct Rendered: Sendable {
    public let data: Data
    public let format: OutputFormat
    /// A strong ETag (quoted): the first 128 bits of the bytes' SHA-256, URL-safe base64.
    public let etag: String
    /// The source's `Last-Modified` (an HTTP date, as the origin sent it), if it sent one.
    public let lastModified: String?
    /// The result came from the result cache (no source fetch, no render).
    public var cached = false

    init(data: Data, format: OutputFormat, lastModified: String? = nil) {
        self.data = data
        self.format = format
        // an origin's date as HTTP's canonical one, or none (never its text as it came)
        self.lastModified = lastModified.flatMap(HTTPDate.canonical)
        etag = "\"" + URLSigner.base64URL(Data(URLSigner.sha256(data).prefix(16))) + "\""
    }

    /// What a stored result keeps beside its bytes (disk, the fleet):
    /// the format, then the source's Last-Modified, one a line.
    var extendedData: Data { Data(([format.rawValue] + (lastModified.map { [$0] } ?? [])).joined(separator: "\n").utf8) }

    /// A stored result from its bytes and `extendedData` (nil if that is not one).
    init?(data: Data, extendedData: Data?) {
        guard let lines = extendedData.flatMap({ String(data: $0, encoding: .utf8) })?.split(separator: "\n"),
              let f = lines.first.flatMap({ OutputFormat(rawValue: String($0)) }) else { return nil }
        self.init(data: data, format: f, lastModified: lines.count > 1 ? String(lines[1]) : nil)
    }
}

/// HTTP dates (RFC 9110 5.6.7): the three forms read, IMF-fixdate written.
enum HTTPDate {
    static func formatter(_ format: String) -> DateFormatter {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = format
        return f
    }

    /// IMF-fixdate, RFC 850 or asctime -> the date; nil for anything else.
    static func parse(_ s: String) -> Date? {
        let t = s.trimmingCharacters(in: .whitespaces)
        guard t.count <= 64, t.allSatisfy({ $0.isASCII && !$0.isNewline }) else { return nil }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            if let d = formatter(format).date(from: t) { return d }
        }
        return nil
    }

    /// The canonical text of an HTTP date (IMF-fixdate), or nil when `s` is none.
    static func canonical(_ s: String) -> String? {
        parse(s).map { formatter("EEE, dd MMM yyyy HH:mm:ss 'GMT'").string(from: $0) }
    }
}

/// Why a render failed, as an HTTP status and a reason for the client.
public struct RenderError: Error, Sendable, CustomStringConvertible {
    public let status: Int
    public let reason: String
    /// What the log gets beside the reason (never the client: resolved
    /// addresses, ports and the network's own words stay here).
    public var detail: String?
    /// Seconds a 503 asks the client to wait (`Retry-After`).
    public var retryAfter: Int?
    public var description: String { "\(status) \(reason)" }

    /// The HTTP status for a load's error: the origin's 404/410 -> 404,
    /// too large / undecodable -> 422, timeout -> 504, refused by the
    /// source policy -> 403, any other origin failure -> 502.
    static func from(_ error: any Error) -> RenderError {
        if let e = error as? SDWebImageError {
            switch e.code {
            case .invalidDownloadStatusCode:
                let s = e.statusCode ?? 0
                return RenderError(status: s == 404 || s == 410 ? 404 : 502, reason: "the source answered HTTP \(s)")
            case .cancelled:
                // nginx's "client closed request": nobody reads this answer, the log does
                return RenderError(status: 499, reason: "the client went away during its render")
            case .badImageData where (e.underlyingError as? CoderError)?.code == .cancelled:
                return RenderError(status: 499, reason: "the client went away during its render")
            case .badImageData:
                // a decoder worker over its budget or stopped by its sandbox: the source's doing
                if (e.underlyingError as? CoderError)?.code == .overLimit {
                    return RenderError(status: 422, reason: "the source could not be decoded within its budget",
                                       detail: e.message)
                }
                // the render plan's result limits fail the decode at the source's header
                if let r = e.message.range(of: "the result would be ") {
                    return RenderError(status: 422, reason: String(e.message[r.lowerBound...]))
                }
                return RenderError(status: 422, reason: "the source is not an image we can decode: \(e.message)")
            case .invalidURL:
                return RenderError(status: 400, reason: "the source URL cannot be requested: \(e.message)")
            case .invalidDownloadContentType:
                return RenderError(status: 422, reason: "the source is not an image: \(e.message)")
            default:
                return RenderError(status: 502, reason: "the source could not be fetched", detail: e.message)
            }
        }
        if let u = error as? URLError {
            let message = u.userInfo[NSLocalizedDescriptionKey] as? String ?? "\(u.code)"
            // the client gets a class of failure; what the network said goes to the log
            switch u.code {
            case .timedOut: return RenderError(status: 504, reason: "the source timed out", detail: message)
            case .dataLengthExceedsMaximum: return RenderError(status: 422, reason: "the source is too large: \(message)")
            case .appTransportSecurityRequiresSecureConnection, .unsupportedURL:
                return RenderError(status: 403, reason: "the source is not allowed (a private or reserved address, "
                                   + "or not http/https)", detail: message)
            case .cannotFindHost, .dnsLookupFailed:
                return RenderError(status: 502, reason: "the source could not be fetched (its name did not resolve)", detail: message)
            case .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet:
                return RenderError(status: 502, reason: "the source could not be fetched (no connection)", detail: message)
            case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
                 .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
                return RenderError(status: 502, reason: "the source could not be fetched (TLS failed)", detail: message)
            case .httpTooManyRedirects, .redirectToNonExistentLocation:
                return RenderError(status: 502, reason: "the source could not be fetched (redirects)", detail: message)
            default: return RenderError(status: 502, reason: "the source could not be fetched", detail: message)
            }
        }
        return RenderError(status: 500, reason: "the render failed", detail: "\(error)")
    }
}

/// Which formats a request's `Accept` takes, for `format:auto`.
public struct Accepts: Sendable, Hashable {
    public var avif = false, webp = false

    public init(header: String?) {
        for item in (header ?? "").split(separator: ",") {
            let parts = item.split(separator: ";")
            let type = parts.first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            let q = parts.dropFirst().first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("q=") }
                .flatMap { Double($0.trimmingCharacters(in: .whitespaces).dropFirst(2)) } ?? 1
            guard q > 0 else { continue }
            if type == "image/avif" { avif = true }
            if type == "image/webp" { webp = true }
        }
    }

    /// AVIF, then WebP; when neither is accepted the source's own format
    /// (imgproxy's rule: PNG stays PNG, GIF stays GIF), and for a source
    /// whose format results are not written in, JPEG — PNG with alpha.
    public func pick(hasAlpha: Bool, source: SDImageFormat = .undefined) -> OutputFormat {
        if avif { return .avif }
        if webp { return .webp }
        if let own = OutputFormat(source: source), own != .avif, own != .webp { return own }
        return hasAlpha ? .png : .jpeg
    }
}

/// Turns processing requests into encoded images through the library: the
/// source through `SDWebImageManager` (its downloader under the server
/// preset, its caches), the geometry through transformers, the bytes
/// through the coders manager; results in a memory cache by their full key.
public final class Renderer: Sendable {
    /// How much a renderer takes on.
    public struct Limits: Sendable {
        /// Renders at once (each holds a decoded source and its result).
        public var renders = 2 * ProcessInfo.processInfo.activeProcessorCount
        /// Renders waiting for a turn; past it, 503 with `Retry-After`.
        public var queueDepth = 64
        /// Seconds a render may wait for a turn; past it 503 + Retry-After (nil: no limit).
        public var queueTimeout: Double? = 60
        /// Memory for encoded results.
        public var resultCacheBytes = 64 << 20
        /// Default quality of JPEG results (1...100); WebP's and AVIF's are
        /// imgproxy's own defaults for them (79, 63) unless it is set
        /// (`--quality`: all three).
        public var defaultQuality = 80
        public var qualitySetForAllFormats = false
        /// Quality per format (`IMGPROXY_FORMAT_QUALITY`), before the defaults above.
        public var formatQuality: [OutputFormat: Int] = [:]
        /// Shrink on load (JPEG's DCT scaling, WebP's and PNG's own) only down
        /// to this many times the output before Lanczos-3 takes it the rest
        /// of the way, 1...8: 2 (the library's and libvips' thumbnail
        /// default) keeps fine detail from aliasing; 1 is how imgproxy and
        /// thumbor (Pillow's draft) shrink, and decodes up to four times
        /// fewer pixels.
        public var shrinkOnLoadMargin = 2
        /// The largest result (and intermediate scaled image), pixels and side.
        public var maxResultPixels = 40_000_000
        public var maxResultSide = 16_384
        /// With a fleet: the result lease's life without renewal, and the
        /// longest a server waits for another's render before it renders itself.
        public var fleetLeaseTTL: TimeInterval = 6
        public var fleetMaxWait: TimeInterval = 30
        /// Disk for encoded results (with a result directory): past it the
        /// least recently used half goes, checked each time an eighth of it
        /// has been written.
        public var resultDiskBytes = 1 << 30
        /// 0: sources' bytes are not kept (the caller gives the cache no
        /// disk room): each render fetches its source, as imgproxy does and
        /// thumbor with its storage off, and the source's `Last-Modified`
        /// comes from its response. Otherwise the cache keeps them.
        public var sourceDiskBytes = 1 << 30
        /// Where sources are decoded: sandboxed worker processes (nil: in
        /// this process, as for benchmarks and trusted sources). Then a
        /// source is fetched as bytes before its render's turn: a slow
        /// origin holds a fetch slot, never a render slot. In process the
        /// decode streams with the fetch, and the render's turn is taken first.
        public var isolation: DecoderIsolation?
        /// Sources fetched at once with isolated decoding, each holding its
        /// bytes (at most the loader's size limit) until its render's turn
        /// comes: what bounds the memory of sources waiting for a render;
        /// 0: four per render slot.
        /// Waiters queue as renders do (`queueDepth`, `queueTimeout`).
        public var fetches = 0
        /// What a source may decode to, applied to the bytes at their
        /// decode (with isolated decoding: every source, fetched or read
        /// from the source cache); the loader's and cache's own limits.
        public var sourceLimits = DecodeLimits()
        public init() {}
    }

    let manager: SDWebImageManager
    let results: MemoryCache<String, Rendered>
    let resultDisk: DiskCache?
    let fleet: FleetResults?
    let gate: RenderGate
    /// Fetches of sources' bytes at once (with isolated decoding).
    let fetchGate: RenderGate
    let sourceLimits: DecodeLimits
    let defaultQuality: Int, qualitySetForAllFormats: Bool, formatQuality: [OutputFormat: Int]
    /// nil: the library's default resampling (margin 2).
    let resampling: Resampling?
    let resultDiskBytes: Int
    /// Sources are queried and stored in the manager's cache (`Limits.sourceDiskBytes` > 0).
    let keepsSources: Bool
    let maxResultPixels: Int, maxResultSide: Int
    /// The coder whose decodes run in the sandboxed workers (nil: in process).
    let isolatedCoder: SDImageCoreCoder?
    /// Bytes of results written to disk since the last sweep was started.
    let diskBytesSinceSweep = SDSync.Locked(0)
    let hitsMemory = Counter(label: "sdimage_serve_result_cache_hits_total", dimensions: [("tier", "memory")])
    let hitsDisk = Counter(label: "sdimage_serve_result_cache_hits_total", dimensions: [("tier", "disk")])
    let renders = Counter(label: "sdimage_serve_renders_total")
    let renderTime = Metrics.Timer(label: "sdimage_serve_render_duration_seconds")
    let refused = Counter(label: "sdimage_serve_renders_refused_total")
    let abandoned = Counter(label: "sdimage_serve_renders_abandoned_total")

    /// Sources come through `loader` (the downloader, under the caller's
    /// policy and limits, or a fleet loader in front of it) into `cache`;
    /// encoded results go to memory, to disk given `resultDirectory`, and
    /// given `fleetResults` (a Redis tier) to the fleet, one render each.
    public init(loader: any SDImageLoader, cache: any SDImageCacheProtocol, resultDirectory: String? = nil,
                fleetResults: SDRedisDiskCache? = nil, limits: Limits = Limits()) {
        manager = SDWebImageManager(cache: cache, loader: loader)
        fleet = fleetResults.map { FleetResults(store: $0, leaseTTL: limits.fleetLeaseTTL, maxWait: limits.fleetMaxWait) }
        results = MemoryCache(costLimit: max(0, limits.resultCacheBytes))
        resultDisk = resultDirectory.flatMap { try? DiskCache(directory: $0) }
        // the gate tells its gauges of every change (a waiter queued or gone too)
        let inFlight = Gauge(label: "sdimage_serve_renders_in_flight")
        let queued = Gauge(label: "sdimage_serve_render_queue_depth")
        gate = RenderGate(width: limits.renders, depth: limits.queueDepth, maxWait: limits.queueTimeout) { running, waiting in
            inFlight.record(running)
            queued.record(waiting)
        }
        let fetching = Gauge(label: "sdimage_serve_fetches_in_flight")
        let fetchQueue = Gauge(label: "sdimage_serve_fetch_queue_depth")
        fetchGate = RenderGate(width: limits.fetches > 0 ? limits.fetches : 4 * max(1, limits.renders),
                               depth: limits.queueDepth, maxWait: limits.queueTimeout) { running, waiting in
            fetching.record(running)
            fetchQueue.record(waiting)
        }
        sourceLimits = limits.sourceLimits
        defaultQuality = limits.defaultQuality
        qualitySetForAllFormats = limits.qualitySetForAllFormats
        formatQuality = limits.formatQuality
        let asked = Resampling(shrinkOnLoadMargin: limits.shrinkOnLoadMargin)  // clamps to 1...8
        resampling = asked == .default ? nil : asked
        resultDiskBytes = limits.resultDiskBytes
        keepsSources = limits.sourceDiskBytes > 0
        maxResultPixels = limits.maxResultPixels
        maxResultSide = limits.maxResultSide
        isolatedCoder = limits.isolation.map { SDImageCoreCoder.isolating($0) }  // the downloader's and cache's own
    }

    /// The result disk's calls block on file I/O: they run here, not on
    /// Swift's cooperative threads (a request still waits for its write, so
    /// a drained server leaves every result it served on disk).
    private static let diskQueue = DispatchQueue(label: "sdimage.serve.results", attributes: .concurrent)

    private static func onDisk<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in diskQueue.async { c.resume(returning: body()) } }
    }

    /// Renders running and waiting now.
    public var load: (running: Int, waiting: Int) { gate.load }

    /// Whether `options` shrink on load: every render with a box, a zoom or
    /// a crop (the decoder executes the plan, at its scale).
    static func shrinksOnLoad(_ options: ProcessingOptions) -> Bool {
        options.pixelWidth > 0 || options.pixelHeight > 0 || options.crop != nil || options.zoom != (1, 1)
    }

    /// The result cache's key of `request` for a client that accepts `accepts`
    /// (and the shrink-on-load margin when it is not the default and the
    /// request shrinks on load: then it changes the pixels).
    func key(_ request: ProcessingRequest, accepts: Accepts) -> String {
        let o = request.options
        let wanted = o.format.map { "f:\($0.rawValue)" } ?? "auto:avif=\(accepts.avif),webp=\(accepts.webp)"
        let margin = Self.shrinksOnLoad(o) ? resampling.map { "|margin:\($0.shrinkOnLoadMargin)" } ?? "" : ""
        return request.source + "|" + o.cacheKey + "|" + wanted + margin
    }

    /// The result, when the memory cache has it (no waiting, no I/O).
    public func inMemory(_ request: ProcessingRequest, accepts: Accepts) -> Rendered? {
        inMemory(key: key(request, accepts: accepts))
    }

    private func inMemory(key: String) -> Rendered? {
        guard var hit = results.value(forKey: key) else { return nil }
        hit.cached = true
        hitsMemory.increment()
        return hit
    }

    /// Per channel of two same-size images (premultiplied), clamped to [0, alpha].
    static func combine(_ a: SDImage, _ b: SDImage, _ f: (Int, Int) -> Int) -> SDImage? {
        let x = a.bitmap, y = b.bitmap, w = x.width, h = x.height
        guard y.width == w, y.height == h else { return nil }
        let sx = x.bytesPerRow, sy = y.bytesPerRow
        guard let out = try? Bitmap(width: w, height: h, initializingWith: { dst in
            x.withUnsafeBytes { p in
                y.withUnsafeBytes { q in
                    for row in 0..<h {
                        for col in 0..<w {
                            let i = row * sx + col * 4, j = row * sy + col * 4, o = (row * w + col) * 4
                            let alpha = Int(p[i + 3])
                            for c in 0..<3 { dst[o + c] = UInt8(max(0, min(alpha, f(Int(p[i + c]), Int(q[j + c]))))) }
                            dst[o + 3] = p[i + 3]
                        }
                    }
                }
            }
        }) else { return nil }
        return SDImage(bitmap: out, format: a.format)
    }

    /// Blocks of `block` pixels a side (the last ones smaller), each filled with its mean.
    static func pixelated(_ image: SDImage, block n: Int) -> SDImage? {
        let src = image.bitmap, w = src.width, h = src.height, rowBytes = src.bytesPerRow
        guard let out = try? Bitmap(width: w, height: h, initializingWith: { dst in
            src.withUnsafeBytes { s in
                for by in stride(from: 0, to: h, by: n) {
                    for bx in stride(from: 0, to: w, by: n) {
                        let ye = min(h, by + n), xe = min(w, bx + n), count = (ye - by) * (xe - bx)
                        var sum = [Int](repeating: 0, count: 4)
                        for y in by..<ye { for x in bx..<xe { for c in 0..<4 { sum[c] += Int(s[y * rowBytes + x * 4 + c]) } } }
                        let mean = sum.map { UInt8(($0 + count / 2) / count) }
                        for y in by..<ye { for x in bx..<xe { for c in 0..<4 { dst[(y * w + x) * 4 + c] = mean[c] } } }
                    }
                }
            }
        }) else { return nil }
        return SDImage(bitmap: out, format: image.format)
    }

    /// `image` composited over an opaque colour (premultiplied: src + bg * (1 - a)).
    static func flatten(_ image: SDImage, on bg: (r: UInt8, g: UInt8, b: UInt8)) -> SDImage? {
        let src = image.bitmap, w = src.width, h = src.height, stride = src.bytesPerRow
        let fill = [UInt32(bg.b), UInt32(bg.g), UInt32(bg.r)]  // native ARGB32 in memory: B, G, R, A
        guard let out = try? Bitmap(width: w, height: h, initializingWith: { dst in
            src.withUnsafeBytes { s in
                for y in 0..<h {
                    for x in 0..<w {
                        let i = y * stride + x * 4, o = (y * w + x) * 4
                        let inv = 255 - UInt32(s[i + 3])
                        for c in 0..<3 { dst[o + c] = UInt8(min(255, UInt32(s[i + c]) + (fill[c] * inv + 127) / 255)) }
                        dst[o + 3] = 255
                    }
                }
            }
        }) else { return nil }
        return SDImage(bitmap: out, format: image.format)
    }

    /// The encoded result of `request` for a client that accepts `accepts`.
    public func render(_ request: ProcessingRequest, accepts: Accepts) async throws(RenderError) -> Rendered {
        let key = key(request, accepts: accepts)
        if let hit = inMemory(key: key) { return hit }
        if let disk = resultDisk, var hit = await Self.onDisk({
            disk.data(forKey: key).flatMap { Rendered(data: $0, extendedData: disk.extendedData(forKey: key)) }
        }) {
            results.setValue(hit, forKey: key, cost: hit.data.count)
            hit.cached = true
            hitsDisk.increment()
            return hit
        }
        var owner: String?
        if let fleet {
            switch await fleet.turn(forKey: key) {
            case .result(var r):
                results.setValue(r, forKey: key, cost: r.data.count)
                if let disk = resultDisk {
                    let shared = r
                    await Self.onDisk { try? disk.setData(shared.data, forKey: key, extendedData: shared.extendedData) }
                }
                r.cached = true
                return r
            case .owner(let token): owner = token
            case .alone: break
            }
        }
        guard let fleet, let owner else { return try await produce(request, key: key, accepts: accepts) }
        let renewal = fleet.keepAlive(forKey: key, token: owner)
        defer { renewal.cancel() }
        do {
            let r = try await produce(request, key: key, accepts: accepts)
            await fleet.finish(forKey: key, token: owner, r)
            return r
        } catch {
            await fleet.finish(forKey: key, token: owner, nil)
            throw error
        }
    }

    /// Render `request` here (a turn of the gate), keep the result in memory and on disk.
    /// The render's CPU after the decode: imgproxy's filters, the
    /// background, the format, the encoder. Synchronous: it runs on the
    /// render queue (`offHTTP`).
    private func finish(_ decoded: SDImage, _ o: ProcessingOptions, _ accepts: Accepts) throws(RenderError)
        -> (Data, OutputFormat) {
        var image = decoded
        let sourceFormat = image.format
        let (rw, rh) = (image.width, image.height)
        // imgproxy's filters, in its order: blur, sharpen, pixelate (then the background)
        // our blur's radius is twice its Gaussian's sigma
        if o.blurSigma > 0, let b = SDImageBlurTransformer(radius: 2 * o.blurSigma).transformedImage(with: image, forKey: "") {
            image = b
        }
        if o.sharpenSigma > 0, let blurred = SDImageBlurTransformer(radius: 2 * o.sharpenSigma).transformedImage(with: image, forKey: ""),
           let sharp = Self.combine(image, blurred, { o, b in o + (o - b) }) {
            image = sharp  // unsharp mask, amount 1: the detail the blur took, added once more
        }
        if o.pixelate > 1, let p = Self.pixelated(image, block: o.pixelate) { image = p }
        // imgproxy's bg fills the background of every format, PNG's too
        if let bg = o.background, image.hasAlpha {
            guard let flat = Self.flatten(image, on: bg) else {
                throw RenderError(status: 500, reason: "the render failed", detail: "could not fill the background")
            }
            image = flat
        }
        let format = o.format ?? accepts.pick(hasAlpha: image.hasAlpha, source: sourceFormat)
        // a limit known in advance is the client's (4xx), not the encoder's failure
        if format == .webp && max(rw, rh) > 16_383 {
            throw RenderError(status: 422, reason: "WebP results are at most 16383 pixels a side; this one is \(rw)x\(rh)")
        }
        var coderOptions: SDImageCoderOptions = [:]
        let quality = o.quality ?? o.formatQuality[format] ?? formatQuality[format]
            ?? (qualitySetForAllFormats ? defaultQuality : format.defaultQuality(general: defaultQuality))
        if format != .png { coderOptions[.encodeCompressionQuality] = Double(quality) / 100 }
        coderOptions[.encodeFirstFrameOnly] = true
        if let mb = o.maxBytes { coderOptions[.encodeMaxFileSize] = mb }
        // what thumbnail services write (libvips' optimize_coding, thumbor's
        // optimize): make bench-serve's q80 thumbnails, median 2.3 KiB
        // against 3.0 with the default tables, the same pixels
        coderOptions[.encodeJPEGOptimizeCoding] = true
        if let bg = o.background {
            coderOptions[.encodeBackgroundColor] = UInt32(bg.r) << 16 | UInt32(bg.g) << 8 | UInt32(bg.b)
        }
        guard let data = SDImageCodersManager.shared.encodedData(with: image, format: format.imageFormat,
                                                                  options: coderOptions) else {
            throw RenderError(status: 500, reason: "could not encode \(format.rawValue)")
        }
        return (data, format)
    }

    private static let renderQueue = DispatchQueue(label: "sdimage.serve.render", qos: .userInitiated,
                                                   attributes: .concurrent)

    /// `body` on the render queue, awaited: what blocks or burns CPU there
    /// leaves the cooperative threads (which answer HTTP) free.
    private static func offHTTP<T: Sendable>(_ body: @escaping @Sendable () -> Result<T, RenderError>)
        async throws(RenderError) -> T {
        try await withCheckedContinuation { c in renderQueue.async { c.resume(returning: body()) } }.get()
    }

    /// A turn of `gate` (call its `leave()` after), or the 503 (full, or
    /// no turn within its wait) or 499 (the client left) that says why not.
    private func turn(_ gate: RenderGate, _ what: String) async throws(RenderError) {
        switch await gate.enter() {
        case .go: return
        case .full:
            refused.increment()
            let (running, waiting) = gate.load
            throw RenderError(status: 503, reason: "busy: \(running) \(what) running and \(waiting) waiting", retryAfter: 1)
        case .timedOut:
            refused.increment()
            let (running, waiting) = gate.load
            throw RenderError(status: 503, reason: "busy: no turn within \(Int(gate.maxWait ?? 0)) s "
                              + "(\(running) \(what) running, \(waiting) waiting)", retryAfter: 1)
        case .cancelled:
            abandoned.increment()
            // nginx's "client closed request": nobody reads this answer, the log does
            throw RenderError(status: 499, reason: "the client went away while its \(what == "fetches" ? "fetch" : "render") waited for a turn")
        }
    }

    /// The render's geometry: one plan the decoder executes, shrinking on
    /// load at its scale; a result past the limits fails at the source's
    /// header (422), before a pixel of it is allocated.
    private func decodeContext(_ o: ProcessingOptions) -> SDWebImageContext {
        var context: SDWebImageContext = [:]
        var plan = o.renderPlan
        (plan.maxResultPixels, plan.maxResultSide) = (maxResultPixels, maxResultSide)
        context[.imageRenderPlan] = plan
        if let resampling { context[.imageResampling] = resampling }
        if let isolatedCoder { context[.imageCoder] = isolatedCoder }
        return context
    }

    /// What a failed load says to the client (a client that left counted abandoned).
    private func failure(_ error: any Error) -> RenderError {
        let failure = error as? RenderError ?? RenderError.from(error)
        if failure.status == 499 { abandoned.increment() }  // its client left mid-render
        return failure
    }

    /// Isolated decoding: the source's bytes first, in a fetch's turn (from
    /// the source cache, or the origin: stored there with its validators),
    /// then the decode (in a worker), filters and encoder in a render's turn.
    private func produceIsolated(_ request: ProcessingRequest, url: URL, key: String, accepts: Accepts)
        async throws(RenderError) -> Rendered {
        // the fetch's turn is held until the render's comes: the bytes
        // waiting for a render are bounded by the fetches (each at most
        // the loader's size limit), not by the render queue's depth
        try await turn(fetchGate, "fetches")
        var fetching = true
        defer { if fetching { fetchGate.leave() } }
        let (data, lastModified) = try await fetchSource(url)
        try await turn(gate, "renders")
        fetchGate.leave()
        fetching = false
        let started = DispatchTime.now().uptimeNanoseconds
        defer {
            gate.leave()
            renderTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        }
        renders.increment()
        let o = request.options
        var context = decodeContext(o)
        // a client that goes away ends its decode (the worker killed)
        let cancellation = DecodeCancellation()
        context[.imageDecodeOptions] = [SDImageCoderOption.decodeCancellation: cancellation]
        let (decodeContext, limits, sourceKey) = (context, sourceLimits, manager.cacheKey(for: url) ?? request.source)
        let image: SDImage
        do {
            image = try await withTaskCancellationHandler {
                try await Self.offHTTP {
                    Result { () throws(SDWebImageError) in
                        try SDImageCache.decodedImage(from: data, forKey: sourceKey, context: decodeContext, limits: limits)
                    }.mapError { RenderError.from($0) }
                }
            } onCancel: {
                cancellation.cancel()
            }
        } catch {
            throw failure(error)
        }
        return try await finishAndKeep(image, o, accepts, key: key, lastModified: lastModified)
    }

    /// A source's bytes and its `Last-Modified` (the caller holds a
    /// fetch's turn: a slow origin holds one of those, never a render's).
    private func fetchSource(_ url: URL) async throws(RenderError) -> (Data, String?) {
        var context: SDWebImageContext = [:]
        let response = SDSync.Locked<HTTPURLResponse?>(nil)
        if keepsSources {
            context[.storeCacheType] = SDImageCacheType.disk
            context[.queryCacheType] = SDImageCacheType.disk
        } else {  // fetched for this render only; its validators from its response
            context[.storeCacheType] = SDImageCacheType.none
            context[.queryCacheType] = SDImageCacheType.none
            context[.downloadResponseModifier] = SDWebImageDownloaderResponseModifier { r in
                response.set(r as? HTTPURLResponse)
                return r
            }
        }
        let (manager, loadContext) = (self.manager, context)
        let data: Data
        do {
            // bytes only; .waitStoreCache: stored with their validators when it answers
            let loaded = try await manager.loadImage(
                with: url, options: keepsSources ? [.retryFailed, .avoidDecodeImage, .waitStoreCache]
                    : [.retryFailed, .avoidDecodeImage], context: loadContext)
            guard let got = loaded.data, !got.isEmpty else {
                throw RenderError(status: 422, reason: "the source gave no bytes")
            }
            data = got
        } catch {
            throw failure(error)
        }
        return (data, await lastModified(url, response.current))
    }

    /// The source's `Last-Modified`: from the validators the manager keeps
    /// beside its bytes (a disk read, or Redis's with --redis: off the
    /// cooperative threads), else from its response.
    private func lastModified(_ url: URL, _ response: HTTPURLResponse?) async -> String? {
        guard keepsSources else { return response.flatMap { SDWebImageHTTPValidators(response: $0).lastModified } }
        let (sources, sourceKey) = (manager.imageCache, manager.cacheKey(for: url))
        return await Self.onDisk {
            sources.extendedData(forKey: sourceKey)
                .flatMap { try? JSONDecoder().decode(SDWebImageHTTPValidators.self, from: $0) }?.lastModified
        }
    }

    private func produce(_ request: ProcessingRequest, key: String, accepts: Accepts) async throws(RenderError) -> Rendered {
        guard let url = URL(string: request.source) else { throw RenderError(status: 400, reason: "bad source URL") }
        if isolatedCoder != nil { return try await produceIsolated(request, url: url, key: key, accepts: accepts) }
        let o = request.options
        // in process the decode streams with the fetch: the render's turn first
        try await turn(gate, "renders")
        let started = DispatchTime.now().uptimeNanoseconds
        defer {
            gate.leave()
            renderTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        }
        renders.increment()
        var context = decodeContext(o)
        // results are cached encoded (above), never as decoded pixels: the
        // image caches keep the sources' bytes (decoded anew for each
        // option set, with its thumbnail box and orientation), not images;
        // a thumbnail's load stores its original, any other load is the original
        let response = SDSync.Locked<HTTPURLResponse?>(nil)
        if keepsSources {
            context[.originalStoreCacheType] = SDImageCacheType.disk
            context[.storeCacheType] = SDImageCacheType.none  // the render is this request's
            context[.queryCacheType] = SDImageCacheType.disk
        } else {  // fetched for this render only; its validators from its response
            context[.originalStoreCacheType] = SDImageCacheType.none
            context[.storeCacheType] = SDImageCacheType.none
            context[.queryCacheType] = SDImageCacheType.none
            context[.downloadResponseModifier] = SDWebImageDownloaderResponseModifier { r in
                response.set(r as? HTTPURLResponse)
                return r
            }
        }
        let image: SDImage
        let (manager, loadContext) = (self.manager, context)
        do {
            // .waitStoreCache: the source's bytes and validators are stored when it answers
            let loaded = try await manager.loadImage(with: url, options: keepsSources ? [.retryFailed, .waitStoreCache] : [.retryFailed],
                                                     context: loadContext)
            guard let got = loaded.image else {
                throw RenderError(status: 422, reason: "the source gave no image")
            }
            image = got
        } catch {
            throw failure(error)
        }
        return try await finishAndKeep(image, o, accepts, key: key, lastModified: await lastModified(url, response.current))
    }

    /// The filters and the encoder, on the render queue, never on the
    /// threads that answer HTTP (the gate bounds how many at once); the
    /// result kept in memory and on disk.
    private func finishAndKeep(_ image: SDImage, _ o: ProcessingOptions, _ accepts: Accepts, key: String,
                               lastModified: String?) async throws(RenderError) -> Rendered {
        let source = image
        let (data, format) = try await Self.offHTTP { [self] in
            Result { () throws(RenderError) in try self.finish(source, o, accepts) }
        }
        let rendered = Rendered(data: data, format: format, lastModified: lastModified)
        results.setValue(rendered, forKey: key, cost: data.count)
        // a full disk loses only this copy: the result is served all the same
        if let disk = resultDisk {
            await Self.onDisk { try? disk.setData(data, forKey: key, extendedData: rendered.extendedData) }
            // swept (the least recently read go until half is left) each time an
            // eighth of the bound has been written: about an eighth over it at most, and
            // a large folder is not listed more often than that
            let limit = resultDiskBytes
            if diskBytesSinceSweep.withLock({ written in
                written += data.count
                guard written >= max(1, limit / 8) else { return false }
                written = 0
                return true
            }) {
                DispatchQueue.global(qos: .utility).async {
                    _ = disk.removeExpiredData(maxAge: -1, maxSize: limit, expireType: .accessDate)
                }
            }
        }
        return rendered
    }
}

#endif
