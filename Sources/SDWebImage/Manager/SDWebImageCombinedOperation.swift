import Dispatch
import Foundation
import SDSync

/// One manager load: a cache query, then maybe a download. Cancel stops both.
// @unchecked: the `_` state is under `lock`; `manager` is a weak reference (the runtime loads and stores it atomically).
public final class SDWebImageCombinedOperation: SDWebImageOperation, @unchecked Sendable {
    private let lock = NSLock()
    private var _cancelled = false
    private var _ended = false
    private var _over = false
    private var _whenOver: [@Sendable () -> Void] = []
    private var _cacheOperation: (any SDWebImageOperation)?
    private var _loaderOperation: (any SDWebImageOperation)?
    weak var manager: SDWebImageManager?

    /// `cancel()` was called.
    public var isCancelled: Bool { lock.lock(); defer { lock.unlock() }; return _cancelled }
    /// The cache query while it runs (nil once a download has started).
    public var cacheOperation: (any SDWebImageOperation)? { lock.lock(); defer { lock.unlock() }; return _cacheOperation }
    /// The download, once one started (the token of its response and metrics).
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

extension SDWebImageCombinedOperation: Cancellable {}

final class Once: Sendable {
    private let done = Locked(false)
    func first() -> Bool { done.withLock { d in defer { d = true }; return !d } }
}
