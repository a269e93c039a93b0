import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import SDCoders
import SDDownloader
import SDSync

/// Downloads images: one operation per URL (requests for a URL that is
/// already loading join it), run on the C transfer loop, decoded as bytes
/// arrive. Thread-safe; callbacks run on the config's (or context's) queue,
/// never on the loop thread.
// @unchecked: operations, priorities, headers and subscribers are under `lock`; the config is copied at init.
public final class SDWebImageDownloader: @unchecked Sendable {
    /// The downloader the shared manager uses (``SDWebImageDownloaderConfig/default``).
    public static let shared = SDWebImageDownloader(config: .default)

    /// This downloader's own copy of the config it was made with.
    public let config: SDWebImageDownloaderConfig
    private let loader: DataLoader?
    private let httpCache: HTTPValidatorCache
    private let resumable: ResumableDataStore?
    private let lock = NSLock()
    private var operations: [URL: any SDWebImageDownloaderOperationProtocol] = [:]
    private var priorities: [ObjectIdentifier: Priorities] = [:]
    private var headers: [String: String]

    /// Where the C core's diagnostics go (a failed transfer, a refused
    /// address, credentials redacted). The core has one log callback per
    /// process (`sd_set_log_callback`), so this is one logger per process,
    /// unlike the per-instance `SDWebImageDownloaderConfig.logger`. Default:
    /// nowhere.
    public static var coreLogger: Logger {
        get { Telemetry.coreLogger }
        set { Telemetry.coreLogger = newValue }
    }

    /// A downloader with its own transfer loop, configured by a copy of `config`.
    public init(config: SDWebImageDownloaderConfig? = .default) {
        let config = (config ?? .default).copy()
        self.config = config
        loader = try? DataLoader(maxConcurrentDownloads: config.maxConcurrentDownloads,
                                 telemetry: SDTelemetry(logger: config.logger, metricsDimensions: config.metricsDimensions))
        loader?.executionOrder = config.executionOrder == .lifo ? .lifo : .fifo
        loader?.maxConnectionsPerHost = config.maxConnectionsPerHost
        httpCache = HTTPValidatorCache(capacity: config.httpCacheCapacity)
        resumable = config.resumableDataCapacity > 0 ? ResumableDataStore(capacity: config.resumableDataCapacity) : nil
        let ua = "SDWebImage-Linux/\(sdCoreVersion)"
        headers = ["Accept": "image/*,*/*;q=0.8", "User-Agent": ua]
        config.onChange = { [weak self] in
            guard let self, let loader = self.loader else { return }
            loader.maxConcurrentDownloads = self.config.maxConcurrentDownloads
            loader.executionOrder = self.config.executionOrder == .lifo ? .lifo : .fifo
            loader.maxConnectionsPerHost = self.config.maxConnectionsPerHost
        }
    }

    /// Set (or with nil remove) a header sent with every download.
    public func setValue(_ value: String?, forHTTPHeaderField field: String) {
        lock.lock()
        defer { lock.unlock() }
        let key = headers.keys.first { $0.caseInsensitiveCompare(field) == .orderedSame } ?? field
        headers[key] = value
    }

    /// The value of a header sent with every download (case-insensitive name), or nil.
    public func value(forHTTPHeaderField field: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return headers.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }

    /// While suspended, queued downloads wait (running ones go on).
    public var isSuspended: Bool {
        get { loader?.isSuspended ?? false }
        set { loader?.isSuspended = newValue }
    }

    /// Operations not finished yet (queued or running).
    public var currentDownloadCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return operations.count
    }

    /// Every operation completes its subscribers with `cancelled`.
    public func cancelAllDownloads() {
        lock.lock()
        let ops = Array(operations.values)
        operations.removeAll()
        lock.unlock()
        for op in ops { op.cancel() }
    }

    /// Download (or join the running download of) `url`.
    ///
    /// `completed` runs once with `finished == true` (image, data, nil, true)
    /// or (nil, nil, error, true); with `.progressiveLoad` it also runs with
    /// previews and `finished == false` before that.
    @discardableResult
    public func downloadImage(
        with url: URL?,
        options: SDWebImageDownloaderOptions,
        context: SDWebImageContext?,
        progress: SDWebImageDownloaderProgressBlock?,
        completed: SDWebImageDownloaderCompletedBlock?
    ) -> SDWebImageDownloadToken? {
        download(url, options, context, progress, completed, slot: nil)
    }

    /// `downloadImage` whose completion also gets the response (read from
    /// the operation that served it, whatever its class).
    @discardableResult
    func downloadImage(with url: URL?, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                       progress: SDWebImageDownloaderProgressBlock?,
                       respondingTo completed: @escaping SDImageLoaderResponseCompletedBlock) -> SDWebImageDownloadToken? {
        let slot = OperationSlot()
        return download(url, options, context, progress, { image, data, error, finished in
            completed(image, data, error, finished, slot.response(taking: finished))
        }, slot: slot)
    }

    private func download(_ url: URL?, _ options: SDWebImageDownloaderOptions, _ context: SDWebImageContext?,
                          _ progress: SDWebImageDownloaderProgressBlock?,
                          _ completed: SDWebImageDownloaderCompletedBlock?, slot: OperationSlot?) -> SDWebImageDownloadToken? {
        let queue = context?.callbackQueue ?? SDCallbackQueue(dispatchQueue: config.callbackQueue, policy: .dispatch)
        func fail(_ e: SDWebImageError) -> SDWebImageDownloadToken? {
            if let completed { queue.async { completed(nil, nil, e, true) } }
            return nil
        }
        guard let url, !url.absoluteString.isEmpty else {
            return fail(SDWebImageError(.invalidURL, "the image URL is nil"))
        }
        var coder = Self.coderOptions(url: url, options: options, context: context, queue: queue)
        coder.decode = coder.decode.capped(by: config.decodeLimits)
        if let isolation = config.decoderIsolation, coder.coder == nil {
            coder.coder = SDImageCoreCoder.isolating(isolation)  // decodes once the bytes are in
        }
        if let token = join(url, options, progress, completed, coder, slot) { return token }

        // A new operation, made outside the lock (modifiers are user code).
        guard let loader else { return fail(SDWebImageError(.invalidDownloadOperation, "the transfer loop is not running")) }
        guard let request = makeRequest(url, options, context) else {
            return fail(SDWebImageError(.invalidDownloadOperation, "the request modifier returned nil"))
        }
        var env = SDWebImageDownloaderOperationEnvironment(
            loader: loader,
            minimumProgressInterval: config.minimumProgressInterval,
            requestTemplate: config.requestTemplate,
            acceptableStatusCodes: config.acceptableStatusCodes,
            acceptableContentTypes: config.acceptableContentTypes,
            responseModifier: context?[.downloadResponseModifier] as? any SDWebImageDownloaderResponseModifierProtocol
                ?? config.responseModifier,
            decryptor: context?[.downloadDecryptor] as? any SDWebImageDownloaderDecryptorProtocol ?? config.decryptor,
            callbackQueue: config.callbackQueue,
            httpCache: httpCache)
        env.resumable = resumable
        env.settleLevels = config.thumbnailSettleLevels
        let type = config.operationClass ?? SDWebImageDownloaderOperation.self
        let op = type.init(request: request, options: options, context: context, environment: env)
        slot?.set(op)
        guard let opToken = op.addHandlers(forProgress: progress, completed: completed, decodeOptions: coder) else {
            return fail(SDWebImageError(.invalidDownloadOperation, "the operation refused the request"))
        }
        lock.lock()
        if let running = operations[url], !running.isFinished, !running.isCancelled {
            // Someone else started this URL meanwhile: join theirs. Ours never
            // started, so dropping it calls nobody.
            lock.unlock()
            return download(url, options, context, progress, completed, slot: slot)
        }
        op.completionBlock = { [weak self, weak op] in
            guard let self, let op else { return }
            self.forget(op, url)
        }
        operations[url] = op
        let token = SDWebImageDownloadToken(url: url, operation: op, token: opToken, downloader: self,
                                            priority: Self.priority(options))
        let id = ObjectIdentifier(op)
        priorities[id] = Priorities(applied: token.priority)  // the operation starts at its request's
        _ = subscribed(token, op)
        lock.unlock()
        op.start()
        return token
    }

    /// Download `url` with default options; see `downloadImage(with:options:context:progress:completed:)`.
    @discardableResult
    public func downloadImage(with url: URL?, completed: SDWebImageDownloaderCompletedBlock?) -> SDWebImageDownloadToken? {
        downloadImage(with: url, options: [], context: nil, progress: nil, completed: completed)
    }

    /// Download `url` with `options` and progress, without a context.
    @discardableResult
    public func downloadImage(with url: URL?, options: SDWebImageDownloaderOptions,
                              progress: SDWebImageDownloaderProgressBlock?,
                              completed: SDWebImageDownloaderCompletedBlock?) -> SDWebImageDownloadToken? {
        downloadImage(with: url, options: options, context: nil, progress: progress, completed: completed)
    }

    /// Download `url` with `options` and `context`, without progress.
    @discardableResult
    public func downloadImage(with url: URL?, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                              completed: SDWebImageDownloaderCompletedBlock?) -> SDWebImageDownloadToken? {
        downloadImage(with: url, options: options, context: context, progress: nil, completed: completed)
    }

    private func join(_ url: URL, _ options: SDWebImageDownloaderOptions, _ progress: SDWebImageDownloaderProgressBlock?,
                      _ completed: SDWebImageDownloaderCompletedBlock?, _ coder: SDImageLoaderDecodeOptions,
                      _ slot: OperationSlot?) -> SDWebImageDownloadToken? {
        lock.lock()
        guard let op = operations[url] else { lock.unlock(); return nil }
        slot?.set(op)
        guard let t = op.addHandlers(forProgress: progress, completed: completed, decodeOptions: coder) else {
            lock.unlock()
            return nil
        }
        let token = SDWebImageDownloadToken(url: url, operation: op, token: t, downloader: self,
                                            priority: Self.priority(options))
        let move = subscribed(token, op)
        lock.unlock()
        if let move { op.setPriority(move) }
        return token
    }

    private func makeRequest(_ url: URL, _ options: SDWebImageDownloaderOptions, _ context: SDWebImageContext?) -> URLRequest? {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData,
                                 timeoutInterval: config.downloadTimeout)
        request.httpShouldHandleCookies = options.contains(.handleCookies)
        lock.lock()
        let headers = headers
        lock.unlock()
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        if headers.keys.first(where: { $0.caseInsensitiveCompare("Accept") == .orderedSame }) == nil {
            request.setValue("", forHTTPHeaderField: "Accept") // removed by the user: send none
        }
        let modifier = context?[.downloadRequestModifier] as? any SDWebImageDownloaderRequestModifierProtocol
            ?? config.requestModifier
        guard let modifier else { return request }
        return modifier.modifiedRequest(with: request)
    }

    func forget(_ op: any SDWebImageDownloaderOperationProtocol, _ url: URL) {
        lock.lock()
        if let current = operations[url], current === op { operations.removeValue(forKey: url) }
        priorities.removeValue(forKey: ObjectIdentifier(op))
        lock.unlock()
    }

    // MARK: - Priority: an operation runs at the highest of its subscribers' (Nuke's rule)

    struct Priorities {
        var applied: DownloadPriority
        var subscribers: [ObjectIdentifier: DownloadPriority] = [:]
        var highest: DownloadPriority { subscribers.values.max { $0.rawValue < $1.rawValue } ?? applied }
    }

    static func priority(_ options: SDWebImageDownloaderOptions) -> DownloadPriority {
        options.contains(.highPriority) ? .high : options.contains(.lowPriority) ? .low : .normal
    }

    /// Under `lock`; returns the priority to give the operation (after unlocking).
    private func subscribed(_ token: SDWebImageDownloadToken,
                            _ op: any SDWebImageDownloaderOperationProtocol) -> DownloadPriority? {
        update(op) { $0.subscribers[ObjectIdentifier(token)] = token.priority }
    }

    /// A subscriber left, or changed its priority (`priority` nil: left).
    func subscriber(_ token: SDWebImageDownloadToken, of op: any SDWebImageDownloaderOperationProtocol,
                    changedTo priority: DownloadPriority?) {
        lock.lock()
        let move = update(op) { $0.subscribers[ObjectIdentifier(token)] = priority }
        lock.unlock()
        if let move { op.setPriority(move) }
    }

    /// Under `lock`: change the record; the new highest when it moved.
    private func update(_ op: any SDWebImageDownloaderOperationProtocol,
                        _ change: (inout Priorities) -> Void) -> DownloadPriority? {
        let id = ObjectIdentifier(op)
        guard var p = priorities[id] else { return nil }  // finished: nothing to reorder
        change(&p)
        let highest = p.highest
        defer { priorities[id] = p }
        guard highest != p.applied else { return nil }
        p.applied = highest
        return highest
    }

    static func coderOptions(url: URL, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                             queue: SDCallbackQueue?) -> SDImageLoaderDecodeOptions {
        SDImageLoadRequest.resolve(context).coderOptions(
            key: url.absoluteString, scaleDown: options.contains(.scaleDownLargeImages),
            avoidDecode: options.contains(.avoidDecodeImage), progressive: options.contains(.progressiveLoad),
            queue: queue, firstFrameOnly: options.contains(.decodeFirstFrameOnly),
            preloadAllFrames: options.contains(.preloadAllFrames),
            matchAnimatedImageClass: options.contains(.matchAnimatedImageClass))
    }
}

/// The operation serving one subscriber, until its final completion reads
/// the response from it (then let go: the operation holds the completion).
final class OperationSlot: Sendable {
    private let op = Locked<(any SDWebImageDownloaderOperationProtocol)?>(nil)
    func set(_ o: any SDWebImageDownloaderOperationProtocol) { op.set(o) }
    func response(taking final: Bool) -> URLResponse? {
        let o = op.withLock { o in defer { if final { o = nil } }; return o }
        return final ? o?.response : nil
    }
}

/// One subscriber's handle on a download.
public final class SDWebImageDownloadToken: Sendable {
    /// The URL downloaded.
    public let url: URL?
    let operation: any SDWebImageDownloaderOperationProtocol
    private let token: (any Sendable)?
    private weak let downloader: SDWebImageDownloader?
    private let state: Locked<(priority: DownloadPriority, cancelled: Bool)>

    init(url: URL?, operation: any SDWebImageDownloaderOperationProtocol, token: (any Sendable)?,
         downloader: SDWebImageDownloader?, priority: DownloadPriority = .normal) {
        self.url = url
        self.operation = operation
        self.token = token
        self.downloader = downloader
        state = Locked((priority, false))
    }

    /// This subscriber's priority (ours; Nuke's `ImageTask.priority`): the
    /// download runs at the highest of its subscribers', so raising one
    /// moves a queued transfer up and lowering the last high one moves it
    /// back down. From `.highPriority`/`.lowPriority` at first.
    public var priority: DownloadPriority {
        get { state.withLock { $0.priority } }
        set {
            let gone = state.withLock { s in
                s.priority = newValue
                return s.cancelled
            }
            if !gone { downloader?.subscriber(self, of: operation, changedTo: newValue) }
        }
    }

    /// The request as sent.
    public var request: URLRequest? { operation.request }
    /// The response, once its headers arrived.
    public var response: URLResponse? { operation.response }
    /// Timings and sizes, once the download finished.
    public var metrics: DownloadMetrics? { operation.metrics }

    /// This subscriber gets `cancelled` (once); the transfer stops when it was
    /// the last one.
    public func cancel() {
        let first = state.withLock { s in
            defer { s.cancelled = true }
            return !s.cancelled
        }
        guard first else { return }
        downloader?.subscriber(self, of: operation, changedTo: nil)
        if operation.cancel(token), let url { downloader?.forget(operation, url) }
    }
}
