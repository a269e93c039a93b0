import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDCoders
import SDDownloader

/// The default operation: one transfer on the C loop, streamed into the
/// decoder for the first subscriber's options; subscribers that asked for
/// another size get their own decode of the same bytes at the end.
// @unchecked: every stored `var` is read and written under `lock`; the environment and request are `let`s.
public final class SDWebImageDownloaderOperation: SDWebImageDownloaderOperationProtocol, @unchecked Sendable {
    final class Handler: Sendable {
        let progress: SDWebImageDownloaderProgressBlock?
        let completed: SDWebImageDownloaderCompletedBlock?
        let options: SDImageLoaderDecodeOptions
        let queue: SDCallbackQueue
        init(_ p: SDWebImageDownloaderProgressBlock?, _ c: SDWebImageDownloaderCompletedBlock?,
             _ o: SDImageLoaderDecodeOptions, _ q: SDCallbackQueue) {
            progress = p
            completed = c
            options = o
            queue = q
        }
    }

    enum State { case ready, executing, finished }

    /// The request as sent.
    public let request: URLRequest?
    /// The options of the download (its first subscriber's).
    public let options: SDWebImageDownloaderOptions
    /// The context of the download (its first subscriber's).
    public let context: SDWebImageContext?
    let env: SDWebImageDownloaderOperationEnvironment
    let checksInSwift: Bool
    /// Response handling and the end run here, in order, off the loop thread.
    let work: DispatchQueue

    let lock = NSLock()
    var handlers: [Handler] = []
    var state = State.ready
    var cancelled = false
    var task: DownloadTask?
    var pendingError: (any Error)?
    var _response: URLResponse?
    var rawResponse: DownloadResponse?
    var progressHandlers = 0
    var _metrics: DownloadMetrics?
    var _completionBlock: (@Sendable () -> Void)?
    var transferOptions: SDImageLoaderDecodeOptions?
    /// The transfer submitted last (under `lock`): a thumbnail's early end
    /// asks for the rest with it when a subscriber wants more.
    var submitted: DownloadRequest?
    /// The formats the C loop decodes (the rest it declines, undecoded).
    var streamedFormats: Set<ImageFormat> = []
    /// The C loop decodes this transfer as it streams (for the formats above).
    var decodesInTransfer: Bool { !streamedFormats.isEmpty }
    /// Previews the C core's decoder rendered for this transfer (under `lock`).
    var corePreviews = 0
    /// `corePreviews`, read under the lock.
    var corePreviewCount: Int { lock.withLock { corePreviews } }
    /// A download decoded in Swift: its sniff and previews (not the C core's).
    var swiftPreviews: SwiftPreviews?
    /// A progressive animation the C core decodes: its frames so far (under `lock`).
    var animationSoFar: AnimationSoFar?
    var reported: (received: Int64, fraction: Double)?
    var validators: HTTPValidatorCache.Entry?

    /// An operation for `request`; nothing is sent until `start()`.
    public required init(request: URLRequest, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
                         environment: SDWebImageDownloaderOperationEnvironment) {
        self.request = request
        self.options = options
        self.context = context
        env = environment
        checksInSwift = Self.checksInSwift(environment)
        work = DispatchQueue(label: "SDWebImageDownloaderOperation", target: .global(qos: .userInitiated))
    }

    /// The response, once its headers arrived (an `HTTPURLResponse` for http and https).
    public var response: URLResponse? {
        lock.lock()
        defer { lock.unlock() }
        if _response == nil, let raw = rawResponse { _response = makeResponse(raw) }
        return _response
    }
    /// Timings and sizes, once the transfer finished.
    public var metrics: DownloadMetrics? { lock.lock(); defer { lock.unlock() }; return _metrics }
    /// Started and not yet finished.
    public var isExecuting: Bool { lock.lock(); defer { lock.unlock() }; return state == .executing }
    /// Finished, whatever the outcome.
    public var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return state == .finished }
    /// Cancelled, by `cancel()` or by its last subscriber leaving.
    public var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return cancelled }
    public var completionBlock: (@Sendable () -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return _completionBlock }
        set { lock.lock(); _completionBlock = newValue; lock.unlock() }
    }

    public func addHandlers(forProgress progressBlock: SDWebImageDownloaderProgressBlock?,
                            completed completedBlock: SDWebImageDownloaderCompletedBlock?,
                            decodeOptions: SDImageLoaderDecodeOptions) -> (any Sendable)? {
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

    /// Submit the transfer to the loop; a second call, or one after `cancel()`, does nothing.
    public func start() {
        lock.lock()
        guard state == .ready, !cancelled else { lock.unlock(); return }
        state = .executing
        let first = handlers.first?.options ?? SDImageLoaderDecodeOptions()
        transferOptions = first
        // A decryptor must see every byte before anything is an image; a
        // format a coder of the user's claims decodes in Swift once the bytes
        // are in (the C decoder declines it and passes the body through).
        streamedFormats = env.decryptor == nil ? first.streamedFormats : []
        if options.contains(.useHTTPCache), let url = request?.url { validators = env.httpCache?.entry(for: url) }
        var dl = makeRequest(first)
        if !decodesInTransfer, first.decodeImage, env.decryptor == nil {
            let p = SwiftPreviews(first, previews: first.progressive && options.contains(.progressiveLoad))
            swiftPreviews = p
            dl?.bodyObserver = observeBody(p)
        } else if decodesInTransfer, first.progressive, options.contains(.progressiveLoad), !first.decode.firstFrameOnly {
            // the C core decodes and previews; an animation's frames come
            // from the same decoder as they complete (kept while they fit
            // the frame cache's budget: the result brings the rest)
            dl?.animationFrameBytes = first.decode.frameCacheBytes ?? DownloadRequest.defaultAnimationFrameBytes
        }
        lock.unlock()
        post(.SDWebImageDownloadStart, self)
        guard let dl else {
            work.async { self.finish(.failure(DownloadError(.invalidRequest, message: "unsupported request"))) }
            return
        }
        submit(dl)
    }

    func submit(_ dl: DownloadRequest) {
        lock.withLock { submitted = dl }
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
}

/// Identifies one subscriber of a default operation. Weak: the subscriber's
/// closures often hold the token's owner (the manager's operation holds the
/// token), and the operation drops its handlers when it ends.
final class HandlerToken: Sendable {
    weak let handler: SDWebImageDownloaderOperation.Handler?
    init(_ h: SDWebImageDownloaderOperation.Handler) { handler = h }
}
