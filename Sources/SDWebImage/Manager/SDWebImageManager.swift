import Dispatch
import Foundation
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

/// One manager load: a cache query, then maybe a download. Cancel stops both.
public final class SDWebImageCombinedOperation: SDWebImageOperation, @unchecked Sendable {
    private let lock = NSLock()
    private var _cancelled = false
    private var _ended = false
    private var _over = false
    private var _whenOver: [@Sendable () -> Void] = []
    private var _cacheOperation: (any SDWebImageOperation)?
    private var _loaderOperation: (any SDWebImageOperation)?
    weak var manager: SDWebImageManager?

    public var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return _cancelled }
    public var cacheOperation: (any SDWebImageOperation)? { lock.lock(); defer { lock.unlock() }; return _cacheOperation }
    public var loaderOperation: (any SDWebImageOperation)? { lock.lock(); defer { lock.unlock() }; return _loaderOperation }

    // A part can be handed over after the load already ended (a cache query
    // that answered before its start call returned): it is not kept then.
    func setCacheOperation(_ op: (any SDWebImageOperation)?) {
        lock.lock()
        // a query that answered before its start call returned may arrive
        // after the download it led to began: it is over, not kept
        if !_ended && (op == nil || _loaderOperation == nil) { _cacheOperation = op }
        let c = _cancelled
        lock.unlock()
        if c { op?.cancel() }
    }

    func setLoaderOperation(_ op: (any SDWebImageOperation)?) {
        lock.lock()
        if !_ended {
            _loaderOperation = op
            if op != nil { _cacheOperation = nil }  // the query is over once the download runs
        }
        let c = _cancelled
        lock.unlock()
        if c { op?.cancel() }
    }

    /// The load is over: let go of the parts (their closures may hold the load).
    func ended() {
        lock.lock()
        _ended = true
        _cacheOperation = nil
        _loaderOperation = nil
        lock.unlock()
    }

    /// The load gave its final answer, whose completion has yet to run: no
    /// part is taken any more and the finished query goes, but the loader's
    /// operation stays readable inside the completion (users read the
    /// token's response and metrics there, as in SDWebImage); `ended()`
    /// lets it go after the completion returned.
    func answered() {
        lock.lock()
        _ended = true
        _cacheOperation = nil
        lock.unlock()
    }

    /// Ours (SDWebImage has no such hook): `body` runs once, on the
    /// callback queue, after the load's last completion call returned (and
    /// any earlier one still running on a concurrent queue), or at once if
    /// that already happened. With
    /// `.refreshCached` the completion may run twice, with the cached image
    /// and then with a changed one, or once when the server says the cached
    /// image is current: this tells which call was the last.
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        lock.lock()
        if _over { lock.unlock(); return body() }
        _whenOver.append(body)
        lock.unlock()
    }

    /// Someone waits for the end (the load then makes sure earlier
    /// completion calls on a concurrent queue have returned too).
    var isWatched: Bool { lock.lock(); defer { lock.unlock() }; return !_whenOver.isEmpty }

    /// The load gave its last answer: run the `whenFinished` bodies.
    func over() {
        lock.lock()
        if _over { lock.unlock(); return }
        _over = true
        let bodies = _whenOver
        _whenOver = []
        lock.unlock()
        for b in bodies { b() }
    }

    /// The completion runs once more with `cancelled` unless the load already finished.
    public func cancel() {
        lock.lock()
        guard !_cancelled else { lock.unlock(); return }
        _cancelled = true
        let (c, l) = (_cacheOperation, _loaderOperation)
        lock.unlock()
        c?.cancel()
        l?.cancel()
        manager?.finished(self)
    }
}

/// What an async load gives back.
public struct SDWebImageLoadResult: Sendable {
    public let image: SDImage?
    public let data: Data?
    public let cacheType: SDImageCacheType
    public let url: URL?
}

/// Cache, then network, then cache again: SDWebImage 5's manager.
public final class SDWebImageManager: @unchecked Sendable {
    public static let shared = SDWebImageManager(cache: SDImageCache.shared, loader: SDWebImageDownloader.shared)

    public let imageCache: any SDImageCacheProtocol
    public let imageLoader: any SDImageLoader
    private let lock = NSLock()
    private var _cacheKeyFilter: (any SDWebImageCacheKeyFilterProtocol)?
    private var _cacheSerializer: (any SDWebImageCacheSerializerProtocol)?
    private var _transformer: (any SDImageTransformer)?
    private var _optionsProcessor: (any SDWebImageOptionsProcessorProtocol)?
    private var _retryPolicy: SDWebImageRetryPolicy?
    private weak var _delegate: (any SDWebImageManagerDelegate)?
    private var failedURLs = Set<URL>()
    private var running: [ObjectIdentifier: SDWebImageCombinedOperation] = [:]
    private var queries: [String: SharedQuery] = [:]

    public init(cache: any SDImageCacheProtocol, loader: any SDImageLoader) {
        imageCache = cache
        imageLoader = loader
    }

    private func get<T>(_ v: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return v() }
    private func set(_ body: () -> Void) { lock.lock(); body(); lock.unlock() }

    public var cacheKeyFilter: (any SDWebImageCacheKeyFilterProtocol)? {
        get { get { _cacheKeyFilter } }
        set { set { _cacheKeyFilter = newValue } }
    }
    public var cacheSerializer: (any SDWebImageCacheSerializerProtocol)? {
        get { get { _cacheSerializer } }
        set { set { _cacheSerializer = newValue } }
    }
    /// Applied to every load without its own `.imageTransformer`.
    public var transformer: (any SDImageTransformer)? {
        get { get { _transformer } }
        set { set { _transformer = newValue } }
    }
    public var optionsProcessor: (any SDWebImageOptionsProcessorProtocol)? {
        get { get { _optionsProcessor } }
        set { set { _optionsProcessor = newValue } }
    }
    /// Retry failed downloads (ours; default nil: fail at once, as
    /// SDWebImage). The `.retryPolicy` context key overrides it per load.
    public var retryPolicy: SDWebImageRetryPolicy? {
        get { get { _retryPolicy } }
        set { set { _retryPolicy = newValue } }
    }
    public var delegate: (any SDWebImageManagerDelegate)? {
        get { get { _delegate } }
        set { set { _delegate = newValue } }
    }

    /// Loads in progress.
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !running.isEmpty
    }

    public func cancelAll() {
        let ops = get { Array(running.values) }
        for op in ops { op.cancel() }
    }

    public func removeFailedURL(_ url: URL) { set { failedURLs.remove(url) } }
    public func removeAllFailedURLs() { set { failedURLs.removeAll() } }
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

    /// The load's context resolved once, keys included (the key filter is user code).
    func request(for url: URL?, context: SDWebImageContext) -> SDImageLoadRequest {
        SDImageLoadRequest(url: url, context: context,
                           keyFilter: context[.cacheKeyFilter] as? any SDWebImageCacheKeyFilterProtocol ?? cacheKeyFilter)
    }

    // MARK: - Load

    @discardableResult
    public func loadImage(with url: URL?, options: SDWebImageOptions = [], context: SDWebImageContext? = nil,
                          progress: SDImageLoaderProgressBlock? = nil,
                          completed: @escaping SDInternalCompletionBlock) -> SDWebImageCombinedOperation? {
        let op = SDWebImageCombinedOperation()
        op.manager = self
        var options = options
        var context = context ?? [:]
        if let r = optionsProcessor?.processedResult(for: url, options: options, context: context) {
            options = r.options
            context = r.context ?? [:]
        }
        if context[.imageTransformer] == nil, let t = transformer { context[.imageTransformer] = t }
        let queue = context.callbackQueue ?? .defaultCallbacks
        let load = Load(manager: self, op: op, url: url, options: options, context: context, queue: queue,
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
            await withCheckedContinuation { c in
                var ctx = context ?? [:]
                if ctx[.callbackQueue] == nil { ctx[.callbackQueue] = DispatchQueue.global() }
                box.set(loadImage(with: url, options: options.subtracting(.progressiveLoad), context: ctx) {
                    image, data, error, type, finished, url in
                    guard finished, once.first() else { return }
                    if let error { c.resume(returning: .failure(error)) }
                    else { c.resume(returning: .success(SDWebImageLoadResult(image: image, data: data, cacheType: type, url: url))) }
                })
            }
        } onCancel: {
            box.cancel()
        }
        return try result.get()
    }

    /// Join the identical query in flight, or start one: concurrent loads of
    /// one key share one cache query (the downloader shares the download).
    func sharedQuery(_ id: String, _ done: @escaping SDImageCacheQueryCompletionBlock,
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

extension SDWebImageCombinedOperation: Cancellable {}

final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    func first() -> Bool { lock.lock(); defer { lock.unlock() }; if done { return false }; done = true; return true }
}

/// The state of one manager load, step by step (SDWebImage's call… methods).
private final class Load: @unchecked Sendable {
    let manager: SDWebImageManager
    let op: SDWebImageCombinedOperation
    let url: URL?
    let options: SDWebImageOptions
    let context: SDWebImageContext
    let queue: SDCallbackQueue
    let progress: SDImageLoaderProgressBlock?
    let completed: SDInternalCompletionBlock
    /// The context resolved once; the layers below get it with the context.
    let request: SDImageLoadRequest
    let key: String?
    let originalKey: String?
    let lock = NSLock()
    var ended = false

    init(manager: SDWebImageManager, op: SDWebImageCombinedOperation, url: URL?, options: SDWebImageOptions,
         context: SDWebImageContext, queue: SDCallbackQueue, progress: SDImageLoaderProgressBlock?,
         completed: @escaping SDInternalCompletionBlock) {
        self.manager = manager
        self.op = op
        self.url = url
        self.options = options
        request = manager.request(for: url, context: context)
        var context = context
        context[.loadRequest] = request
        self.context = context
        self.queue = queue
        self.progress = progress
        self.completed = completed
        key = request.keys?.storage
        originalKey = request.keys?.original
    }

    var cache: any SDImageCacheProtocol { context[.imageCache] as? any SDImageCacheProtocol ?? manager.imageCache }
    var originalCache: any SDImageCacheProtocol { context[.originalImageCache] as? any SDImageCacheProtocol ?? cache }
    var loader: any SDImageLoader { context[.imageLoader] as? any SDImageLoader ?? manager.imageLoader }
    var transformer: (any SDImageTransformer)? { request.transformer }
    /// A thumbnail or transformed image: cached under its own key.
    var derived: Bool { request.keys?.derived ?? false }

    /// A final answer: once; it ends the operation.
    func complete(_ image: SDImage?, _ data: Data?, _ error: (any Error)?, _ type: SDImageCacheType) {
        lock.lock()
        if ended { lock.unlock(); return }
        ended = true
        lock.unlock()
        let (c, u, op, earlier, q) = (completed, url, op, delivering, queue.queue)
        op.answered()
        manager.finished(op, keepingLoader: true)
        queue.async {
            c(image, data, error, type, true, u)
            op.ended()  // now the token may go (its closures hold this load)
            // an earlier call (the cached image of .refreshCached) may still
            // run on a concurrent queue: the end comes after it too
            if op.isWatched { earlier.notify(queue: q) { op.over() } } else { op.over() }
        }
    }

    /// A result that does not end the operation (previews, the cached image of `.refreshCached`).
    func deliver(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType, finished: Bool) {
        let (c, u, g) = (completed, url, delivering)
        g.enter()
        queue.async {
            c(image, data, nil, type, finished, u)
            g.leave()
        }
    }

    /// Completion calls queued and not yet returned: a load whose last word
    /// was an earlier call (a 304 for `.refreshCached`) is over after them,
    /// whatever the queue (a concurrent one may still be running them).
    let delivering = DispatchGroup()

    func cancelled() { complete(nil, nil, SDWebImageError(.cancelled, "the load was cancelled"), .none) }

    // MARK: steps

    func queryCache() {
        if options.contains(.fromLoaderOnly) {
            download(cached: nil, data: nil, type: .none)
            return
        }
        let queryType = request.queryCacheType
        let answer: SDImageCacheQueryCompletionBlock = { [self] image, data, cacheType in
            if op.isCancelled { return cancelled() }
            if image == nil, derived {
                queryOriginal()
            } else {
                download(cached: image, data: data, type: cacheType)
            }
        }
        let (cache, key, options, context) = (self.cache, self.key, self.options, self.context)
        if options.contains(.queryDiskDataSync) || options.contains(.queryMemoryDataSync) {
            op.setCacheOperation(cache.queryImage(forKey: key, options: options, context: context, cacheType: queryType,
                                                  completion: answer))
            return
        }
        // Identical loads (same cache, key, query and decode) share the query.
        let id = "\(ObjectIdentifier(cache).hashValue)|\(queryType.rawValue)|\(options.cacheOptions.rawValue)|"
            + "\(request.scaleFactor ?? 0)|\(request.scaleDownLimitBytes ?? -1)|\(key ?? "")"
        op.setCacheOperation(manager.sharedQuery(id, answer) { done in
            cache.queryImage(forKey: key, options: options, context: context, cacheType: queryType, completion: done)
        })
    }

    /// A thumbnail or transformed image missing: make it from the original bytes if the cache has them.
    func queryOriginal() {
        let originalType = request.originalQueryCacheType
        guard originalType != .none, let originalKey else { return download(cached: nil, data: nil, type: .none) }
        // Decode straight to the thumbnail size (the request says so); the
        // original entry is not touched.
        op.setCacheOperation(originalCache.queryImage(forKey: originalKey, options: options, context: context,
                                                      cacheType: originalType == .all ? .disk : originalType) {
            [self] image, _, cacheType in
            if op.isCancelled { return cancelled() }
            guard let image else { return download(cached: nil, data: nil, type: .none) }
            transformAndStore(image, nil, downloaded: nil, cacheType: cacheType, validators: nil)
        })
    }

    func download(cached: SDImage?, data: Data?, type cacheType: SDImageCacheType) {
        guard let url else { return complete(cached, data, nil, cacheType) }
        let refresh = cached != nil && options.contains(.refreshCached)
        let wanted = !options.contains(.fromCacheOnly) && (cached == nil || refresh)
            && (manager.delegate?.imageManager(manager, shouldDownloadImageFor: url) ?? true)
        let loadable = loader.canRequestImage(for: url)
        guard wanted && loadable else {
            // SDWebImage answers a URL no loader takes with no image and no
            // error; a caller fed untrusted lists needs to know why
            let why: (any Error)? = wanted && cached == nil
                ? SDWebImageError(.invalidURL, url.scheme == nil
                    ? "relative URL (no scheme): \(url.absoluteString)"
                    : "no loader for the URL scheme \"\(url.scheme!)\" (http, https and file are supported)")
                : nil
            return complete(cached, data, why, cached == nil ? .none : cacheType)
        }
        var ctx = context
        var stored: SDWebImageHTTPValidators?
        if refresh {
            if let k = originalKey, let raw = originalCache.extendedData(forKey: k) {
                stored = try? JSONDecoder().decode(SDWebImageHTTPValidators.self, from: raw)
            }
            if let fresh = stored?.freshUntil, fresh > Date() {
                return complete(cached, data, nil, cacheType)  // max-age not over: no request, as a URL cache
            }
            deliver(cached, data, cacheType, finished: true)
            if let v = stored, v.canRevalidate { ctx[.httpValidators] = v }
        }
        request(url, ctx, refresh: refresh, stored: stored, retry: 0)
    }

    /// One attempt at the download (`retry` 0 is the first).
    func request(_ url: URL, _ context: SDWebImageContext, refresh: Bool, stored: SDWebImageHTTPValidators?,
                 retry: Int) {
        op.setCacheOperation(nil)  // the query is over while the download runs (SDWebImage clears it)
        let loader = self.loader
        let token = loader.requestImageWithResponse(with: url, options: options, context: context, progress: progress) {
            [self] image, data, error, finished, response in
            if op.isCancelled { return cancelled() }
            if let error, (error as? SDWebImageError)?.code != .cancelled,
               !(refresh && (error as? SDWebImageError)?.code == .cacheNotModified),
               let pause = retryPolicy?.pause(after: error, retry: retry + 1) {
                return wait(pause) { self.request(url, context, refresh: refresh, stored: stored, retry: retry + 1) }
            }
            if let error {
                if refresh, (error as? SDWebImageError)?.code == .cacheNotModified {
                    // still current: keep the entry and make it new again,
                    // with what the 304 said (a new max-age, say)
                    if let k = originalKey {
                        originalCache.touchDiskEntry(forKey: k)
                        let now = (stored ?? SDWebImageHTTPValidators(etag: nil, lastModified: nil))
                            .updated(by: (error as? SDWebImageError)?.response)
                        if now != stored, let raw = try? JSONEncoder().encode(now) {
                            try? originalCache.storeExtendedData(raw, forKey: k)
                        }
                    }
                    lock.lock(); ended = true; lock.unlock()
                    manager.finished(op)
                    // no second completion: the cached image stands
                    delivering.notify(queue: queue.queue) { [op] in op.over() }
                    return
                }
                if (error as? SDWebImageError)?.code != .cancelled { manager.block(url, error: error, loader: loader) }
                return complete(nil, nil, error, .none)
            }
            guard finished else { return deliver(image, data, .none, finished: false) }
            if options.contains(.retryFailed) { manager.removeFailedURL(url) }
            let validators = (response as? HTTPURLResponse).map { SDWebImageHTTPValidators(response: $0) }
            guard let image else {
                // bytes only (.avoidDecodeImage): store them as they are
                store(nil, data, key: originalKey, type: request.storeCacheType, validators: validators) {
                    self.complete(nil, data, nil, .none)
                }
                return
            }
            transformAndStore(image, data, downloaded: data, cacheType: .none, validators: validators)
        }
        op.setLoaderOperation(token)
    }

    var retryPolicy: SDWebImageRetryPolicy? {
        context[.retryPolicy] as? SDWebImageRetryPolicy ?? manager.retryPolicy
    }

    /// Pause before another attempt; cancelling the load ends the pause.
    func wait(_ pause: TimeInterval, then again: @escaping @Sendable () -> Void) {
        let item = DispatchWorkItem { [self] in
            if op.isCancelled { return cancelled() }
            again()
        }
        op.setLoaderOperation(RetryPause(item) { [weak self] in self?.cancelled() })
        DispatchQueue.global().asyncAfter(deadline: .now() + pause, execute: item)
    }

    /// Transform (if asked), store original and result, complete.
    func transformAndStore(_ image: SDImage, _ data: Data?, downloaded: Data?, cacheType: SDImageCacheType,
                           validators: SDWebImageHTTPValidators?) {
        let storeType = request.storeCacheType
        var result = image
        if let t = transformer {
            guard let transformed = t.transformedImage(with: image, forKey: key ?? "") else {
                return complete(nil, nil, SDWebImageError(.badImageData, "the transformer returned nil"), .none)
            }
            result = transformed
        }
        let serializer = context[.cacheSerializer] as? any SDWebImageCacheSerializerProtocol ?? manager.cacheSerializer
        let group = DispatchGroup()
        if derived {
            // keep the original bytes (not the thumbnail) for later transforms
            if let downloaded, let originalKey {
                let originalType = request.originalStoreCacheType
                // the decoded original goes to memory too when asked (as in
                // SDWebImage); a thumbnail decode has no full-size original
                let full = request.thumbnail == nil
                let type = full ? originalType : originalType == .all ? .disk : originalType
                if type != .none {
                    group.enter()
                    store(full ? image : nil, downloaded, key: originalKey, type: type,
                          validators: validators, cache: originalCache) { group.leave() }
                }
            }
            let bytes = serializer?.cacheData(with: result, originalData: nil, imageURL: url)
            group.enter()
            store(result, bytes, key: key, type: storeType, validators: nil) { group.leave() }
            finish(group, result, nil, cacheType)
        } else {
            let bytes = serializer.map { $0.cacheData(with: result, originalData: data, imageURL: url) } ?? data
            group.enter()
            store(result, bytes, key: key, type: storeType, validators: validators) { group.leave() }
            finish(group, result, data, cacheType)
        }
    }

    private func finish(_ group: DispatchGroup, _ image: SDImage, _ data: Data?, _ type: SDImageCacheType) {
        if options.contains(.waitStoreCache) {
            group.notify(queue: .global()) { self.complete(image, data, nil, type) }
        } else {
            complete(image, data, nil, type)
        }
    }

    func store(_ image: SDImage?, _ data: Data?, key: String?, type: SDImageCacheType,
               validators: SDWebImageHTTPValidators?, cache: (any SDImageCacheProtocol)? = nil,
               done: @escaping @Sendable () -> Void) {
        let target = cache ?? self.cache
        guard type != .none, image != nil || data != nil else { return done() }
        let extended = validators.flatMap { v in !v.isEmpty && data != nil ? try? JSONEncoder().encode(v) : nil }
        target.store(image, imageData: data, forKey: key, cacheType: type, extendedData: extended) { _ in done() }
    }
}

/// The pause between two download attempts, as the load's loader operation.
private final class RetryPause: SDWebImageOperation, @unchecked Sendable {
    private let item: DispatchWorkItem
    private let onCancel: @Sendable () -> Void

    init(_ item: DispatchWorkItem, onCancel: @escaping @Sendable () -> Void) {
        self.item = item
        self.onCancel = onCancel
    }

    func cancel() {
        item.cancel()
        onCancel()
    }
}

/// One cache query answered to every identical load that joined it; each
/// waiter may leave (its answer is then a miss, at once), and the query
/// itself is cancelled when the last one leaves.
final class SharedQuery: @unchecked Sendable {
    let id: String
    private weak var manager: SDWebImageManager?
    private let lock = NSLock()
    private var waiters: [Int: SDImageCacheQueryCompletionBlock] = [:]
    private var next = 0
    private var answered = false
    private var underlying: (any SDWebImageOperation)?

    init(id: String, manager: SDWebImageManager) {
        self.id = id
        self.manager = manager
    }

    /// nil once answered (the caller starts its own).
    func add(_ done: @escaping SDImageCacheQueryCompletionBlock) -> Waiter? {
        lock.lock()
        defer { lock.unlock() }
        guard !answered else { return nil }
        next += 1
        waiters[next] = done
        return Waiter(query: self, id: next)
    }

    func setUnderlying(_ op: (any SDWebImageOperation)?) {
        lock.lock()
        let orphan = !answered && waiters.isEmpty
        underlying = op
        lock.unlock()
        if orphan { op?.cancel() }
    }

    func answer(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType) {
        lock.lock()
        answered = true
        let ws = waiters
        waiters = [:]
        lock.unlock()
        manager?.forget(self)
        for (_, w) in ws.sorted(by: { $0.key < $1.key }) { w(image, data, type) }
    }

    func leave(_ waiter: Int) {
        lock.lock()
        let w = waiters.removeValue(forKey: waiter)
        let last = w != nil && waiters.isEmpty && !answered
        if last { answered = true }
        let u = underlying
        lock.unlock()
        w?(nil, nil, .none)
        if last {
            manager?.forget(self)
            u?.cancel()
        }
    }

    final class Waiter: SDWebImageOperation, @unchecked Sendable {
        let query: SharedQuery
        let id: Int
        init(query: SharedQuery, id: Int) {
            self.query = query
            self.id = id
        }
        func cancel() { query.leave(id) }
    }
}
