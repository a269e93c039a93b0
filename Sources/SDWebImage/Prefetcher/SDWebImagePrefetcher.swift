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
public final class SDWebImagePrefetchToken: SDWebImageOperation, Sendable {
    /// The URLs of this `prefetchURLs` call.
    public let urls: [URL]
    fileprivate struct State {
        var finished = 0
        var skipped = 0
        var cancelled = false
        var operations: [Int: SDWebImageCombinedOperation] = [:]
    }
    fileprivate let state = Locked(State())
    fileprivate weak let prefetcher: SDWebImagePrefetcher?

    fileprivate init(urls: [URL], prefetcher: SDWebImagePrefetcher) {
        self.urls = urls
        self.prefetcher = prefetcher
    }

    /// `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Loads not started are dropped, running ones cancelled; they count as
    /// skipped and the completion still comes, once.
    public func cancel() {
        let ops = state.withLock { s in
            s.cancelled = true
            return Array(s.operations.values)
        }
        for op in ops { op.cancel() }
        prefetcher?.drop(self)
    }
}

/// Warms the cache with images the user will probably want, a few at a time
/// at low priority (SDWebImage: 3 concurrent, `.lowPriority`).
public final class SDWebImagePrefetcher: Sendable {
    /// The prefetcher over ``SDWebImageManager/shared``.
    public static let shared = SDWebImagePrefetcher(imageManager: .shared)

    /// The manager that loads (and caches) what is prefetched.
    public let manager: SDWebImageManager
    private struct State {
        var maxConcurrent = 3
        var options: SDWebImageOptions = [.lowPriority]
        var context: SDWebImageContext?
        weak var delegate: (any SDWebImagePrefetcherDelegate)?
        var waiting: [(SDWebImagePrefetchToken, Int, Job)] = []
        var runningCount = 0
        var runningTokens: [ObjectIdentifier: SDWebImagePrefetchToken] = [:]
    }
    private let state = Locked(State())
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

    /// Loads at once at most (default 3).
    public var maxConcurrentPrefetchCount: Int {
        get { state.withLock { $0.maxConcurrent } }
        set { state.withLock { $0.maxConcurrent = max(1, newValue) }; pump() }
    }
    /// Options of every prefetch load (default `.lowPriority`).
    public var options: SDWebImageOptions {
        get { state.withLock { $0.options } }
        set { state.withLock { $0.options = newValue } }
    }
    /// Context of every prefetch load.
    public var context: SDWebImageContext? {
        get { state.withLock { $0.context } }
        set { state.withLock { $0.context = newValue } }
    }
    /// Told of each finished URL and of the end of a batch.
    public var delegate: (any SDWebImagePrefetcherDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Prefetch `urls`; `progress(finished, total)` after each, `completed(finished, skipped)` once at the end
    /// (at once, with (0, 0), for an empty list).
    @discardableResult
    public func prefetchURLs(_ urls: [URL]?, options: SDWebImageOptions? = nil, context: SDWebImageContext? = nil,
                             progress: (@Sendable (_ finished: Int, _ total: Int) -> Void)? = nil,
                             completed: (@Sendable (_ finished: Int, _ skipped: Int) -> Void)? = nil) -> SDWebImagePrefetchToken {
        let urls = urls ?? []
        let token = SDWebImagePrefetchToken(urls: urls, prefetcher: self)
        let job = Job(options: options ?? self.options, context: context ?? self.context, progress: progress, completed: completed)
        if urls.isEmpty {
            let d = delegate
            delegateQueue.async {
                completed?(0, 0)
                d?.imagePrefetcher(self, didFinishWithTotalCount: 0, skippedCount: 0)
            }
            return token
        }
        state.withLock { s in for i in urls.indices { s.waiting.append((token, i, job)) } }
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
        let tokens = state.withLock { s in
            var tokens = s.runningTokens
            for (t, _, _) in s.waiting { tokens[ObjectIdentifier(t)] = t }
            return tokens
        }
        for t in tokens.values { t.cancel() }
    }

    /// Drop a cancelled token's waiting URLs (each counts as skipped).
    fileprivate func drop(_ token: SDWebImagePrefetchToken) {
        let dropped = state.withLock { s in
            defer { s.waiting.removeAll { $0.0 === token } }
            return s.waiting.filter { $0.0 === token }
        }
        for (t, i, job) in dropped { record(t, index: i, job: job, ok: false) }
    }

    private func pump() {
        while true {
            let next = state.withLock { s -> (SDWebImagePrefetchToken, Int, Job)? in
                guard s.runningCount < s.maxConcurrent, !s.waiting.isEmpty else { return nil }
                let n = s.waiting.removeFirst()
                s.runningCount += 1
                s.runningTokens[ObjectIdentifier(n.0)] = n.0
                return n
            }
            guard let (token, index, job) = next else { return }
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
            token.state.withLock { _ = $0.operations.removeValue(forKey: index) }
            state.withLock { $0.runningCount -= 1 }
            record(token, index: index, job: job, ok: ok.value)
            pump()
        }
        let cancelledMeanwhile = token.state.withLock { s in
            if let op, !s.cancelled { s.operations[index] = op }
            return s.cancelled
        }
        if cancelledMeanwhile { op?.cancel() }
    }

    private func record(_ token: SDWebImagePrefetchToken, index: Int, job: Job, ok: Bool) {
        let total = token.urls.count
        let (f, s) = token.state.withLock { t in
            t.finished += 1
            if !ok { t.skipped += 1 }
            return (t.finished, t.skipped)
        }
        if f == total {
            state.withLock { _ = $0.runningTokens.removeValue(forKey: ObjectIdentifier(token)) }
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
