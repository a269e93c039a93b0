import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDCoders
import SDDownloader

/// Downloads images: one operation per URL (requests for a URL that is
/// already loading join it), run on the C transfer loop, decoded as bytes
/// arrive. Thread-safe; callbacks run on the config's (or context's) queue,
/// never on the loop thread.
public final class SDWebImageDownloader: @unchecked Sendable {
    public static let shared = SDWebImageDownloader(config: .default)

    /// This downloader's own copy of the config it was made with.
    public let config: SDWebImageDownloaderConfig
    private let loader: DataLoader?
    private let httpCache: HTTPValidatorCache
    private let resumable: ResumableDataStore?
    private let lock = NSLock()
    private var operations: [URL: any SDWebImageDownloaderOperationProtocol] = [:]
    private var headers: [String: String]

    public init(config: SDWebImageDownloaderConfig? = .default) {
        let config = (config ?? .default).copy()
        self.config = config
        loader = try? DataLoader(maxConcurrentDownloads: config.maxConcurrentDownloads)
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
        let queue = context?.callbackQueue ?? SDCallbackQueue(dispatchQueue: config.callbackQueue, policy: .dispatch)
        func fail(_ e: SDWebImageError) -> SDWebImageDownloadToken? {
            if let completed { queue.async { completed(nil, nil, e, true) } }
            return nil
        }
        guard let url, !url.absoluteString.isEmpty else {
            return fail(SDWebImageError(.invalidURL, "the image URL is nil"))
        }
        let coder = Self.coderOptions(url: url, options: options, context: context, queue: queue)
        if let token = join(url, options, progress, completed, coder) { return token }

        // A new operation, made outside the lock (modifiers are user code).
        guard let loader else { return fail(SDWebImageError(.invalidDownloadOperation, "the transfer loop is not running")) }
        guard let request = makeRequest(url, options, context) else {
            return fail(SDWebImageError(.invalidDownloadOperation, "the request modifier returned nil"))
        }
        var env = SDWebImageDownloaderOperationEnvironment(
            loader: loader,
            minimumProgressInterval: config.minimumProgressInterval,
            username: config.urlCredential?.user ?? config.username,
            password: config.urlCredential?.password ?? config.password,
            acceptableStatusCodes: config.acceptableStatusCodes,
            acceptableContentTypes: config.acceptableContentTypes,
            responseModifier: context?[.downloadResponseModifier] as? any SDWebImageDownloaderResponseModifierProtocol
                ?? config.responseModifier,
            decryptor: context?[.downloadDecryptor] as? any SDWebImageDownloaderDecryptorProtocol ?? config.decryptor,
            callbackQueue: config.callbackQueue,
            httpCache: httpCache)
        env.resumable = resumable
        env.urlPolicy = config.urlPolicy
        env.maxResponseBytes = config.maxResponseBytes
        env.maxRedirects = config.maxRedirects
        env.totalTimeout = config.downloadTotalTimeout
        let type = config.operationClass ?? SDWebImageDownloaderOperation.self
        let op = type.init(request: request, options: options, context: context, environment: env)
        guard let opToken = op.addHandlers(forProgress: progress, completed: completed, decodeOptions: coder) else {
            return fail(SDWebImageError(.invalidDownloadOperation, "the operation refused the request"))
        }
        lock.lock()
        if let running = operations[url], !running.isFinished, !running.isCancelled {
            // Someone else started this URL meanwhile: join theirs. Ours never
            // started, so dropping it calls nobody.
            lock.unlock()
            return downloadImage(with: url, options: options, context: context, progress: progress, completed: completed)
        }
        op.completionBlock = { [weak self, weak op] in
            guard let self, let op else { return }
            self.forget(op, url)
        }
        operations[url] = op
        lock.unlock()
        op.start()
        return SDWebImageDownloadToken(url: url, operation: op, token: opToken, downloader: self)
    }

    @discardableResult
    public func downloadImage(with url: URL?, completed: SDWebImageDownloaderCompletedBlock?) -> SDWebImageDownloadToken? {
        downloadImage(with: url, options: [], context: nil, progress: nil, completed: completed)
    }

    @discardableResult
    public func downloadImage(with url: URL?, options: SDWebImageDownloaderOptions,
                              progress: SDWebImageDownloaderProgressBlock?,
                              completed: SDWebImageDownloaderCompletedBlock?) -> SDWebImageDownloadToken? {
        downloadImage(with: url, options: options, context: nil, progress: progress, completed: completed)
    }

    @discardableResult
    public func downloadImage(with url: URL?, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                              completed: SDWebImageDownloaderCompletedBlock?) -> SDWebImageDownloadToken? {
        downloadImage(with: url, options: options, context: context, progress: nil, completed: completed)
    }

    private func join(_ url: URL, _ options: SDWebImageDownloaderOptions, _ progress: SDWebImageDownloaderProgressBlock?,
                      _ completed: SDWebImageDownloaderCompletedBlock?, _ coder: SDImageCoderOptions) -> SDWebImageDownloadToken? {
        lock.lock()
        defer { lock.unlock() }
        guard let op = operations[url],
              let t = op.addHandlers(forProgress: progress, completed: completed, decodeOptions: coder) else { return nil }
        if options.contains(.highPriority) { (op as? SDWebImageDownloaderOperation)?.setPriority(.high) }
        return SDWebImageDownloadToken(url: url, operation: op, token: t, downloader: self)
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
        lock.unlock()
    }

    static func coderOptions(url: URL, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                             queue: SDCallbackQueue?) -> SDImageCoderOptions {
        .make(key: url.absoluteString, scaleDown: options.contains(.scaleDownLargeImages),
              avoidDecode: options.contains(.avoidDecodeImage), progressive: options.contains(.progressiveLoad),
              context: context, queue: queue)
    }
}

/// One subscriber's handle on a download.
public final class SDWebImageDownloadToken: @unchecked Sendable {
    public let url: URL?
    private let operation: any SDWebImageDownloaderOperationProtocol
    private let token: (any Sendable)?
    private weak var downloader: SDWebImageDownloader?
    private let lock = NSLock()
    private var cancelled = false

    init(url: URL?, operation: any SDWebImageDownloaderOperationProtocol, token: (any Sendable)?,
         downloader: SDWebImageDownloader?) {
        self.url = url
        self.operation = operation
        self.token = token
        self.downloader = downloader
    }

    public var request: URLRequest? { operation.request }
    public var response: URLResponse? { operation.response }
    public var metrics: DownloadMetrics? { operation.metrics }

    /// This subscriber gets `cancelled` (once); the transfer stops when it was
    /// the last one.
    public func cancel() {
        lock.lock()
        guard !cancelled else { lock.unlock(); return }
        cancelled = true
        lock.unlock()
        if operation.cancel(token), let url { downloader?.forget(operation, url) }
    }
}
