import Foundation

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

    final class Waiter: SDWebImageOperation, Sendable {
        let query: SharedQuery
        let id: Int
        init(query: SharedQuery, id: Int) {
            self.query = query
            self.id = id
        }
        func cancel() { query.leave(id) }
    }
}
