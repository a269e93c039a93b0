import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import SDWebImage
import SDSync

/// One origin request per image across a fleet (ours; SDWebImage has none):
/// a loader in front of another (the downloader) that, before it fetches,
/// takes a short lease on the image in Redis. The process holding the lease
/// fetches and writes the bytes to the Redis tier; every other process that
/// wants the image meanwhile waits for them and decodes them from Redis.
///
///     let redis = try SDImageRedisCache(url: "redis://cache.internal:6379/0")
///     let caches = redis.tiered(behind: SDImageCache.shared)
///     let loader = SDRedisFleetLoader(loader: SDWebImageDownloader.shared, cache: redis)
///     let manager = SDWebImageManager(cache: caches, loader: loader)
///
/// - Lease: `SET <lease key> <token> NX PX leaseTTL`, renewed by its owner
///   every third of `leaseTTL` while the fetch runs and released only by its
///   owner (token-checked, one Lua script each). An owner that dies stops
///   renewing; its lease expires and the next waiter to look takes it over.
/// - Waiting: a waiter looks again after 5 ms, doubling to 100 ms, for at
///   most `maxWait`; then it fetches itself (polling, not pub/sub: a waiter
///   holds no connection between looks).
/// - An owner whose fetch failed, or whose bytes could not be stored (too
///   large, Redis full), leaves a short "fetch yourselves" mark instead of
///   the lease: the waiters fetch at once, in parallel, as without the lock.
/// - An owner that got 404 or 410 (the image is not there, whoever asks)
///   leaves a mark with the status for `goneTTL`: meanwhile every process
///   fails that URL at once with the same error (`invalidDownloadStatusCode`,
///   its `statusCode`), and the origin is not asked again. Other statuses
///   can depend on who asks (401, 403) or pass (429, 5xx): fetch yourselves.
/// - Redis down, slow or answering garbage: every request goes straight to
///   the inner loader (the outage costs coordination, never a load).
/// - Not coordinated: revalidations (`.refreshCached` sends validators; they
///   must reach the origin), `.fromLoaderOnly`, and calls that did not come
///   from a manager (no cache key).
public final class SDRedisFleetLoader: SDImageLoaderProvidingResponse, Sendable {
    /// How long leases live and waiters wait.
    public struct Options: Sendable {
        /// A lease's lifetime without renewal: how long the fleet waits for
        /// an owner that died before one waiter takes over (default 5 s).
        public var leaseTTL: TimeInterval = 5
        /// The longest a waiter waits for the owner's bytes before it
        /// fetches itself (default 15 s, the downloader's request timeout).
        public var maxWait: TimeInterval = 15
        /// How long a "fetch yourselves" mark stays after a failed fetch (default 5 s).
        public var failureMarkTTL: TimeInterval = 5
        /// How long a 404 or 410 the owner got is remembered across the
        /// fleet (default 30 s; 0: not remembered, a "fetch yourselves" mark
        /// as after any failure).
        public var goneTTL: TimeInterval = 30
        /// Where the loader's lines go (a lease held too long, fetching
        /// without it): the application's `Logger`. Default: nowhere.
        public var logger: Logger = .sdNoOp
        /// The defaults.
        public init() {}
    }

    /// What the loader did, since it was made.
    public struct Statistics: Sendable, Equatable {
        /// Fetches this process made holding the lease (first or after a takeover).
        public var fetched = 0
        /// Images another process fetched, read from Redis after waiting.
        public var shared = 0
        /// Leases taken over from an owner that let go without the bytes (died, cancelled).
        public var tookOver = 0
        /// Fetches without coordination: Redis unavailable, a failure mark, a wait that ran out.
        public var uncoordinated = 0
        /// Waits that ran out (`maxWait`) and fetched themselves.
        public var waitsTimedOut = 0
        /// Loads failed at once on another process's 404 or 410 (`goneTTL`).
        public var gone = 0
    }

    /// The loader that fetches (the downloader).
    public let loader: any SDImageLoader
    /// The Redis tier the bytes go through.
    public let cache: SDImageRedisCache
    /// The settings it was made with.
    public let options: Options
    private let queue = DispatchQueue(label: "SDWebImage.redis.fleet", attributes: .concurrent)
    private let stats = Locked(Statistics())
    private var log: Logger { options.logger }

    /// A loader that coordinates `loader`'s fetches through `cache`'s Redis.
    public init(loader: any SDImageLoader = SDWebImageDownloader.shared, cache: SDImageRedisCache,
                options: Options = Options()) {
        self.loader = loader
        self.cache = cache
        self.options = options
    }

    /// What the loader did so far.
    public var statistics: Statistics { stats.current }

    private func count(_ change: (inout Statistics) -> Void) { stats.withLock(change) }

    public func canRequestImage(for url: URL?) -> Bool { loader.canRequestImage(for: url) }

    public func shouldBlockFailedURL(_ url: URL, error: any Error) -> Bool {
        loader.shouldBlockFailedURL(url, error: error)
    }

    public func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                             progress: SDImageLoaderProgressBlock?,
                             completed: SDImageLoaderCompletedBlock?) -> (any SDWebImageOperation)? {
        requestImage(with: url, options: options, context: context, progress: progress) { i, d, e, f, _ in
            completed?(i, d, e, f)
        }
    }

    public func requestImage(with url: URL?, options: SDWebImageOptions, context: SDWebImageContext?,
                             progress: SDImageLoaderProgressBlock?,
                             respondingTo completed: @escaping SDImageLoaderResponseCompletedBlock) -> (any SDWebImageOperation)? {
        guard let url, let key = SDWebImageManager.originalCacheKey(inLoaderContext: context),
              context?[.httpValidators] == nil, !options.contains(.fromLoaderOnly) else {
            return fetch(url, options, context, progress, completed)
        }
        let load = FleetLoad(url: url, key: key, options: options, context: context, progress: progress,
                             completed: completed, deadline: DispatchTime.now() + self.options.maxWait)
        queue.async { self.step(load, delay: 0.005, waited: false) }
        return load
    }

    // MARK: - steps

    /// The inner loader, with its response.
    private func fetch(_ url: URL?, _ options: SDWebImageOptions, _ context: SDWebImageContext?,
                       _ progress: SDImageLoaderProgressBlock?,
                       _ completed: @escaping SDImageLoaderResponseCompletedBlock) -> (any SDWebImageOperation)? {
        if let l = loader as? any SDImageLoaderProvidingResponse {
            return l.requestImage(with: url, options: options, context: context, progress: progress, respondingTo: completed)
        }
        return loader.requestImage(with: url, options: options, context: context, progress: progress) { i, d, e, f in
            completed(i, d, e, f, nil)
        }
    }

    /// Look once: the bytes are there (read them), the lease is free (take
    /// it and fetch), someone holds it (wait and look again), or fetch alone.
    private func step(_ load: FleetLoad, delay: TimeInterval, waited: Bool) {
        if load.isCancelled { return load.finishCancelled() }
        let store = cache.store
        let lease = store.acquire(forKey: load.key, token: load.token, ttl: options.leaseTTL)
        switch lease {
        case .present:
            if let entry = store.entry(forKey: load.key), deliver(entry, load) {
                count { $0.shared += 1 }
                return
            }
            // gone or damaged between the two calls: fetch without the fleet
            log.debug("fleet: the Redis entry for \(LogText.url(load.url.absoluteString)) did not serve; fetching without the lease")
            count { $0.uncoordinated += 1 }
            start(load, owning: false)
        case .acquired:
            count { $0.fetched += 1; if waited { $0.tookOver += 1 } }
            start(load, owning: true)
        case .held:
            if DispatchTime.now() >= load.deadline {
                log.notice("fleet lease on \(LogText.url(load.url.absoluteString)) held past \(options.maxWait) s; fetching without it")
                count { $0.waitsTimedOut += 1; $0.uncoordinated += 1 }
                return start(load, owning: false)
            }
            queue.asyncAfter(deadline: .now() + delay) { self.step(load, delay: min(delay * 2, 0.1), waited: true) }
        case .gone(let status):
            count { $0.gone += 1 }
            load.finish(nil, nil, SDWebImageError(.invalidDownloadStatusCode,
                                                  "download failed with HTTP status \(status) (another process's, within goneTTL)",
                                                  statusCode: status, response: Self.response(load.url, status: status)), nil)
        case .fetchYourself, .unavailable:
            log.debug("fleet: \(LogText.url(load.url.absoluteString)): \(lease == .unavailable ? "Redis unavailable" : "the owner's fetch failed"); fetching without the lease")
            count { $0.uncoordinated += 1 }
            start(load, owning: false)
        }
    }

    /// Decode a value another process stored and complete with it.
    private func deliver(_ entry: (data: Data, extended: Data?, stored: Date), _ load: FleetLoad) -> Bool {
        var image: SDImage?
        let partial = entry.extended.flatMap { try? JSONDecoder().decode(SDWebImageHTTPValidators.self, from: $0) }?.partial
        if let partial {
            // the owner's thumbnail transfer ended early: its first bytes
            // serve a thumbnail as small, never the file or a larger decode
            let limits = (loader as? SDWebImageDownloader)?.config.decodeLimits ?? DecodeLimits()
            guard !load.options.contains(.avoidDecodeImage),
                  let thumb = SDImageCacheDecodePartialImageData(entry.data, load.key, load.options, load.context,
                                                                 partial: partial, limits: limits) else { return false }
            image = thumb
        } else if !load.options.contains(.avoidDecodeImage) {
            // the owner's finished transfer, checksummed: a truncated image
            // in it is the origin's, served as the downloader served it
            // another process's bytes get the caps the downloader would apply
            let limits = (loader as? SDWebImageDownloader)?.config.decodeLimits ?? DecodeLimits()
            image = SDImageCacheDecodeImageData(entry.data, load.key, load.options, load.context,
                                                limits: limits, acceptingIncomplete: true)
            if image == nil { return false }
        }
        // the manager stores what it gets in every tier; this one has it already
        cache.store.noteShared(forKey: load.key, bytes: entry.data.count)
        load.finish(image, entry.data, nil, Self.response(load.url, entry.extended))
        return true
    }

    /// The owner's status (a 404 or 410 the fleet remembers), as the response
    /// of a load that fails on it.
    static func response(_ url: URL, status: Int) -> HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])
    }

    /// A 200 carrying the stored validators, so the manager keeps them with
    /// its own copy as it would after a fetch.
    static func response(_ url: URL, _ extended: Data?) -> HTTPURLResponse? {
        var headers: [String: String] = [:]
        var status = 200
        if let extended, let v = try? JSONDecoder().decode(SDWebImageHTTPValidators.self, from: extended) {
            if let e = v.etag { headers["ETag"] = e }
            if let l = v.lastModified { headers["Last-Modified"] = l }
            if let f = v.freshUntil {
                let left = Int(f.timeIntervalSinceNow.rounded(.down))
                if left > 0 { headers["Cache-Control"] = "max-age=\(left)" }
            }
            if let p = v.partial {  // the manager stores the bytes as what they are
                status = 206
                headers.merge(p.responseHeaders) { _, new in new }
            }
        }
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)
    }

    /// Fetch through the inner loader; as the owner, put the bytes in Redis
    /// before letting go of the lease.
    private func start(_ load: FleetLoad, owning: Bool) {
        if load.isCancelled {
            if owning { cache.store.release(forKey: load.key, token: load.token) }
            return load.finishCancelled()
        }
        if owning { renew(load) }
        let op = fetch(load.url, load.options, load.context, load.progress) { [self] image, data, error, finished, response in
            guard finished else { return load.preview(image, data, response) }
            guard owning else { return load.finish(image, data, error, response) }
            load.stopRenewing()
            queue.async { [self] in
                let store = cache.store
                var shared = false
                if error == nil, let data, image != nil || load.options.contains(.avoidDecodeImage) {
                    let validators = (response as? HTTPURLResponse).map { SDWebImageHTTPValidators(response: $0) }
                    let extended = validators.flatMap { v in v.isEmpty ? nil : try? JSONEncoder().encode(v) }
                    shared = store.share(data, extendedData: extended, forKey: load.key)
                }
                if shared || (error as? SDWebImageError)?.code == .cancelled {
                    store.release(forKey: load.key, token: load.token)  // cancelled: a waiter takes over
                } else if let e = error as? SDWebImageError, e.code == .invalidDownloadStatusCode,
                          let status = e.statusCode, status == 404 || status == 410, options.goneTTL > 0 {
                    store.markFailed(forKey: load.key, token: load.token, ttl: options.goneTTL, goneStatus: status)
                } else {
                    store.markFailed(forKey: load.key, token: load.token, ttl: options.failureMarkTTL)
                }
                load.finish(image, data, error, response)
            }
        }
        load.setInner(op)
    }

    /// Keep the lease alive while the fetch runs (until `stopRenewing`).
    private func renew(_ load: FleetLoad) {
        queue.asyncAfter(deadline: .now() + max(0.05, options.leaseTTL / 3)) { [self] in
            guard load.renewing else { return }
            if cache.store.renew(forKey: load.key, token: load.token, ttl: options.leaseTTL) { renew(load) }
        }
    }
}

/// One coordinated request: its parameters, its lease token, the inner
/// loader's operation once it fetches, and a completion called once.
final class FleetLoad: SDWebImageOperation, Sendable {
    let url: URL
    let key: String
    let options: SDWebImageOptions
    let context: SDWebImageContext?
    let progress: SDImageLoaderProgressBlock?
    let deadline: DispatchTime
    let token = UUID().uuidString
    private let completed: SDImageLoaderResponseCompletedBlock
    private struct State {
        var cancelled = false
        var done = false
        var inner: (any SDWebImageOperation)?
        var renewed = true
    }
    private let state = Locked(State())

    init(url: URL, key: String, options: SDWebImageOptions, context: SDWebImageContext?,
         progress: SDImageLoaderProgressBlock?, completed: @escaping SDImageLoaderResponseCompletedBlock,
         deadline: DispatchTime) {
        self.url = url
        self.key = key
        self.options = options
        self.context = context
        self.progress = progress
        self.completed = completed
        self.deadline = deadline
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Whether its owner still keeps the lease alive.
    var renewing: Bool { state.withLock { $0.renewed } }
    func stopRenewing() { state.withLock { $0.renewed = false } }

    func setInner(_ op: (any SDWebImageOperation)?) {
        let cancelNow = state.withLock { s in
            s.inner = op
            return s.cancelled
        }
        if cancelNow { op?.cancel() }
    }

    func cancel() {
        let op = state.withLock { s in
            s.cancelled = true
            return s.inner
        }
        op?.cancel()  // the fetch answers cancelled; a waiter answers at its next look
    }

    func preview(_ image: SDImage?, _ data: Data?, _ response: URLResponse?) {
        if !state.withLock({ $0.done }) { completed(image, data, nil, false, response) }
    }

    func finish(_ image: SDImage?, _ data: Data?, _ error: (any Error)?, _ response: URLResponse?) {
        let first = state.withLock { s in
            defer { s.done = true }
            return !s.done
        }
        if first { completed(image, data, error, true, response) }
    }

    func finishCancelled() { finish(nil, nil, SDWebImageError(.cancelled, "the load was cancelled"), nil) }
}
