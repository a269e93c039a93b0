import Dispatch
import Foundation
import SDSync

/// One manager load: a cache query, then maybe a download. Cancel stops both.
public final class SDWebImageCombinedOperation: SDWebImageOperation, Sendable {
    private struct State {
        var cancelled = false
        var ended = false
        var over = false
        var whenOver: [@Sendable () -> Void] = []
        var cacheOperation: (any SDWebImageOperation)?
        var loaderOperation: (any SDWebImageOperation)?
    }
    private let state = Locked(State())
    weak let manager: SDWebImageManager?

    init(manager: SDWebImageManager?) { self.manager = manager }

    /// `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }
    /// The cache query while it runs (nil once a download has started).
    public var cacheOperation: (any SDWebImageOperation)? { state.withLock { $0.cacheOperation } }
    /// The download, once one started (the token of its response and metrics).
    public var loaderOperation: (any SDWebImageOperation)? { state.withLock { $0.loaderOperation } }

    // A part can be handed over after the load already ended (a cache query
    // that answered before its start call returned): it is not kept then.
    func setCacheOperation(_ op: (any SDWebImageOperation)?) {
        let c = state.withLock { s in
            // a query that answered before its start call returned may arrive
            // after the download it led to began: it is over, not kept
            if !s.ended && (op == nil || s.loaderOperation == nil) { s.cacheOperation = op }
            return s.cancelled
        }
        if c { op?.cancel() }
    }

    func setLoaderOperation(_ op: (any SDWebImageOperation)?) {
        let c = state.withLock { s in
            if !s.ended {
                s.loaderOperation = op
                if op != nil { s.cacheOperation = nil }  // the query is over once the download runs
            }
            return s.cancelled
        }
        if c { op?.cancel() }
    }

    /// The load is over: let go of the parts (their closures may hold the load).
    func ended() {
        state.withLock { s in
            s.ended = true
            s.cacheOperation = nil
            s.loaderOperation = nil
        }
    }

    /// The load gave its final answer, whose completion has yet to run: no
    /// part is taken any more and the finished query goes, but the loader's
    /// operation stays readable inside the completion (users read the
    /// token's response and metrics there, as in SDWebImage); `ended()`
    /// lets it go after the completion returned.
    func answered() {
        state.withLock { s in
            s.ended = true
            s.cacheOperation = nil
        }
    }

    /// Ours (SDWebImage has no such hook): `body` runs once, on the
    /// callback queue, after the load's last completion call returned (and
    /// any earlier one still running on a concurrent queue), or at once if
    /// that already happened. With
    /// `.refreshCached` the completion may run twice, with the cached image
    /// and then with a changed one, or once when the server says the cached
    /// image is current: this tells which call was the last.
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { s in
            if s.over { return true }
            s.whenOver.append(body)
            return false
        }
        if now { body() }
    }

    /// Someone waits for the end (the load then makes sure earlier
    /// completion calls on a concurrent queue have returned too).
    var isWatched: Bool { state.withLock { !$0.whenOver.isEmpty } }

    /// The load gave its last answer: run the `whenFinished` bodies.
    func over() {
        let bodies: [@Sendable () -> Void] = state.withLock { s in
            if s.over { return [] }
            s.over = true
            defer { s.whenOver = [] }
            return s.whenOver
        }
        for b in bodies { b() }
    }

    /// The completion runs once more with `cancelled` unless the load already finished.
    public func cancel() {
        guard let (c, l) = state.withLock({ s -> ((any SDWebImageOperation)?, (any SDWebImageOperation)?)? in
            guard !s.cancelled else { return nil }
            s.cancelled = true
            return (s.cacheOperation, s.loaderOperation)
        }) else { return }
        c?.cancel()
        l?.cancel()
        manager?.finished(self)
    }
}

extension SDWebImageCombinedOperation: Cancellable {}

final class Once: Sendable {
    private let done = Locked(false)
    func first() -> Bool { done.withLock { d in defer { d = true }; return !d } }
}
