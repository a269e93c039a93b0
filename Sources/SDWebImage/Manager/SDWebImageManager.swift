import Dispatch
import Foundation
import Logging
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `(image, data, error, cacheType, finished, imageURL)`.
public typealias SDInternalCompletionBlock = @Sendable (_ image: SDImage?, _ data: Data?, _ error: (any Error)?,
                                                       _ cacheType: SDImageCacheType, _ finished: Bool,
                                                       _ imageURL: URL?) -> Void

/// Policy hooks; every method has a default.
public protocol SDWebImageManagerDelegate: AnyObject, Sendable {
    /// False: answer from the cache only (a miss completes with no image and no error).
    func imageManager(_ manager: SDWebImageManager, shouldDownloadImageFor url: URL?) -> Bool
    /// Override the loader's blocklist rule for this failure.
    func imageManager(_ manager: SDWebImageManager, shouldBlockFailedURL url: URL, error: any Error) -> Bool?
}

extension SDWebImageManagerDelegate {
    public func imageManager(_ manager: SDWebImageManager, shouldDownloadImageFor url: URL?) -> Bool { true }
    public func imageManager(_ manager: SDWebImageManager, shouldBlockFailedURL url: URL, error: any Error) -> Bool? { nil }
}

/// What an async load gives back.
public struct SDWebImageLoadResult: Sendable {
    /// The image (nil with `.avoidDecodeImage`: bytes only).
    public let image: SDImage?
    /// The encoded bytes, when the load had them (a download, a disk hit, `.queryMemoryData`).
    public let data: Data?
    /// Where it came from: `.memory`, `.disk`, or `.none` for a download.
    public let cacheType: SDImageCacheType
    /// The URL loaded.
    public let url: URL?
}

/// Cache, then network, then cache again: SDWebImage 5's manager.
// @unchecked: settings, failed URLs, running loads and shared queries are under `lock`; `delegate` is weak; the rest is `let`.
public final class SDWebImageManager: @unchecked Sendable {
    /// The manager over ``SDImageCache/shared`` and ``SDWebImageDownloader/shared``.
    public static let shared = SDWebImageManager(cache: SDImageCache.shared, loader: SDWebImageDownloader.shared)

    /// The cache every load asks first and stores into (unless the context names another).
    public let imageCache: any SDImageCacheProtocol
    /// What fetches on a cache miss (unless the context names another).
    public let imageLoader: any SDImageLoader
    private let lock = NSLock()
    /// The settings, under `lock` with the tables below.
    private struct Settings {
        var cacheKeyFilter: (any SDWebImageCacheKeyFilterProtocol)?
        var cacheSerializer: (any SDWebImageCacheSerializerProtocol)?
        var transformer: (any SDImageTransformer)?
        var optionsProcessor: (any SDWebImageOptionsProcessorProtocol)?
        var retryPolicy: SDWebImageRetryPolicy?
        weak var delegate: (any SDWebImageManagerDelegate)?
    }
    private var settings = Settings()
    private var failedURLs = Set<URL>()
    private var running: [ObjectIdentifier: SDWebImageCombinedOperation] = [:]
    private var queries: [SharedQuery.Key: SharedQuery] = [:]

    let telemetry: ManagerTelemetry

    /// A manager over `cache` and `loader` that logs nothing.
    public convenience init(cache: any SDImageCacheProtocol, loader: any SDImageLoader) {
        self.init(cache: cache, loader: loader, logger: .sdNoOp)
    }

    /// A manager over `cache` and `loader`. `logger`: where its lines go (a
    /// load's end at `.trace`, a failure at `.debug`; the application's, as
    /// swift-log advises for libraries); `metricsDimensions`: added to every
    /// metric it records.
    public init(cache: any SDImageCacheProtocol, loader: any SDImageLoader, logger: Logger,
                metricsDimensions: [(String, String)] = []) {
        imageCache = cache
        imageLoader = loader
        telemetry = ManagerTelemetry(SDTelemetry(logger: logger, metricsDimensions: metricsDimensions))
    }

    /// Where this manager's lines go (given at init).
    public var logger: Logger { telemetry.log }

    private func get<T>(_ v: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return v() }
    private func set(_ body: () -> Void) { lock.lock(); body(); lock.unlock() }
    private subscript<T>(_ key: WritableKeyPath<Settings, T>) -> T {
        get { lock.lock(); defer { lock.unlock() }; return settings[keyPath: key] }
        set { lock.lock(); settings[keyPath: key] = newValue; lock.unlock() }
    }

    /// Makes the cache key of a URL (default: its absolute string); the `.cacheKeyFilter` context key overrides it.
    public var cacheKeyFilter: (any SDWebImageCacheKeyFilterProtocol)? {
        get { self[\.cacheKeyFilter] }
        set { self[\.cacheKeyFilter] = newValue }
    }
    /// Turns a downloaded image into the bytes stored on disk (default: the downloaded bytes).
    public var cacheSerializer: (any SDWebImageCacheSerializerProtocol)? {
        get { self[\.cacheSerializer] }
        set { self[\.cacheSerializer] = newValue }
    }
    /// Applied to every load without its own `.imageTransformer`.
    public var transformer: (any SDImageTransformer)? {
        get { self[\.transformer] }
        set { self[\.transformer] = newValue }
    }
    /// Rewrites every load's options and context before it starts.
    public var optionsProcessor: (any SDWebImageOptionsProcessorProtocol)? {
        get { self[\.optionsProcessor] }
        set { self[\.optionsProcessor] = newValue }
    }
    /// Retry failed downloads (ours; default nil: fail at once, as
    /// SDWebImage). The `.retryPolicy` context key overrides it per load.
    public var retryPolicy: SDWebImageRetryPolicy? {
        get { self[\.retryPolicy] }
        set { self[\.retryPolicy] = newValue }
    }
    /// Asked whether to download a URL and whether a failure blocks it.
    public var delegate: (any SDWebImageManagerDelegate)? {
        get { self[\.delegate] }
        set { self[\.delegate] = newValue }
    }

    /// Loads in progress.
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !running.isEmpty
    }

    /// Cancel every load: each completes once, with `.cancelled`.
    public func cancelAll() {
        let ops = get { Array(running.values) }
        for op in ops { op.cancel() }
    }

    /// Let `url` be tried again (bad data blocks a URL until then).
    public func removeFailedURL(_ url: URL) { set { failedURLs.remove(url) } }
    /// Let every blocked URL be tried again.
    public func removeAllFailedURLs() { set { failedURLs.removeAll() } }
    /// Whether `url` is blocked because its data was bad.
    public func isFailedURL(_ url: URL) -> Bool { get { failedURLs.contains(url) } }

    func finished(_ op: SDWebImageCombinedOperation, keepingLoader: Bool = false) {
        set { running.removeValue(forKey: ObjectIdentifier(op)) }
        if !keepingLoader { op.ended() }
    }

    // MARK: - Keys

    /// The cache key: the filter's (else the URL string), then the thumbnail
    /// and transformer parts.
    public func cacheKey(for url: URL?, context: SDWebImageContext? = nil) -> String? {
        request(for: url, context: context ?? [:]).keys?.storage
    }

    /// The key of the original image (the key filter's, else the URL string:
    /// no thumbnail or transformer part) of the manager load that passed
    /// `context` to its loader; nil when the call did not come from a manager.
    /// A loader that shares work through a cache (`SDRedisFleetLoader`)
    /// names the entry by it.
    public static func originalCacheKey(inLoaderContext context: SDWebImageContext?) -> String? {
        (context?[.loadRequest] as? SDImageLoadRequest)?.keys?.original
    }

    /// The load's context resolved once, keys included (the key filter is user code).
    func request(for url: URL?, context: SDWebImageContext) -> SDImageLoadRequest {
        SDImageLoadRequest(url: url, context: context, keyFilter: cacheKeyFilter)
    }

    // MARK: - Load

    /// Load an image: memory cache, disk cache, then the loader, storing what it fetched.
    ///
    /// `completed` runs on the `.callbackQueue` of the context (default: one serial
    /// queue of the library, not the main queue, which most Linux programs never drain), once with
    /// `finished == true` (image or error), after any previews (`.progressiveLoad`) or
    /// the cached image of `.refreshCached`. `progress` runs on a background
    /// queue of the load's own, in order (as in SDWebImage, not on the callback
    /// queue). Returns the operation to cancel (nil when the load ended at once).
    @discardableResult
    public func loadImage(with url: URL?, options: SDWebImageOptions = [], context: SDWebImageContext? = nil,
                          progress: SDImageLoaderProgressBlock? = nil,
                          completed: @escaping SDInternalCompletionBlock) -> SDWebImageCombinedOperation? {
        let op = SDWebImageCombinedOperation(manager: self)
        var options = options
        var context = context ?? [:]
        if let r = optionsProcessor?.processedResult(for: url, options: options, context: context) {
            options = r.options
            context = r.context ?? [:]
        }
        if context[.imageTransformer] == nil, let t = transformer { context[.imageTransformer] = t }
        let queue = context.callbackQueue ?? .defaultCallbacks
        let load = ManagerLoad(manager: self, op: op, url: url, options: options, context: context, queue: queue,
                        progress: progress, completed: completed)
        guard let url, !url.absoluteString.isEmpty else {
            load.complete(nil, nil, SDWebImageError(.invalidURL, "the image URL is nil or empty"), .none)
            return op
        }
        if !options.contains(.retryFailed), isFailedURL(url) {
            load.complete(nil, nil, SDWebImageError(.blackListed, "the URL failed before (use .retryFailed)"), .none)
            return op
        }
        set { running[ObjectIdentifier(op)] = op }
        load.queryCache()
        return op
    }

    /// Async: the first final result (with `.refreshCached`, the cached one).
    public func loadImage(with url: URL?, options: SDWebImageOptions = [],
                          context: SDWebImageContext? = nil) async throws -> SDWebImageLoadResult {
        let box = CancelBox<SDWebImageCombinedOperation>()
        let once = Once()
        let result: Result<SDWebImageLoadResult, any Error> = await withTaskCancellationHandler {
            await awaitCallback { c in
                var ctx = context ?? [:]
                if ctx[.callbackQueue] == nil { ctx[.callbackQueue] = DispatchQueue.global() }
                box.set(loadImage(with: url, options: options.subtracting(.progressiveLoad), context: ctx) {
                    image, data, error, type, finished, url in
                    guard finished, once.first() else { return }
                    if let error { c(.failure(error)) }
                    else { c(.success(SDWebImageLoadResult(image: image, data: data, cacheType: type, url: url))) }
                })
            }
        } onCancel: {
            box.cancel()
        }
        return try result.get()
    }

    /// Join the identical query in flight, or start one: concurrent loads of
    /// one key share one cache query (the downloader shares the download).
    func sharedQuery(_ id: SharedQuery.Key, _ done: @escaping SDImageCacheQueryCompletionBlock,
                     start: (@escaping SDImageCacheQueryCompletionBlock) -> (any SDWebImageOperation)?) -> (any SDWebImageOperation)? {
        lock.lock()
        if let q = queries[id], let w = q.add(done) {
            lock.unlock()
            return w
        }
        let q = SharedQuery(id: id, manager: self)
        queries[id] = q
        let w = q.add(done)
        lock.unlock()
        q.setUnderlying(start { image, data, type in q.answer(image, data, type) })
        return w
    }

    func forget(_ q: SharedQuery) {
        lock.lock()
        if queries[q.id] === q { queries.removeValue(forKey: q.id) }
        lock.unlock()
    }

    func block(_ url: URL, error: any Error, loader: any SDImageLoader) {
        let decision = delegate?.imageManager(self, shouldBlockFailedURL: url, error: error)
            ?? loader.shouldBlockFailedURL(url, error: error)
        if decision { set { _ = failedURLs.insert(url) } }
    }
}
