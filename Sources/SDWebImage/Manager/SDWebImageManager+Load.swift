import Dispatch
import Foundation
import SDDownloader
import SDSync
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The state of one manager load, step by step (SDWebImage's call… methods).
final class ManagerLoad: Sendable {
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
    /// The load gave its last answer (or a 304 kept the cached one).
    let ended = Locked(false)
    /// The context the cache and the loader get: the load's, with its own
    /// serial queue over the global pool for their callbacks. The steps
    /// between them (transformer, stores) run there, so one load's
    /// transformer never holds up another's callbacks, as it did on the one
    /// shared callback queue; the caller's queue sees only the answers.
    let workContext: SDWebImageContext

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
        var work = context
        work[.callbackQueue] = SDCallbackQueue(
            dispatchQueue: DispatchQueue(label: "SDWebImageManager.load", target: .global(qos: .userInitiated)),
            policy: .dispatch)
        workContext = work
        self.queue = queue
        self.progress = progress
        self.completed = completed
        key = request.keys?.storage
        originalKey = request.keys?.original
    }

    var cache: any SDImageCacheProtocol { request.imageCache ?? manager.imageCache }
    var originalCache: any SDImageCacheProtocol { request.originalImageCache ?? cache }
    var loader: any SDImageLoader { request.imageLoader ?? manager.imageLoader }
    var transformer: (any SDImageTransformer)? { request.transformer }
    /// A thumbnail or transformed image: cached under its own key.
    var derived: Bool { request.keys?.derived ?? false }

    /// A final answer: once; it ends the operation.
    func complete(_ image: SDImage?, _ data: Data?, _ error: (any Error)?, _ type: SDImageCacheType) {
        guard ended.withLock({ e in defer { e = true }; return !e }) else { return }
        manager.telemetry.loadEnded(key, error, type)
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
            manager.telemetry.cacheQueried(hit: image != nil, cacheType)
            if image == nil, derived {
                queryOriginal()
            } else {
                download(cached: image, data: data, type: cacheType)
            }
        }
        let (cache, key, options, context) = (self.cache, self.key, self.options, self.workContext)
        if options.contains(.queryDiskDataSync) || options.contains(.queryMemoryDataSync) {
            op.setCacheOperation(cache.queryImage(forKey: key, options: options, context: context, cacheType: queryType,
                                                  completion: answer))
            return
        }
        // Identical loads (same cache, key, query and decode) share the query.
        let id = SharedQuery.Key(cache: cache, cacheType: queryType, options: options, request: request, key: key)
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
        op.setCacheOperation(originalCache.queryImage(forKey: originalKey, options: options, context: workContext,
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
        var ctx = workContext
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
        } else if let resume = partialOriginal() {
            ctx[.resumeData] = resume  // only the rest of the file is fetched
        }
        request(url, ctx, refresh: refresh, stored: stored, retry: 0)
    }

    /// The original entry holds a thumbnail's early-ended transfer (the
    /// file's first bytes, SDWebImageHTTPValidators.partial) that this load
    /// could not use: those bytes and the validator that asks for the rest
    /// by `Range` + `If-Range` (a changed file comes whole).
    func partialOriginal() -> ResumableData? {
        guard !options.contains(.fromLoaderOnly), request.originalQueryCacheType != .none,
              let k = originalKey, let raw = originalCache.extendedData(forKey: k),
              let v = try? JSONDecoder().decode(SDWebImageHTTPValidators.self, from: raw), let p = v.partial,
              let validator = v.etag.flatMap({ $0.hasPrefix("W/") ? nil : $0 }) ?? v.lastModified,
              let bytes = Self.storedBytes(originalCache, k), bytes.count == p.length else { return nil }
        return ResumableData(data: bytes, validator: validator)
    }

    /// An entry's bytes whatever they are complete for, from an
    /// `SDImageCache` or the first of a caches manager's that has them (the
    /// protocol answers only for whole files).
    static func storedBytes(_ cache: any SDImageCacheProtocol, _ key: String) -> Data? {
        if let c = cache as? SDImageCache { return c.storedData(forKey: key) }
        if let m = cache as? SDImageCachesManager { return m.caches.lazy.compactMap { storedBytes($0, key) }.first }
        return nil
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
                    ended.set(true)
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
        request.retryPolicy ?? manager.retryPolicy
    }

    /// Pause before another attempt; cancelling the load ends the pause.
    func wait(_ pause: TimeInterval, then again: @escaping @Sendable () -> Void) {
        let waiting = RetryPause { [weak self] in self?.cancelled() }
        op.setLoaderOperation(waiting)
        DispatchQueue.global().asyncAfter(deadline: .now() + pause) { [self] in
            guard waiting.end() else { return }  // cancelled while it waited: answered then
            if op.isCancelled { return cancelled() }
            again()
        }
    }

    /// Transform (if asked), store original and result, complete.
    func transformAndStore(_ image: SDImage, _ data: Data?, downloaded: Data?, cacheType: SDImageCacheType,
                           validators: SDWebImageHTTPValidators?) {
        let storeType = request.storeCacheType
        var result = image
        if let t = transformer {
            guard let transformed = Self.transform(image, t, key ?? "", animated: options.contains(.transformAnimatedImage)) else {
                return complete(nil, nil, SDWebImageError(.badImageData, "the transformer returned nil"), .none)
            }
            result = transformed
        }
        let serializer = request.cacheSerializer ?? manager.cacheSerializer
        let group = DispatchGroup()
        if derived {
            // keep the original bytes (not the thumbnail) for later transforms
            if let downloaded, let originalKey {
                let originalType = request.originalStoreCacheType
                // the decoded original goes to memory too when asked (as in
                // SDWebImage); a thumbnail decode has no full-size original
                let full = request.thumbnail == nil && request.render == nil && request.transformPlan == nil
                let type = full ? originalType : originalType == .all ? .disk : originalType
                if type != .none {
                    group.enter()
                    store(full ? image : nil, downloaded, key: originalKey, type: type,
                          validators: validators, cache: originalCache) { group.leave() }
                }
            }
            var bytes = serializer?.cacheData(with: result, originalData: nil, imageURL: url)
            if serializer == nil, request.encodeOptions != nil || request.coder != nil {
                bytes = SDImageCache.encodedData(for: result, options: request.encodeOptions,
                                                 coder: request.coder ?? SDImageCodersManager.shared)
            }
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

    /// An animation is transformed frame by frame with `.transformAnimatedImage`;
    /// otherwise its first frame is, and the result is a still image.
    static func transform(_ image: SDImage, _ t: any SDImageTransformer, _ key: String, animated: Bool) -> SDImage? {
        guard image.sd_isAnimated else { return t.transformedImage(with: image, forKey: key) }
        guard animated, let frames = SDImage.frames(from: image) else {
            let first = SDImage(bitmap: image.bitmap, format: image.format, orientation: image.orientation,
                                scale: image.scale, sourcePixelWidth: image.sourcePixelWidth,
                                sourcePixelHeight: image.sourcePixelHeight)
            return t.transformedImage(with: first, forKey: key)
        }
        var out: [SDImageFrame] = []
        for f in frames {
            guard let done = t.transformedImage(with: f.image, forKey: key) else { return nil }
            out.append(SDImageFrame(image: done, duration: f.duration))
        }
        return SDImage.animatedImage(with: out, loopCount: UInt(image.sd_imageLoopCount))
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
final class RetryPause: SDWebImageOperation, Sendable {
    private let cancelled = Locked(false)
    private let onCancel: @Sendable () -> Void

    init(onCancel: @escaping @Sendable () -> Void) { self.onCancel = onCancel }

    /// The pause is over: false if it was cancelled first (no next attempt then).
    func end() -> Bool { !cancelled.current }

    /// Before the pause ends, the next attempt will not be made; either way the load answers as cancelled.
    func cancel() {
        cancelled.set(true)
        onCancel()
    }
}
