import Foundation
import SDSync

/// One cache query answered to every identical load that joined it; each
/// waiter may leave (its answer is then a miss, at once), and the query
/// itself is cancelled when the last one leaves.
final class SharedQuery: Sendable {
    let id: String
    private weak let manager: SDWebImageManager?
    private struct State {
        var waiters: [Int: SDImageCacheQueryCompletionBlock] = [:]
        var next = 0
        var answered = false
        var underlying: (any SDWebImageOperation)?
    }
    private let state = Locked(State())

    init(id: String, manager: SDWebImageManager) {
        self.id = id
        self.manager = manager
    }

    /// nil once answered (the caller starts its own).
    func add(_ done: @escaping SDImageCacheQueryCompletionBlock) -> Waiter? {
        guard let id = state.withLock({ s -> Int? in
            guard !s.answered else { return nil }
            s.next += 1
            s.waiters[s.next] = done
            return s.next
        }) else { return nil }
        return Waiter(query: self, id: id)
    }

    func setUnderlying(_ op: (any SDWebImageOperation)?) {
        let orphan = state.withLock { s in
            s.underlying = op
            return !s.answered && s.waiters.isEmpty
        }
        if orphan { op?.cancel() }
    }

    func answer(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType) {
        let ws = state.withLock { s in
            s.answered = true
            defer { s.waiters = [:] }
            return s.waiters
        }
        manager?.forget(self)
        for (_, w) in ws.sorted(by: { $0.key < $1.key }) { w(image, data, type) }
    }

    func leave(_ waiter: Int) {
        let (w, last, u) = state.withLock { s in
            let w = s.waiters.removeValue(forKey: waiter)
            let last = w != nil && s.waiters.isEmpty && !s.answered
            if last { s.answered = true }
            return (w, last, s.underlying)
        }
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
