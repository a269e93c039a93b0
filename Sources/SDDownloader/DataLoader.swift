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
public final class DataLoader: @unchecked Sendable {
    private let loop: OpaquePointer

    public init(maxConcurrentDownloads: Int = 6, decodeThreads: Int? = nil) throws(DownloadError) {
        var out: OpaquePointer?
        try Self.check(sd_loop_new(&out))
        loop = out!
        do {
            try Self.check(sd_loop_set(loop, SD_LOOP_MAX_CONCURRENT, Int64(maxConcurrentDownloads)))
            if let decodeThreads {
                try Self.check(sd_loop_set(loop, SD_LOOP_DECODE_THREADS, Int64(decodeThreads)))
            }
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

    public var maxConcurrentDownloads: Int {
        get { Int(get(SD_LOOP_MAX_CONCURRENT)) }
        set { _ = sd_loop_set(loop, SD_LOOP_MAX_CONCURRENT, Int64(max(1, newValue))) }
    }

    public var executionOrder: DownloadExecutionOrder {
        get { DownloadExecutionOrder(rawValue: get(SD_LOOP_ORDER)) ?? .fifo }
        set { _ = sd_loop_set(loop, SD_LOOP_ORDER, newValue.rawValue) }
    }

    /// While suspended, queued downloads do not start (running ones go on).
    public var isSuspended: Bool {
        get { get(SD_LOOP_SUSPENDED) != 0 }
        set { _ = sd_loop_set(loop, SD_LOOP_SUSPENDED, newValue ? 1 : 0) }
    }

    public var queuedCount: Int { Int(get(SD_LOOP_INFO_QUEUED)) }
    public var runningCount: Int { Int(get(SD_LOOP_INFO_RUNNING)) }

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
        var req: OpaquePointer?
        var rc = sd_request_new(request.url.absoluteString, &req)
        guard rc == 0, let req else {
            queue.async { completion(.failure(DownloadError(.invalidRequest, message: "invalid URL"))) }
            return nil
        }
        defer { sd_request_free(req) }
        rc = Self.configure(req, request)
        if rc < 0 {
            let code = DownloadError.Code(rawValue: rc)
            queue.async { completion(.failure(DownloadError(code, message: "invalid request"))) }
            return nil
        }
        let handlers = Handlers(queue: queue, progress: progress, preview: preview, completion: completion,
                                decoded: request.decode)
        let user = Unmanaged.passRetained(handlers).toOpaque()
        var events = sd_transfer_events()
        events.progress = progress == nil ? nil : { _, received, expected, user in
            let h = Unmanaged<Handlers>.fromOpaque(user!).takeUnretainedValue()
            let (r, e) = (Int64(received), Int64(expected))
            h.queue.async { h.progress?(r, e) }
        }
        events.preview = preview == nil ? nil : { _, bitmap, user in
            let h = Unmanaged<Handlers>.fromOpaque(user!).takeUnretainedValue()
            let image = Bitmap(adopting: bitmap!)
            h.queue.async { h.preview?(image) }
        }
        events.complete = { _, result, user in
            let h = Unmanaged<Handlers>.fromOpaque(user!).takeRetainedValue()
            let outcome = DataLoader.outcome(of: result!, decoded: h.decoded)
            sd_result_free(result)
            h.queue.async { h.completion(outcome) }
        }
        var id: sd_transfer_id = 0
        rc = sd_loop_submit(loop, req, &events, user, &id)
        if rc < 0 {
            Unmanaged<Handlers>.fromOpaque(user).release() // refused: no callback will run
            let code = DownloadError.Code(rawValue: rc)
            queue.async { completion(.failure(DownloadError(code))) }
            return nil
        }
        return DownloadTask(loader: self, id: id, url: request.url)
    }

    /// Async variant; cancelling the Swift task cancels the download.
    public func load(_ request: DownloadRequest) async throws(DownloadError) -> DownloadResult {
        let box = TaskBox()
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

    private static func configure(_ r: OpaquePointer, _ q: DownloadRequest) -> Int32 {
        var rc: Int32 = 0
        func set(_ p: sd_request_param, _ v: Int64) { if rc == 0 { rc = sd_request_set(r, p, v) } }
        func str(_ p: sd_request_string, _ v: String?) { if rc == 0, let v { rc = sd_request_set_string(r, p, v) } }
        func dec(_ p: sd_decoder_param, _ v: Int) { if rc == 0 { rc = sd_request_set_decoder_param(r, p, Int64(v)) } }
        set(SD_REQ_PRIORITY, Int64(q.priority.rawValue))
        set(SD_REQ_TIMEOUT_MS, Int64(max(0, q.timeout * 1000)))
        set(SD_REQ_DECODE, q.decode ? 1 : 0)
        set(SD_REQ_PREVIEWS, q.progressivePreviews ? 1 : 0)
        set(SD_REQ_ALLOW_INVALID_CERTS, q.allowsInvalidCertificates ? 1 : 0)
        set(SD_REQ_COOKIES, q.handlesCookies ? 1 : 0)
        set(SD_REQ_STATUS_MIN, Int64(q.acceptableStatusCodes.lowerBound))
        set(SD_REQ_STATUS_MAX, Int64(q.acceptableStatusCodes.upperBound))
        set(SD_REQ_MAX_BYTES, Int64(max(0, q.maxResponseBytes)))
        set(SD_REQ_PROGRESS_INTERVAL_MS, Int64(max(0, q.minimumProgressInterval * 1000)))
        str(SD_REQ_USERNAME, q.username)
        str(SD_REQ_PASSWORD, q.password)
        str(SD_REQ_IF_NONE_MATCH, q.ifNoneMatch)
        str(SD_REQ_IF_MODIFIED_SINCE, q.ifModifiedSince)
        str(SD_REQ_ACCEPT_CONTENT_TYPES, q.acceptableContentTypes?.joined(separator: ","))
        for (name, value) in q.headers.sorted(by: { $0.key < $1.key }) where rc == 0 {
            rc = sd_request_add_header(r, "\(name): \(value)")
        }
        let o = q.decodeOptions
        if let size = o.thumbnailPixelSize {
            dec(SD_DEC_TARGET_WIDTH, max(0, size.width))
            dec(SD_DEC_TARGET_HEIGHT, max(0, size.height))
        }
        dec(SD_DEC_PRESERVE_ASPECT, o.preserveAspectRatio ? 1 : 0)
        dec(SD_DEC_MAX_BYTES, max(0, o.scaleDownLimitBytes))
        dec(SD_DEC_APPLY_ORIENTATION, o.applyOrientation ? 1 : 0)
        dec(SD_DEC_MAX_PIXELS, max(0, o.maxPixels))
        dec(SD_DEC_MAX_DIMENSION, max(0, o.maxDimension))
        if q.progressivePreviews {
            set(SD_REQ_PREVIEW_INTERVAL_MS, Int64(max(0, o.previewIntervalMilliseconds)))
        }
        return rc
    }

    /// Everything is copied out (or adopted) here, on the loop thread, before
    /// the hop: the result is freed right after.
    private static func outcome(of r: OpaquePointer, decoded: Bool) -> Result<DownloadResult, DownloadError> {
        let response = sd_result_response(r).map(Self.response(of:))
        let status = sd_result_status(r)
        if status != 0 {
            return .failure(DownloadError(DownloadError.Code(rawValue: status),
                                          message: String(cString: sd_result_message(r)),
                                          statusCode: response.map(\.statusCode).flatMap { $0 > 0 ? $0 : nil }))
        }
        var body: UnsafeMutablePointer<UInt8>?
        var length = 0
        _ = sd_result_take_body(r, &body, &length)
        let data = body.map { Data(bytesNoCopy: $0, count: length, deallocator: .custom { p, _ in sd_free(p) }) }
            ?? Data()
        var image: DecodedImage?
        if decoded, let bitmap = sd_result_take_bitmap(r) {
            func info(_ p: sd_decoder_param) -> Int {
                var v: Int64 = 0
                return sd_result_decoder_info(r, p, &v) == 0 ? Int(v) : 0
            }
            image = DecodedImage(
                bitmap: Bitmap(adopting: bitmap),
                format: ImageFormat(rawValue: info(SD_DEC_INFO_FORMAT)) ?? .unknown,
                orientation: max(1, info(SD_DEC_INFO_ORIENTATION)),
                sourceWidth: info(SD_DEC_INFO_WIDTH), sourceHeight: info(SD_DEC_INFO_HEIGHT),
                isProgressive: info(SD_DEC_INFO_PROGRESSIVE) != 0,
                isComplete: info(SD_DEC_INFO_COMPLETE) != 0,
                warnings: info(SD_DEC_INFO_WARNINGS))
        }
        func m(_ k: sd_metric) -> Double { sd_result_metric(r, k) }
        let metrics = DownloadMetrics(
            dnsMs: m(SD_METRIC_DNS_MS), connectMs: m(SD_METRIC_CONNECT_MS), tlsMs: m(SD_METRIC_TLS_MS),
            firstByteMs: m(SD_METRIC_FIRST_BYTE_MS), totalMs: m(SD_METRIC_TOTAL_MS),
            queuedMs: m(SD_METRIC_QUEUED_MS), decodeMs: m(SD_METRIC_DECODE_MS),
            bytes: Int(m(SD_METRIC_BYTES)), httpVersion: Int(m(SD_METRIC_HTTP_VERSION)),
            redirects: Int(m(SD_METRIC_REDIRECTS)), newConnections: Int(m(SD_METRIC_CONNECTIONS)))
        return .success(DownloadResult(data: data, image: image, response: response, metrics: metrics))
    }

    private static func response(of r: OpaquePointer) -> DownloadResponse {
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
public final class DownloadTask: @unchecked Sendable {
    private let loader: DataLoader
    let id: sd_transfer_id
    public let url: URL

    fileprivate init(loader: DataLoader, id: sd_transfer_id, url: URL) {
        self.loader = loader
        self.id = id
        self.url = url
    }

    /// Completes the download with `.cancelled` unless it already completed.
    public func cancel() { loader.cancel(id) }

    public func setPriority(_ priority: DownloadPriority) { loader.setPriority(id, priority) }
}

/// The closures of one load, kept alive by the C loop until `complete`.
private final class Handlers: @unchecked Sendable {
    let queue: DispatchQueue
    let progress: (@Sendable (Int64, Int64) -> Void)?
    let preview: (@Sendable (Bitmap) -> Void)?
    let completion: @Sendable (Result<DownloadResult, DownloadError>) -> Void
    let decoded: Bool

    init(queue: DispatchQueue, progress: (@Sendable (Int64, Int64) -> Void)?, preview: (@Sendable (Bitmap) -> Void)?,
         completion: @escaping @Sendable (Result<DownloadResult, DownloadError>) -> Void, decoded: Bool) {
        self.queue = queue
        self.progress = progress
        self.preview = preview
        self.completion = completion
        self.decoded = decoded
    }
}

/// Bridges Swift task cancellation to a task that may not exist yet.
private final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: DownloadTask?
    private var cancelled = false

    func set(_ t: DownloadTask?) {
        lock.lock()
        task = t
        let c = cancelled
        lock.unlock()
        if c { t?.cancel() }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let t = task
        lock.unlock()
        t?.cancel()
    }
}
