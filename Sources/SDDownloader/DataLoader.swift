import CSDCore
import Dispatch
import Foundation
import SDCoders

/// Swift face of the C transfer loop: one `sd_loop` (one libcurl multi
/// thread plus decode workers) per loader.
///
/// Threading: the C callbacks run on the loop thread; every handler given
/// here is hopped to its `queue` immediately, with data already copied out,
/// so no Swift code runs on the loop thread. Each load completes exactly once.
// @unchecked: the C loop is thread-safe (sd_loop_* from any thread); `decodeSink` is set in init only.
public final class DataLoader: @unchecked Sendable {
    private let loop: OpaquePointer
    /// The loop's decode sink, which a transfer with a body observer wraps.
    private var decodeSink = BodyObserver.Inner(sink: sd_body_sink(), ctx: nil)

    package let telemetry: LoaderTelemetry

    /// A loop with its own thread and a decode pool of `decodeThreads` workers
    /// (nil or 0: one per core); throws when the C core cannot start one.
    /// It logs nothing (`init(maxConcurrentDownloads:decodeThreads:telemetry:)` takes a logger).
    public convenience init(maxConcurrentDownloads: Int = 6, decodeThreads: Int? = nil) throws(DownloadError) {
        try self.init(maxConcurrentDownloads: maxConcurrentDownloads, decodeThreads: decodeThreads, telemetry: .none)
    }

    /// A loop as above whose lines and metrics go where `telemetry` says.
    public init(maxConcurrentDownloads: Int = 6, decodeThreads: Int? = nil,
                telemetry: SDTelemetry) throws(DownloadError) {
        self.telemetry = LoaderTelemetry(telemetry)
        var out: OpaquePointer?
        try Self.check(sd_loop_new(&out))
        loop = out!
        do {
            try Self.check(sd_loop_set(loop, SD_LOOP_MAX_CONCURRENT, Int64(maxConcurrentDownloads)))
            // bodies decode while they stream in: the decode sink of the C core
            try Self.check(sd_loop_use_decoder(loop, Int32(max(0, decodeThreads ?? 0))))
            var sink = sd_body_sink()
            sink.size = MemoryLayout<sd_body_sink>.size
            var ctx: UnsafeMutableRawPointer?
            try Self.check(sd_loop_body_sink(loop, &sink, &ctx))
            decodeSink = BodyObserver.Inner(sink: sink, ctx: ctx)
            try Self.check(sd_loop_start(loop))
        } catch {
            sd_loop_free(loop)
            throw error
        }
    }

    /// Cancels what is left; their completions still arrive, once each.
    deinit {
        sd_loop_free(loop)
    }

    private static func check(_ rc: Int32) throws(DownloadError) {
        if rc < 0 { throw DownloadError(DownloadError.Code(rawValue: rc)) }
    }

    private func get(_ p: sd_loop_param) -> Int64 {
        var v: Int64 = 0
        _ = sd_loop_get(loop, p, &v)
        return v
    }

    /// Network transfers at most (at least 1); changeable at any time.
    public var maxConcurrentDownloads: Int {
        get { Int(get(SD_LOOP_MAX_CONCURRENT)) }
        set { _ = sd_loop_set(loop, SD_LOOP_MAX_CONCURRENT, Int64(max(1, newValue))) }
    }

    /// Connections to one host at most (0: no limit but `maxConcurrentDownloads`).
    public var maxConnectionsPerHost: Int {
        get { Int(get(SD_LOOP_MAX_HOST_CONNECTIONS)) }
        set { _ = sd_loop_set(loop, SD_LOOP_MAX_HOST_CONNECTIONS, Int64(min(100_000, max(0, newValue)))) }
    }

    /// The order queued downloads of equal priority start in.
    public var executionOrder: DownloadExecutionOrder {
        get { DownloadExecutionOrder(rawValue: get(SD_LOOP_ORDER)) ?? .fifo }
        set { _ = sd_loop_set(loop, SD_LOOP_ORDER, newValue.rawValue) }
    }

    /// While suspended, queued downloads do not start (running ones go on).
    public var isSuspended: Bool {
        get { get(SD_LOOP_SUSPENDED) != 0 }
        set { _ = sd_loop_set(loop, SD_LOOP_SUSPENDED, newValue ? 1 : 0) }
    }

    /// Downloads waiting to start.
    public var queuedCount: Int { Int(get(SD_LOOP_INFO_QUEUED)) }
    /// Downloads transferring now.
    public var runningCount: Int { Int(get(SD_LOOP_INFO_RUNNING)) }

    /// Cancel every download: each completes with `.cancelled`, once.
    public func cancelAll() {
        _ = sd_loop_cancel_all(loop)
    }

    /// Start a download. Handlers run on `queue`; `completion` exactly once
    /// (also when the request is refused, then with the reason).
    @discardableResult
    public func load(
        _ request: DownloadRequest,
        queue: DispatchQueue = .global(),
        progress: (@Sendable (_ received: Int64, _ expected: Int64) -> Void)? = nil,
        preview: (@Sendable (Bitmap) -> Void)? = nil,
        completion: @escaping @Sendable (Result<DownloadResult, DownloadError>) -> Void
    ) -> DownloadTask? {
        var events = LoaderEvents { result in queue.async { completion(result) } }
        if let progress { events.progress = { r, e in queue.async { progress(r, e) } } }
        if let preview {
            events.preview = { p in if case .image(let b) = p { queue.async { preview(b) } } }
        }
        switch submit(request, events: events) {
        case .success(let task):
            return task
        case .failure(let error):
            queue.async { completion(.failure(error)) }
            return nil
        }
    }

    /// The loop-thread face used by the layers above: every event handler runs
    /// on the loop thread with its data already copied out, so it must only
    /// record and hop (never block, never call user code). A refused request
    /// returns the error and fires no event.
    package func submit(_ request: DownloadRequest, events: LoaderEvents) -> Result<DownloadTask, DownloadError> {
        var req: OpaquePointer?
        var rc = sd_request_new(request.url.absoluteString, &req)
        guard rc == 0, let req else {
            let why = rc == SD_EURL.rawValue ? "malformed or relative URL" : String(cString: sd_strerror(rc))
            return .failure(DownloadError(DownloadError.Code(rawValue: rc), message: "invalid URL (\(why))"))
        }
        defer { sd_request_free(req) }
        rc = request.write(to: req)
        if rc < 0 {
            let why = rc == SD_EINVAL.rawValue
                ? "a header or request value holds a control character (CR/LF) or is out of range"
                : String(cString: sd_strerror(rc))
            return .failure(DownloadError(DownloadError.Code(rawValue: rc), message: "invalid request: \(why)"))
        }
        let handlers = Handlers(events: events, of: request, telemetry: telemetry)
        if let observer = request.bodyObserver {
            // a sink of our own that watches — and, when the body decodes,
            // hands every call on to the decode sink: the bytes still go to the result
            let box = BodyObserver(observer, forwardingTo: request.decode ? decodeSink : nil)
            handlers.observer = box
            _ = sd_request_set_body_sink(req, BodyObserver.sink, Unmanaged.passUnretained(box).toOpaque())
            _ = sd_request_set(req, SD_REQ_USE_SINK, 1)
        }
        let user = Unmanaged.passRetained(handlers).toOpaque()
        var ev = sd_transfer_events()
        ev.size = MemoryLayout<sd_transfer_events>.size  // the version of the struct we were built with
        ev.response = events.response == nil ? nil : { _, response, user in
            let h = Unmanaged<Handlers>.fromOpaque(user!).takeUnretainedValue()
            let converted = DataLoader.response(of: response!)
            h.response = converted // the completion reuses it: one conversion per transfer
            h.events.response?(converted)
        }
        ev.progress = events.progress == nil ? nil : { _, received, expected, user in
            let h = Unmanaged<Handlers>.fromOpaque(user!).takeUnretainedValue()
            h.events.progress?(Int64(received), Int64(expected))
        }
        ev.partial = events.preview == nil ? nil : { _, partial, user in
            let h = Unmanaged<Handlers>.fromOpaque(user!).takeUnretainedValue()
            guard h.framed else {
                // the decode sink's partials are previews (sd_bitmap *)
                h.events.preview?(.image(Bitmap(adopting: OpaquePointer(partial!))))
                return
            }
            // ... or, with frames asked for, sd_preview *
            let p = partial!.assumingMemoryBound(to: sd_preview.self)
            defer { sd_preview_free(p) }
            guard let handle = p.pointee.bitmap else { return }
            p.pointee.bitmap = nil
            let b = Bitmap(adopting: handle)
            let q = p.pointee
            h.events.preview?(q.frame < 0 ? .image(b)
                : .frame(b, index: Int(q.frame), milliseconds: Int(q.duration_ms), loopCount: Int(q.loop_count),
                         format: ImageFormat(rawValue: Int(q.format))))
        }
        ev.complete = { _, result, user in
            let h = Unmanaged<Handlers>.fromOpaque(user!).takeRetainedValue()
            let outcome = DataLoader.outcome(of: result!, decoded: h.decoded, response: h.response)
            sd_result_free(result)
            h.telemetry.finished(h.url, outcome)
            h.events.completion(outcome)
        }
        var id: sd_transfer_id = 0
        telemetry.started()  // before: the completion may run before submit returns
        rc = sd_loop_submit(loop, req, &ev, user, &id)
        if rc < 0 {
            telemetry.refused()
            Unmanaged<Handlers>.fromOpaque(user).release() // refused: no callback will run
            return .failure(DownloadError(DownloadError.Code(rawValue: rc)))
        }
        telemetry.accepted()
        return .success(DownloadTask(loader: self, id: id, url: request.url))
    }

    /// Async variant; cancelling the Swift task cancels the download.
    public func load(_ request: DownloadRequest) async throws(DownloadError) -> DownloadResult {
        let box = CancelBox<DownloadTask>()
        let result: Result<DownloadResult, DownloadError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = load(request) { continuation.resume(returning: $0) }
                box.set(task)
            }
        } onCancel: {
            box.cancel()
        }
        return try result.get()
    }

    fileprivate func cancel(_ id: sd_transfer_id) {
        _ = sd_loop_cancel(loop, id)
    }

    fileprivate func setPriority(_ id: sd_transfer_id, _ p: DownloadPriority) {
        _ = sd_loop_set_priority(loop, id, sd_priority(rawValue: p.rawValue))
    }

    // MARK: - C bridging

    /// Everything is copied out (or adopted) here, on the loop thread, before
    /// the hop: the result is freed right after.
    /// `known`: the response as converted for the response event, reused
    /// unless headers came after it (trailers).
    fileprivate static func outcome(of r: OpaquePointer, decoded: Bool,
                                    response known: DownloadResponse?) -> Result<DownloadResult, DownloadError> {
        let response = sd_result_response(r).map { c in
            if let known, known.headers.count == Int(sd_response_header_count(c)) { return known }
            return Self.response(of: c)
        }
        let status = sd_result_status(r)
        if status != 0 {
            var e = DownloadError(DownloadError.Code(rawValue: status), message: String(cString: sd_result_message(r)),
                                  statusCode: response.map(\.statusCode).flatMap { $0 > 0 ? $0 : nil })
            // the connection broke part-way: keep what came, to ask for the rest
            if [.truncatedBody, .network, .timedOut].contains(e.code) {
                var length = 0
                if let bytes = sd_result_body(r, &length), length > 0 {
                    e.resumable = ResumableData(response: response, partial: Data(bytes: bytes, count: length))
                }
            }
            return .failure(e)
        }
        var body: UnsafeMutablePointer<UInt8>?
        var length = 0, capacity = 0
        _ = sd_result_take_body_block(r, &body, &length, &capacity)
        // no copy; when the last Data lets go, the block goes back to the pixel
        // pool for the next transfer or canvas, already mapped
        let data = body.map {
            Data(bytesNoCopy: $0, count: length, deallocator: .custom { p, _ in sd_body_free(p, capacity) })
        } ?? Data()
        var image: DecodedImage?
        if decoded, let bitmap = sd_result_take_bitmap(r) {
            func info(_ p: sd_decoder_param) -> Int {
                var v: Int64 = 0
                return sd_result_decoder_info(r, p, &v) == 0 ? Int(v) : 0
            }
            image = DecodedImage(
                bitmap: Bitmap(adopting: bitmap),
                format: ImageFormat(rawValue: info(SD_DEC_INFO_FORMAT)),
                orientation: max(1, info(SD_DEC_INFO_ORIENTATION)),
                sourceWidth: info(SD_DEC_INFO_WIDTH), sourceHeight: info(SD_DEC_INFO_HEIGHT),
                isProgressive: info(SD_DEC_INFO_PROGRESSIVE) != 0,
                isComplete: info(SD_DEC_INFO_COMPLETE) != 0,
                warnings: info(SD_DEC_INFO_WARNINGS),
                frameCount: max(1, info(SD_DEC_INFO_FRAME_COUNT)),
                loopCount: info(SD_DEC_INFO_LOOP_COUNT),
                isAnimated: info(SD_DEC_INFO_ANIMATED) != 0,
                sourceColorSpace: SourceColorSpace(rawValue: info(SD_DEC_INFO_COLOR_SPACE)) ?? .sRGB,
                iccProfile: {
                    var p: UnsafePointer<UInt8>?
                    var n = 0
                    guard sd_result_icc_profile(r, &p, &n) == 0, let p, n > 0 else { return nil }
                    return Array(UnsafeBufferPointer(start: p, count: n))
                }())
        }
        func m(_ k: sd_metric) -> Double { sd_result_metric(r, k) }
        let metrics = DownloadMetrics(
            dnsMs: m(SD_METRIC_DNS_MS), connectMs: m(SD_METRIC_CONNECT_MS), tlsMs: m(SD_METRIC_TLS_MS),
            firstByteMs: m(SD_METRIC_FIRST_BYTE_MS), totalMs: m(SD_METRIC_TOTAL_MS),
            queuedMs: m(SD_METRIC_QUEUED_MS), decodeMs: m(SD_METRIC_SINK_MS),
            bytes: Int(m(SD_METRIC_BYTES)), httpVersion: Int(m(SD_METRIC_HTTP_VERSION)),
            redirects: Int(m(SD_METRIC_REDIRECTS)), newConnections: Int(m(SD_METRIC_CONNECTIONS)),
            resumedBytes: Int(m(SD_METRIC_RESUMED_BYTES)), fullLength: Int(m(SD_METRIC_FULL_LENGTH)),
            endedEarly: m(SD_METRIC_ENDED_EARLY) == 1)
        var result = DownloadResult(data: data, image: image, response: response, metrics: metrics)
        if metrics.endedEarly {
            var w: Int64 = 0, h: Int64 = 0
            if sd_result_decoder_info(r, SD_DEC_INFO_LOAD_WIDTH, &w) == 0, sd_result_decoder_info(r, SD_DEC_INFO_LOAD_HEIGHT, &h) == 0 {
                result.completeUpTo = (Int(w), Int(h))
            }
            result.resumable = ResumableData(response: response, partial: data)
        }
        return .success(result)
    }

    fileprivate static func response(of r: OpaquePointer) -> DownloadResponse {
        var headers: [(name: String, value: String)] = []
        let n = sd_response_header_count(r)
        headers.reserveCapacity(Int(n))
        for i in 0..<n {
            var name: UnsafePointer<CChar>?
            var value: UnsafePointer<CChar>?
            if sd_response_header_at(r, i, &name, &value) == 0, let name, let value {
                headers.append((String(cString: name), String(cString: value)))
            }
        }
        return DownloadResponse(
            statusCode: Int(sd_response_status(r)),
            url: sd_response_effective_url(r).flatMap { URL(string: String(cString: $0)) },
            expectedContentLength: Int64(sd_response_expected_length(r)),
            mimeType: sd_response_content_type(r).map { String(cString: $0) },
            headers: headers)
    }
}

/// A running download: cancel it or change its priority while queued.
public final class DownloadTask: Sendable {
    private let loader: DataLoader
    let id: sd_transfer_id
    /// The URL requested.
    public let url: URL

    fileprivate init(loader: DataLoader, id: sd_transfer_id, url: URL) {
        self.loader = loader
        self.id = id
        self.url = url
    }

    /// Completes the download with `.cancelled` unless it already completed.
    public func cancel() { loader.cancel(id) }

    /// Move the download in the queue while it waits (no effect once it runs).
    public func setPriority(_ priority: DownloadPriority) { loader.setPriority(id, priority) }
}

/// The events of one load, kept alive by the C loop until `complete`.
// @unchecked: `response` and `observer` are written and read on the loop thread only; the rest is `let`.
private final class Handlers: @unchecked Sendable {
    let events: LoaderEvents
    let telemetry: LoaderTelemetry
    /// The request decodes; its partials are `sd_preview *` (`DownloadRequest.framesPreviews`).
    let decoded, framed: Bool
    let url: String
    /// Set by the response event; read by the completion (both on the loop thread).
    var response: DownloadResponse?
    /// The body observer's sink context: lives until the completion.
    var observer: BodyObserver?

    init(events: LoaderEvents, of request: DownloadRequest, telemetry: LoaderTelemetry) {
        (self.events, self.telemetry) = (events, telemetry)
        (decoded, url, framed) = (request.decode, request.url.absoluteString, request.framesPreviews)
    }
}

extension DownloadTask: Cancellable {}
