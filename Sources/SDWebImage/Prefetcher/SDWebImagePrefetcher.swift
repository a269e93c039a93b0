import Dispatch
import Foundation
import SDSync

/// Told as a prefetch goes (SDWebImage's `SDWebImagePrefetcherDelegate`); both
/// methods are optional.
public protocol SDWebImagePrefetcherDelegate: AnyObject, Sendable {
    /// One URL is done (loaded or failed); counts are this prefetch's.
    func imagePrefetcher(_ prefetcher: SDWebImagePrefetcher, didPrefetchURL url: URL?, finishedCount: Int, totalCount: Int)
    /// The whole list is done; skipped = failed or cancelled.
    func imagePrefetcher(_ prefetcher: SDWebImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int)
}

extension SDWebImagePrefetcherDelegate {
    public func imagePrefetcher(_ prefetcher: SDWebImagePrefetcher, didPrefetchURL url: URL?, finishedCount: Int, totalCount: Int) {}
    public func imagePrefetcher(_ prefetcher: SDWebImagePrefetcher, didFinishWithTotalCount totalCount: Int, skippedCount: Int) {}
}

/// One `prefetchURLs` call: cancel the loads not yet done.
// @unchecked: its counters and operations are under `lock` (the prefetcher takes it too); `prefetcher` is weak.
public final class SDWebImagePrefetchToken: SDWebImageOperation, @unchecked Sendable {
    /// The URLs of this `prefetchURLs` call.
    public let urls: [URL]
    fileprivate let lock = NSLock()
    fileprivate var finished = 0
    fileprivate var skipped = 0
    fileprivate var cancelled = false
    fileprivate var operations: [Int: SDWebImageCombinedOperation] = [:]
    fileprivate weak var prefetcher: SDWebImagePrefetcher?

    fileprivate init(urls: [URL]) { self.urls = urls }

    /// `cancel()` was called.
    public var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return cancelled }

    /// Loads not started are dropped, running ones cancelled; they count as
    /// skipped and the completion still comes, once.
    public func cancel() {
        lock.lock()
        cancelled = true
        let ops = Array(operations.values)
        lock.unlock()
        for op in ops { op.cancel() }
        prefetcher?.drop(self)
    }
}

/// Warms the cache with images the user will probably want, a few at a time
/// at low priority (SDWebImage: 3 concurrent, `.lowPriority`).
// @unchecked: settings, the queue of waiting jobs and the running count are under `lock`; `_delegate` is weak.
public final class SDWebImagePrefetcher: @unchecked Sendable {
    /// The prefetcher over ``SDWebImageManager/shared``.
    public static let shared = SDWebImagePrefetcher(imageManager: .shared)

    /// The manager that loads (and caches) what is prefetched.
    public let manager: SDWebImageManager
    private let lock = NSLock()
    private var _maxConcurrent = 3
    private var _options: SDWebImageOptions = [.lowPriority]
    private var _context: SDWebImageContext?
    private weak var _delegate: (any SDWebImagePrefetcherDelegate)?
    private var waiting: [(SDWebImagePrefetchToken, Int, Job)] = []
    private var runningCount = 0
    /// Callbacks run here (serial: per prefetch, in order).
    public let delegateQueue = DispatchQueue(label: "SDWebImagePrefetcher")

    fileprivate struct Job: Sendable {
        let options: SDWebImageOptions
        let context: SDWebImageContext?
        let progress: (@Sendable (_ finished: Int, _ total: Int) -> Void)?
        let completed: (@Sendable (_ finished: Int, _ skipped: Int) -> Void)?
    }

    /// A prefetcher that loads through `imageManager`.
    public init(imageManager: SDWebImageManager) { manager = imageManager }

    private func get<T>(_ v: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return v() }

    /// Loads at once at most (default 3).
    public var maxConcurrentPrefetchCount: Int {
        get { get { _maxConcurrent } }
        set { lock.lock(); _maxConcurrent = max(1, newValue); lock.unlock(); pump() }
    }
    /// Options of every prefetch load (default `.lowPriority`).
    public var options: SDWebImageOptions {
        get { get { _options } }
        set { lock.lock(); _options = newValue; lock.unlock() }
    }
    /// Context of every prefetch load.
    public var context: SDWebImageContext? {
        get { get { _context } }
        set { lock.lock(); _context = newValue; lock.unlock() }
    }
    /// Told of each finished URL and of the end of a batch.
    public var delegate: (any SDWebImagePrefetcherDelegate)? {
        get { get { _delegate } }
        set { lock.lock(); _delegate = newValue; lock.unlock() }
    }

    /// Prefetch `urls`; `progress(finished, total)` after each, `completed(finished, skipped)` once at the end
    /// (at once, with (0, 0), for an empty list).
    @discardableResult
    public func prefetchURLs(_ urls: [URL]?, options: SDWebImageOptions? = nil, context: SDWebImageContext? = nil,
                             progress: (@Sendable (_ finished: Int, _ total: Int) -> Void)? = nil,
                             completed: (@Sendable (_ finished: Int, _ skipped: Int) -> Void)? = nil) -> SDWebImagePrefetchToken {
        let urls = urls ?? []
        let token = SDWebImagePrefetchToken(urls: urls)
        token.prefetcher = self
        let job = Job(options: options ?? self.options, context: context ?? self.context, progress: progress, completed: completed)
        if urls.isEmpty {
            let d = delegate
            delegateQueue.async {
                completed?(0, 0)
                d?.imagePrefetcher(self, didFinishWithTotalCount: 0, skippedCount: 0)
            }
            return token
        }
        lock.lock()
        for i in urls.indices { waiting.append((token, i, job)) }
        lock.unlock()
        pump()
        return token
    }

    /// Async: prefetch `urls` and return `(finished, skipped)` once all are
    /// done; cancelling the Swift task cancels what is left.
    public func prefetchURLs(_ urls: [URL], options: SDWebImageOptions? = nil,
                             context: SDWebImageContext? = nil) async -> (finished: Int, skipped: Int) {
        let box = CancelBox<SDWebImagePrefetchToken>()
        return await withTaskCancellationHandler {
            await awaitCallback { c in
                box.set(prefetchURLs(urls, options: options, context: context, progress: nil) { f, s in
                    c((f, s))
                })
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// Cancel every prefetch of this prefetcher.
    public func cancelPrefetching() {
        lock.lock()
        var tokens: [ObjectIdentifier: SDWebImagePrefetchToken] = runningTokens
        for (t, _, _) in waiting { tokens[ObjectIdentifier(t)] = t }
        lock.unlock()
        for t in tokens.values { t.cancel() }
    }

    private var runningTokens: [ObjectIdentifier: SDWebImagePrefetchToken] = [:]

    /// Drop a cancelled token's waiting URLs (each counts as skipped).
    fileprivate func drop(_ token: SDWebImagePrefetchToken) {
        lock.lock()
        let dropped = waiting.filter { $0.0 === token }
        waiting.removeAll { $0.0 === token }
        lock.unlock()
        for (t, i, job) in dropped { record(t, index: i, job: job, ok: false) }
    }

    private func pump() {
        while true {
            lock.lock()
            guard runningCount < _maxConcurrent, !waiting.isEmpty else { lock.unlock(); return }
            let (token, index, job) = waiting.removeFirst()
            runningCount += 1
            runningTokens[ObjectIdentifier(token)] = token
            lock.unlock()
            start(token, index, job)
        }
    }

    private func start(_ token: SDWebImagePrefetchToken, _ index: Int, _ job: Job) {
        let url = token.urls[index]
        var ctx = job.context ?? [:]
        ctx[.callbackQueue] = DispatchQueue.global(qos: .utility)
        // `.refreshCached` can complete twice (cached, then changed): the
        // last answer counts, once, when the load is over
        let ok = Flag()
        let op = manager.loadImage(with: url, options: job.options, context: ctx) { image, _, error, _, finished, _ in
            guard finished else { return }
            ok.value = error == nil && image != nil || error == nil && job.options.contains(.avoidDecodeImage)
        }
        op?.whenFinished { [self] in
            token.lock.lock()
            token.operations.removeValue(forKey: index)
            token.lock.unlock()
            lock.lock()
            runningCount -= 1
            lock.unlock()
            record(token, index: index, job: job, ok: ok.value)
            pump()
        }
        token.lock.lock()
        if let op, !token.cancelled { token.operations[index] = op }
        let cancelledMeanwhile = token.cancelled
        token.lock.unlock()
        if cancelledMeanwhile { op?.cancel() }
    }

    private func record(_ token: SDWebImagePrefetchToken, index: Int, job: Job, ok: Bool) {
        token.lock.lock()
        token.finished += 1
        if !ok { token.skipped += 1 }
        let (f, s, total) = (token.finished, token.skipped, token.urls.count)
        token.lock.unlock()
        if f == total {
            lock.lock()
            runningTokens.removeValue(forKey: ObjectIdentifier(token))
            lock.unlock()
        }
        let d = delegate
        let url = token.urls[index]
        delegateQueue.async {
            job.progress?(f, total)
            d?.imagePrefetcher(self, didPrefetchURL: url, finishedCount: f, totalCount: total)
            if f == total {
                job.completed?(f, s)
                d?.imagePrefetcher(self, didFinishWithTotalCount: total, skippedCount: s)
            }
        }
    }
}

private final class Flag: Sendable {
    private let state = Locked(false)
    var value: Bool {
        get { state.current }
        set { state.set(newValue) }
    }
}
extension SDWebImagePrefetchToken: Cancellable {}
