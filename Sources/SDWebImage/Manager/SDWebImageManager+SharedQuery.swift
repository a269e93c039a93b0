import Foundation
import SDSync

/// One cache query answered to every identical load that joined it; each
/// waiter may leave (its answer is then a miss, at once), and the query
/// itself is cancelled when the last one leaves.
final class SharedQuery: Sendable {
    let id: Key
    private weak let manager: SDWebImageManager?
    private struct State {
        var waiters: [Int: SDImageCacheQueryCompletionBlock] = [:]
        var next = 0
        var answered = false
        var underlying: (any SDWebImageOperation)?
    }
    private let state = Locked(State())

    /// What makes two loads' cache queries the same (Nuke's
    /// `ImageRequestKeys`): the cache, the tiers asked, the options that
    /// change the answer, the typed settings of a disk hit's decode (scale,
    /// byte budget, colour management, coder, animated class; the thumbnail
    /// box and resampling are in the entry's key), and that key (SDWebImage's
    /// string, here only the name of the entry). A `.imageDecodeOptions`
    /// dictionary is not compared: loads that differ only there share.
    struct Key: Hashable, Sendable {
        let cache: ObjectIdentifier
        let cacheType: SDImageCacheType
        let cacheOptions: SDImageCacheOptions.RawValue
        let scaleFactor: Double?
        let scaleDownLimitBytes: Int?
        let colorManagement: ColorManagement?
        let coder: ObjectIdentifier?
        let animatedImageClass: ObjectIdentifier?
        let key: String?

        init(cache: any SDImageCacheProtocol, cacheType: SDImageCacheType, options: SDWebImageOptions,
             request: SDImageLoadRequest, key: String?) {
            self.cache = ObjectIdentifier(cache)
            self.cacheType = cacheType
            cacheOptions = options.cacheOptions.rawValue
            scaleFactor = request.scaleFactor
            scaleDownLimitBytes = request.scaleDownLimitBytes
            colorManagement = request.colorManagement
            coder = request.coder.map { ObjectIdentifier($0) }
            animatedImageClass = request.animatedImageClass.map { ObjectIdentifier($0) }
            self.key = key
        }
    }

    init(id: Key, manager: SDWebImageManager) {
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
