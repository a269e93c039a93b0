import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDCoders
import SDDownloader

/// What one subscriber wants from a shared transfer: its own decode (thumbnail
/// size, byte budget), scale, previews and callback queue.
public struct SDImageCoderOptions: Sendable {
    public var decode = DecodeOptions()
    /// Scale stamped on the image (1 = pixels are points).
    public var scaleFactor: Double = 1
    /// False: bytes only (`.avoidDecodeImage`).
    public var decodeImage = true
    /// Wants previews (`.progressiveLoad`).
    public var progressive = false
    /// Where this subscriber's callbacks run (nil: the downloader's queue).
    public var callbackQueue: SDCallbackQueue?

    public init() {}

    /// Same bitmap would come out.
    func decodesLike(_ o: SDImageCoderOptions) -> Bool {
        decodeImage == o.decodeImage && (!decodeImage || decode == o.decode)
    }
}

/// Everything an operation needs from its downloader, resolved per request.
public struct SDWebImageDownloaderOperationEnvironment: Sendable {
    /// The C transfer loop shared by the downloader's operations.
    public let loader: DataLoader
    public let minimumProgressInterval: Double
    public let username: String?
    public let password: String?
    public let acceptableStatusCodes: IndexSet?
    public let acceptableContentTypes: Set<String>?
    public let responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?
    public let decryptor: (any SDWebImageDownloaderDecryptorProtocol)?
    public let callbackQueue: DispatchQueue
    let httpCache: HTTPValidatorCache?
    var resumable: ResumableDataStore?
    /// The config's `urlPolicy`, `maxResponseBytes`, `maxRedirects`.
    public var urlPolicy = URLPolicy.none
    public var maxResponseBytes = DownloadRequest.defaultMaxResponseBytes
    public var maxRedirects = DownloadRequest.defaultMaxRedirects
    /// The config's `downloadTotalTimeout`.
    public var totalTimeout = DownloadRequest.defaultTotalTimeout

    public init(loader: DataLoader, minimumProgressInterval: Double = 0, username: String? = nil,
                password: String? = nil, acceptableStatusCodes: IndexSet? = IndexSet(integersIn: 200..<300),
                acceptableContentTypes: Set<String>? = nil,
                responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)? = nil,
                decryptor: (any SDWebImageDownloaderDecryptorProtocol)? = nil,
                callbackQueue: DispatchQueue = SDWebImageDownloaderConfig.defaultCallbackQueue) {
        self.init(loader: loader, minimumProgressInterval: minimumProgressInterval, username: username,
                  password: password, acceptableStatusCodes: acceptableStatusCodes,
                  acceptableContentTypes: acceptableContentTypes, responseModifier: responseModifier,
                  decryptor: decryptor, callbackQueue: callbackQueue, httpCache: nil)
    }

    init(loader: DataLoader, minimumProgressInterval: Double, username: String?, password: String?,
         acceptableStatusCodes: IndexSet?, acceptableContentTypes: Set<String>?,
         responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?,
         decryptor: (any SDWebImageDownloaderDecryptorProtocol)?, callbackQueue: DispatchQueue,
         httpCache: HTTPValidatorCache?) {
        self.loader = loader
        self.minimumProgressInterval = minimumProgressInterval
        self.username = username
        self.password = password
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
        self.responseModifier = responseModifier
        self.decryptor = decryptor
        self.callbackQueue = callbackQueue
        self.httpCache = httpCache
    }
}

/// An operation downloads one URL for any number of subscribers. Plug your
/// own in with `SDWebImageDownloaderConfig.operationClass`.
public protocol SDWebImageDownloaderOperationProtocol: AnyObject, Sendable {
    init(request: URLRequest, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
         environment: SDWebImageDownloaderOperationEnvironment)
    /// Subscribe; nil once the operation has finished (the caller starts a new one).
    func addHandlers(forProgress progressBlock: SDWebImageDownloaderProgressBlock?,
                     completed completedBlock: SDWebImageDownloaderCompletedBlock?,
                     decodeOptions: SDImageCoderOptions) -> (any Sendable)?
    /// Unsubscribe: that subscriber's completion gets `cancelled`. True when it
    /// was the last one and the transfer stopped.
    func cancel(_ token: (any Sendable)?) -> Bool
    func start()
    /// Stop the transfer; every subscriber gets `cancelled`.
    func cancel()
    var request: URLRequest? { get }
    var response: URLResponse? { get }
    var metrics: DownloadMetrics? { get }
    var isExecuting: Bool { get }
    var isFinished: Bool { get }
    var isCancelled: Bool { get }
    /// Called once when the operation finished (the downloader forgets it then).
    var completionBlock: (@Sendable () -> Void)? { get set }
    /// Move the transfer up or down its queue while it waits (the downloader
    /// calls it with the highest priority of the subscribers as they join,
    /// leave or change theirs). Default: ignored.
    func setPriority(_ priority: DownloadPriority)
}

extension SDWebImageDownloaderOperationProtocol {
    public func setPriority(_ priority: DownloadPriority) {}
}

public extension Notification.Name {
    /// The operation started its transfer (object: the operation).
    static let SDWebImageDownloadStart = Notification.Name("SDWebImageDownloadStartNotification")
    /// The response headers arrived (object: the operation).
    static let SDWebImageDownloadReceiveResponse = Notification.Name("SDWebImageDownloadReceiveResponseNotification")
    /// The transfer ended, whatever the outcome (object: the operation).
    static let SDWebImageDownloadStop = Notification.Name("SDWebImageDownloadStopNotification")
    /// The transfer succeeded (object: the operation).
    static let SDWebImageDownloadFinish = Notification.Name("SDWebImageDownloadFinishNotification")
}

/// Notifications are posted from one serial queue, never the loop thread, in order.
let notificationQueue = DispatchQueue(label: "SDWebImage.notifications")

func post(_ name: Notification.Name, _ object: any SDWebImageDownloaderOperationProtocol) {
    notificationQueue.async { NotificationCenter.default.post(name: name, object: object) }
}

/// The default operation: one transfer on the C loop, streamed into the
/// decoder for the first subscriber's options; subscribers that asked for
/// another size get their own decode of the same bytes at the end.
public final class SDWebImageDownloaderOperation: SDWebImageDownloaderOperationProtocol, @unchecked Sendable {
    private final class Handler: @unchecked Sendable {
        let progress: SDWebImageDownloaderProgressBlock?
        let completed: SDWebImageDownloaderCompletedBlock?
        let options: SDImageCoderOptions
        let queue: SDCallbackQueue
        init(_ p: SDWebImageDownloaderProgressBlock?, _ c: SDWebImageDownloaderCompletedBlock?,
             _ o: SDImageCoderOptions, _ q: SDCallbackQueue) {
            progress = p
            completed = c
            options = o
            queue = q
        }
    }

    private enum State { case ready, executing, finished }

    public let request: URLRequest?
    public let options: SDWebImageDownloaderOptions
    public let context: SDWebImageContext?
    private let env: SDWebImageDownloaderOperationEnvironment
    private let checksInSwift: Bool
    /// Response handling and the end run here, in order, off the loop thread.
    private let work: DispatchQueue

    private let lock = NSLock()
    private var handlers: [Handler] = []
    private var state = State.ready
    private var cancelled = false
    private var task: DownloadTask?
    private var pendingError: (any Error)?
    private var _response: URLResponse?
    private var rawResponse: DownloadResponse?
    private var progressHandlers = 0
    private var _metrics: DownloadMetrics?
    private var _completionBlock: (@Sendable () -> Void)?
    private var transferOptions: SDImageCoderOptions?
    private var decodesInTransfer = false
    private var reported: (received: Int64, fraction: Double)?
    private var validators: HTTPValidatorCache.Entry?

    public required init(request: URLRequest, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                         environment: SDWebImageDownloaderOperationEnvironment) {
        self.request = request
        self.options = options
        self.context = context
        env = environment
        checksInSwift = Self.checksInSwift(environment)
        work = DispatchQueue(label: "SDWebImageDownloaderOperation", target: .global(qos: .userInitiated))
    }

    public var response: URLResponse? {
        lock.lock()
        defer { lock.unlock() }
        if _response == nil, let raw = rawResponse { _response = makeResponse(raw) }
        return _response
    }
    public var metrics: DownloadMetrics? { lock.lock(); defer { lock.unlock() }; return _metrics }
    public var isExecuting: Bool { lock.lock(); defer { lock.unlock() }; return state == .executing }
    public var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return state == .finished }
    public var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return cancelled }
    public var completionBlock: (@Sendable () -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return _completionBlock }
        set { lock.lock(); _completionBlock = newValue; lock.unlock() }
    }

    public func addHandlers(forProgress progressBlock: SDWebImageDownloaderProgressBlock?,
                            completed completedBlock: SDWebImageDownloaderCompletedBlock?,
                            decodeOptions: SDImageCoderOptions) -> (any Sendable)? {
        let h = Handler(progressBlock, completedBlock, decodeOptions,
                        decodeOptions.callbackQueue ?? SDCallbackQueue(dispatchQueue: env.callbackQueue, policy: .dispatch))
        lock.lock()
        defer { lock.unlock() }
        guard state != .finished, !cancelled else { return nil }
        handlers.append(h)
        if progressBlock != nil { progressHandlers += 1 }
        return HandlerToken(h)
    }

    public func cancel(_ token: (any Sendable)?) -> Bool {
        guard let token = token as? HandlerToken else { return false }
        lock.lock()
        guard state != .finished, let target = token.handler, let i = handlers.firstIndex(where: { $0 === target }) else {
            lock.unlock()
            return false
        }
        let h = handlers.remove(at: i)
        if h.progress != nil { progressHandlers -= 1 }
        let last = handlers.isEmpty
        if last { cancelled = true }
        let (t, started) = (task, state != .ready)
        lock.unlock()
        let error = SDWebImageError(.cancelled, "the download was cancelled")
        if let c = h.completed { h.queue.async { c(nil, nil, error, true) } }
        if last {
            if started { t?.cancel() } else { work.async { self.finish(.failure(DownloadError(.cancelled))) } }
        }
        return last
    }

    public func cancel() {
        lock.lock()
        guard state != .finished, !cancelled else { lock.unlock(); return }
        cancelled = true
        let (t, started) = (task, state != .ready)
        lock.unlock()
        if started { t?.cancel() } else { work.async { self.finish(.failure(DownloadError(.cancelled))) } }
    }

    /// Raise (or lower) the priority while the transfer waits in the queue.
    public func setPriority(_ p: DownloadPriority) {
        lock.lock()
        let t = task
        lock.unlock()
        t?.setPriority(p)
    }

    public func start() {
        lock.lock()
        guard state == .ready, !cancelled else { lock.unlock(); return }
        state = .executing
        let first = handlers.first?.options ?? SDImageCoderOptions()
        transferOptions = first
        // A decryptor must see every byte before anything is an image.
        decodesInTransfer = first.decodeImage && env.decryptor == nil
        if options.contains(.useHTTPCache), let url = request?.url { validators = env.httpCache?.entry(for: url) }
        let dl = makeRequest(first)
        lock.unlock()
        post(.SDWebImageDownloadStart, self)
        guard let dl else {
            work.async { self.finish(.failure(DownloadError(.invalidRequest, message: "unsupported request"))) }
            return
        }
        var events = LoaderEvents { [self] result in
            // The common end (every subscriber takes the streamed decode) is a
            // few hops of bookkeeping: done right here. User code (decryptor,
            // response checks) and extra decodes go to `work`, in order.
            if endsLight() { finish(result, inline: true) } else { work.async { self.finish(result) } }
        }
        events.response = { [self] r in received(r) }
        events.progress = { [self] r, e in progressed(r, e) }
        if dl.progressivePreviews { events.preview = { [self] b in previewed(b) } }
        switch env.loader.submit(dl, events: events) {
        case .success(let t):
            lock.lock()
            task = t
            let c = cancelled
            lock.unlock()
            if c { t.cancel() }
        case .failure(let e):
            work.async { self.finish(.failure(e)) }
        }
    }

    // MARK: - Request

    /// Status and content type are checked here, not by the C loop, when a
    /// response modifier may change them or the codes are not one range.
    private static func checksInSwift(_ env: SDWebImageDownloaderOperationEnvironment) -> Bool {
        if env.responseModifier != nil { return true }
        guard let codes = env.acceptableStatusCodes else { return false }
        guard let lo = codes.first, let hi = codes.last else { return true }
        return codes.count != hi - lo + 1
    }

    private func makeRequest(_ first: SDImageCoderOptions) -> DownloadRequest? {
        guard let r = request, let url = r.url, (r.httpMethod ?? "GET").uppercased() == "GET" else { return nil }
        var d = DownloadRequest(url: url)
        d.priority = options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
        d.timeout = r.timeoutInterval
        for (k, v) in r.allHTTPHeaderFields ?? [:] { d.headers[k] = v }
        d.handlesCookies = options.contains(.handleCookies)
        d.policy = env.urlPolicy
        d.maxResponseBytes = env.maxResponseBytes
        d.maxRedirects = env.maxRedirects
        d.totalTimeout = env.totalTimeout
        d.allowsInvalidCertificates = options.contains(.allowInvalidSSLCertificates)
        d.username = env.username
        d.password = env.password
        d.decode = decodesInTransfer
        d.decodeOptions = first.decode
        d.progressivePreviews = decodesInTransfer && options.contains(.progressiveLoad)
        if checksInSwift {
            d.acceptableStatusCodes = 0...999
        } else {
            if let codes = env.acceptableStatusCodes, let lo = codes.first, let hi = codes.last {
                d.acceptableStatusCodes = lo...hi
            } else {
                d.acceptableStatusCodes = 0...999
            }
            d.acceptableContentTypes = env.acceptableContentTypes.map { Array($0).sorted() }
        }
        // the HTTP cache's entry, else the manager's (.refreshCached): one validator type
        if let v = validators?.validators ?? context?[.httpValidators] as? SDWebImageHTTPValidators {
            d.ifNoneMatch = v.etag
            d.ifModifiedSince = v.lastModified
        } else {
            d.resume = env.resumable?.take(url)  // an earlier try broke off: ask for the rest
        }
        return d
    }

    // MARK: - Loop-thread events (record and hop only)

    private func received(_ r: DownloadResponse) {
        // Only recorded here (the loop thread); the Foundation response is built on demand.
        lock.lock()
        rawResponse = r
        _response = nil
        lock.unlock()
        if checksInSwift {
            work.async { self.check(self.makeResponse(r)) }
        } else {
            post(.SDWebImageDownloadReceiveResponse, self)
        }
    }

    private func makeResponse(_ r: DownloadResponse) -> URLResponse {
        let url = r.url ?? request?.url ?? URL(fileURLWithPath: "/")
        if r.statusCode > 0 {
            var fields: [String: String] = [:]
            for (n, v) in r.headers { fields[n] = v }
            if let http = HTTPURLResponse(url: url, statusCode: r.statusCode, httpVersion: "HTTP/1.1", headerFields: fields) {
                return http
            }
        }
        return URLResponse(url: url, mimeType: r.mimeType, expectedContentLength: Int(r.expectedContentLength),
                           textEncodingName: nil)
    }

    /// The response modifier and the checks C could not express (off the loop).
    private func check(_ original: URLResponse) {
        var error: SDWebImageError?
        var response: URLResponse? = original
        if let m = env.responseModifier {
            response = m.modifiedResponse(with: original)
            if response == nil { error = SDWebImageError(.invalidDownloadResponse, "the response modifier returned nil") }
        }
        if let http = response as? HTTPURLResponse {
            if http.statusCode != 304, let codes = env.acceptableStatusCodes, !codes.contains(http.statusCode) {
                error = SDWebImageError(.invalidDownloadStatusCode, "download failed with HTTP status \(http.statusCode)",
                                        statusCode: http.statusCode, response: http)
            } else if let types = env.acceptableContentTypes {
                let mime = (http.mimeType ?? "").lowercased()
                if !types.contains(where: { !$0.isEmpty && mime.hasPrefix($0.lowercased()) }) {
                    error = SDWebImageError(.invalidDownloadContentType, "content type \(mime) is not acceptable",
                                            response: http, contentType: http.mimeType)
                }
            }
        }
        lock.lock()
        _response = response
        rawResponse = nil
        if let error, pendingError == nil { pendingError = error }
        let t = error == nil ? nil : task
        lock.unlock()
        t?.cancel()
        post(.SDWebImageDownloadReceiveResponse, self)
    }

    private func progressed(_ received: Int64, _ expected: Int64) {
        lock.lock()
        if progressHandlers == 0 {
            lock.unlock()
            return
        }
        if let last = reported, received == last.received {
            lock.unlock()
            return
        }
        if let last = reported, expected > 0, env.minimumProgressInterval > 0 {
            let f = Double(received) / Double(expected)
            if f - last.fraction < env.minimumProgressInterval && received < expected {
                lock.unlock()
                return
            }
        }
        reported = (received, expected > 0 ? Double(received) / Double(expected) : 0)
        let hs = handlers
        lock.unlock()
        let url = request?.url
        for h in hs { if let p = h.progress { h.queue.async { p(Int(received), Int(expected), url) } } }
    }

    private func previewed(_ bitmap: Bitmap) {
        lock.lock()
        let hs = handlers
        let t = transferOptions
        lock.unlock()
        guard let t else { return }
        for h in hs where h.options.progressive && h.options.decodesLike(t) {
            guard let c = h.completed else { continue }
            let image = SDImage(bitmap: bitmap, orientation: 1, scale: h.options.scaleFactor, isIncremental: true)
            h.queue.async { c(image, nil, nil, false) }
        }
    }

    // MARK: - The end

    /// Ending runs no user code and no decode: it may run on the loop thread.
    private func endsLight() -> Bool {
        !checksInSwift && env.decryptor == nil
    }

    private func finish(_ result: Result<DownloadResult, DownloadError>, inline: Bool = false) {
        lock.lock()
        guard state != .finished else { lock.unlock(); return }
        state = .finished
        let hs = handlers
        handlers = []
        let pending = pendingError
        let transfer = transferOptions
        let lastReported = reported?.received
        let validators = validators
        if case .success(let r) = result { _metrics = r.metrics }
        let (built, raw) = (_response, rawResponse)
        let done = _completionBlock
        lock.unlock()
        // Built only where needed: errors, decryptors, the HTTP cache.
        lazy var response: URLResponse? = built ?? raw.map(makeResponse)

        let url = request?.url
        var outcome: Result<(Data, DecodedImage?, Bool), any Error>
        switch result {
        case _ where pending != nil:
            outcome = .failure(pending!)
        case .failure(let e) where e.code == .notModified && validators != nil && !options.contains(.ignoreCachedResponse):
            outcome = .success((validators!.data, nil, false))
        case .failure(let e):
            if let url, let partial = e.resumable { env.resumable?.store(url, partial) }
            outcome = .failure(SDWebImageError.from(e, url: url, response: response as? HTTPURLResponse))
        case .success(let r):
            outcome = .success((r.data, r.image, decodesInTransfer))
            if options.contains(.useHTTPCache), let url, let http = response as? HTTPURLResponse {
                env.httpCache?.store(url: url, data: r.data, response: http)
            }
        }
        if case .success(let (data, image, decoded)) = outcome, let d = env.decryptor {
            if let plain = d.decryptedData(with: data, response: response) {
                outcome = .success((plain, image, decoded))
            } else {
                outcome = .failure(SDWebImageError(.badImageData, "the decryptor returned nil"))
            }
        }
        if case .success(let (data, _, _)) = outcome, data.isEmpty {
            outcome = .failure(SDWebImageError(.badImageData, "the downloaded data is empty"))
        }

        switch outcome {
        case .failure(let error):
            for h in hs { if let c = h.completed { h.queue.async { c(nil, nil, error, true) } } }
        case .success(let (data, transferImage, decoded)):
            // The last progress call comes before completion.
            if lastReported != Int64(data.count) {
                let count = data.count
                let total = max(count, Int(response?.expectedContentLength ?? 0))
                for h in hs { if let p = h.progress { h.queue.async { p(count, total, url) } } }
            }
            var own: [Handler] = []  // subscribers that need a decode of their own
            for h in hs {
                guard let c = h.completed else { continue }
                if !h.options.decodeImage {
                    h.queue.async { c(nil, data, nil, true) }
                } else if decoded, let transfer, let transferImage, h.options.decodesLike(transfer) {
                    let image = SDImage(decoded: transferImage, scale: h.options.scaleFactor)
                    h.queue.async { c(image, data, nil, true) }
                } else {
                    own.append(h)
                }
            }
            if !own.isEmpty {
                // Never decode on the loop thread.
                let extra = own
                if inline { work.async { Self.decodeEach(extra, data) } } else { Self.decodeEach(extra, data) }
            }
        }
        post(.SDWebImageDownloadStop, self)
        if case .success = outcome { post(.SDWebImageDownloadFinish, self) }
        done?()
    }

    /// One decode per distinct set of options, shared by the subscribers that ask alike.
    private static func decodeEach(_ hs: [Handler], _ data: Data) {
        var done: [(SDImageCoderOptions, Result<DecodedImage, SDWebImageError>)] = []
        for h in hs {
            guard let c = h.completed else { continue }
            let result: Result<DecodedImage, SDWebImageError>
            if let hit = done.first(where: { $0.0.decodesLike(h.options) }) {
                result = hit.1
            } else {
                result = decode(data, h.options.decode)
                done.append((h.options, result))
            }
            switch result {
            case .success(let d):
                let image = SDImage(decoded: d, scale: h.options.scaleFactor)
                h.queue.async { c(image, data, nil, true) }
            case .failure(let e):
                h.queue.async { c(nil, data, e, true) }
            }
        }
    }

    private static func decode(_ data: Data, _ options: DecodeOptions) -> Result<DecodedImage, SDWebImageError> {
        data.withUnsafeBytes { raw in
            do throws(CoderError) {
                let d = try ImageDecoder.decode(raw, options: options)
                guard d.bitmap.width > 0, d.bitmap.height > 0 else {
                    return .failure(SDWebImageError(.badImageData, "the image has no pixels"))
                }
                return .success(d)
            } catch {
                return .failure(SDWebImageError(.badImageData, error.message, underlyingError: error))
            }
        }
    }
}

/// Identifies one subscriber of a default operation. Weak: the subscriber's
/// closures often hold the token's owner (the manager's operation holds the
/// token), and the operation drops its handlers when it ends.
final class HandlerToken: @unchecked Sendable {
    weak var handler: AnyObject?
    init(_ h: AnyObject) { handler = h }
}
