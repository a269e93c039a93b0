import Dispatch
import Foundation
import SDSync

/// How `SDImageCachesManager` spreads one operation over its caches
/// (SDWebImage's `SDImageCachesManagerOperationPolicy`). The last cache in
/// `caches` has the highest priority.
public enum SDImageCachesManagerOperationPolicy: Int, Sendable {
    /// One cache after another, from the highest to the lowest; a query or
    /// contains stops at the first hit.
    case serial = 0
    /// All at once; a query or contains takes the first hit to answer.
    case concurrent = 1
    /// Only the last cache.
    case highestOnly = 2
    /// Only the first cache.
    case lowestOnly = 3
}

/// Several caches behind one `SDImageCacheProtocol`: e.g. a small fast cache
/// over a big shared one, or a read-only bundled cache under the user's.
public final class SDImageCachesManager: SDImageCacheProtocol, Sendable {
    /// A manager over the shared cache; add more tiers to it.
    public static let shared = SDImageCachesManager(caches: [SDImageCache.shared])

    private let list: PriorityList<any SDImageCacheProtocol>
    private let policies = Locked<[SDImageCachesManagerOperationPolicy]>([
        .serial,       // query
        .highestOnly,  // store
        .concurrent,   // remove
        .serial,       // contains
        .concurrent,   // clear
    ])

    /// A manager over `caches`, lowest priority first.
    public init(caches: [any SDImageCacheProtocol] = []) { list = PriorityList(caches) }

    /// Lowest priority first.
    public var caches: [any SDImageCacheProtocol] {
        get { list.all }
        set { list.all = newValue }
    }

    /// Add `cache` with the highest priority.
    public func addCache(_ cache: any SDImageCacheProtocol) { list.add(cache) }

    /// Remove `cache` (by identity).
    public func removeCache(_ cache: any SDImageCacheProtocol) { list.remove(cache) }

    private func policy(_ i: Int) -> SDImageCachesManagerOperationPolicy { policies.withLock { $0[i] } }
    private func setPolicy(_ i: Int, _ p: SDImageCachesManagerOperationPolicy) { policies.withLock { $0[i] = p } }

    /// Default `.serial`.
    public var queryOperationPolicy: SDImageCachesManagerOperationPolicy {
        get { policy(0) } set { setPolicy(0, newValue) }
    }
    /// Default `.highestOnly`.
    public var storeOperationPolicy: SDImageCachesManagerOperationPolicy {
        get { policy(1) } set { setPolicy(1, newValue) }
    }
    /// Default `.concurrent`.
    public var removeOperationPolicy: SDImageCachesManagerOperationPolicy {
        get { policy(2) } set { setPolicy(2, newValue) }
    }
    /// Default `.serial`.
    public var containsOperationPolicy: SDImageCachesManagerOperationPolicy {
        get { policy(3) } set { setPolicy(3, newValue) }
    }
    /// Default `.concurrent`.
    public var clearOperationPolicy: SDImageCachesManagerOperationPolicy {
        get { policy(4) } set { setPolicy(4, newValue) }
    }

    /// The caches a policy uses, highest first.
    private func targets(_ p: SDImageCachesManagerOperationPolicy) -> [any SDImageCacheProtocol] {
        let all = caches
        switch p {
        case .highestOnly: return all.last.map { [$0] } ?? []
        case .lowestOnly: return all.first.map { [$0] } ?? []
        case .serial, .concurrent: return all.reversed()
        }
    }

    // MARK: - SDImageCacheProtocol

    public func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?,
                           cacheType: SDImageCacheType,
                           completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)? {
        let p = queryOperationPolicy
        let caches = targets(p)
        guard !caches.isEmpty else {
            completion?(nil, nil, .none)
            return nil
        }
        let op = CachesQuery(completion)
        if p == .concurrent {
            op.expect(caches.count)
            for c in caches {
                op.add(c.queryImage(forKey: key, options: options, context: context, cacheType: cacheType) {
                    image, data, type in
                    if image != nil || data != nil { op.answer(image, data, type) } else { op.miss() }
                })
            }
        } else {
            queryNext(caches[...], key, options, context, cacheType, op)
        }
        return op
    }

    private func queryNext(_ rest: ArraySlice<any SDImageCacheProtocol>, _ key: String?, _ options: SDWebImageOptions,
                           _ context: SDWebImageContext?, _ cacheType: SDImageCacheType, _ op: CachesQuery) {
        guard let c = rest.first, !op.isCancelled else { return op.answer(nil, nil, .none) }
        op.add(c.queryImage(forKey: key, options: options, context: context, cacheType: cacheType) {
            [self] image, data, type in
            if image != nil || data != nil { return op.answer(image, data, type) }
            queryNext(rest.dropFirst(), key, options, context, cacheType, op)
        })
    }

    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: nil, completion: completion)
    }

    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?) {
        each(storeOperationPolicy, done: completion) { c, done in
            c.store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: extendedData,
                    completion: done)
        }
    }

    public func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        each(removeOperationPolicy, done: ignoringError(completion)) { c, done in
            c.removeImage(forKey: key, cacheType: cacheType) { done(nil) }
        }
    }

    public func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        each(clearOperationPolicy, done: ignoringError(completion)) { c, done in
            c.clear(with: cacheType) { done(nil) }
        }
    }

    private func ignoringError(_ c: (@Sendable () -> Void)?) -> (@Sendable ((any Error)?) -> Void)? {
        guard let c else { return nil }
        return { @Sendable _ in c() }
    }

    public func containsImage(forKey key: String?, cacheType: SDImageCacheType,
                              completion: @escaping @Sendable (SDImageCacheType) -> Void) {
        let p = containsOperationPolicy
        let caches = targets(p)
        guard !caches.isEmpty else { return completion(.none) }
        if p == .concurrent {
            let once = FirstAnswer(count: caches.count) { completion($0) }
            for c in caches { c.containsImage(forKey: key, cacheType: cacheType) { once.offer($0) } }
        } else {
            containsNext(caches[...], key, cacheType, completion)
        }
    }

    private func containsNext(_ rest: ArraySlice<any SDImageCacheProtocol>, _ key: String?, _ cacheType: SDImageCacheType,
                              _ completion: @escaping @Sendable (SDImageCacheType) -> Void) {
        guard let c = rest.first else { return completion(.none) }
        c.containsImage(forKey: key, cacheType: cacheType) { [self] type in
            if type != .none { return completion(type) }
            containsNext(rest.dropFirst(), key, cacheType, completion)
        }
    }

    /// Extended data: from the first cache (highest first) that has some.
    public func extendedData(forKey key: String?) -> Data? {
        for c in caches.reversed() { if let d = c.extendedData(forKey: key) { return d } }
        return nil
    }

    public func storeExtendedData(_ data: Data?, forKey key: String?) throws {
        for c in targets(storeOperationPolicy) { try c.storeExtendedData(data, forKey: key) }
    }

    public func touchDiskEntry(forKey key: String?) {
        for c in caches { c.touchDiskEntry(forKey: key) }
    }

    /// Run `body` on the policy's caches, all at once or one after another;
    /// `done` once, after the last, with the first error.
    private func each(_ p: SDImageCachesManagerOperationPolicy, done: (@Sendable ((any Error)?) -> Void)?,
                      _ body: @escaping @Sendable (any SDImageCacheProtocol, @escaping @Sendable ((any Error)?) -> Void) -> Void) {
        let caches = targets(p)
        guard !caches.isEmpty else { done?(nil); return }
        if p == .concurrent {
            let group = AllDone(count: caches.count, done: done)
            for c in caches { body(c) { group.finish($0) } }
        } else {
            serially(caches[...], nil, done, body)
        }
    }

    private func serially(_ rest: ArraySlice<any SDImageCacheProtocol>, _ firstError: (any Error)?,
                          _ done: (@Sendable ((any Error)?) -> Void)?,
                          _ body: @escaping @Sendable (any SDImageCacheProtocol, @escaping @Sendable ((any Error)?) -> Void) -> Void) {
        guard let c = rest.first else { done?(firstError); return }
        body(c) { [self] error in serially(rest.dropFirst(), firstError ?? error, done, body) }
    }
}

/// A query over several caches: answers once; cancel reaches every part.
private final class CachesQuery: SDWebImageOperation, Sendable {
    private struct State {
        var completion: SDImageCacheQueryCompletionBlock?
        var parts: [any SDWebImageOperation] = []
        var cancelled = false
        var misses = 0, expected = Int.max
    }
    private let state: Locked<State>

    init(_ completion: SDImageCacheQueryCompletionBlock?) { state = Locked(State(completion: completion)) }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func expect(_ n: Int) { state.withLock { $0.expected = n } }

    func add(_ op: (any SDWebImageOperation)?) {
        guard let op else { return }
        let over = state.withLock { s in
            let over = s.cancelled || s.completion == nil  // answered already: this part is not needed
            if !over { s.parts.append(op) }
            return over
        }
        if over { op.cancel() }
    }

    func answer(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType) {
        let (c, others) = state.withLock { s in
            defer { s.completion = nil; s.parts = [] }
            return (s.completion, s.parts)
        }
        c?(image, data, type)
        for p in others { p.cancel() }  // a concurrent query: the slower ones are not needed
    }

    func miss() {
        let all = state.withLock { s in
            s.misses += 1
            return s.misses >= s.expected
        }
        if all { answer(nil, nil, .none) }
    }

    /// Like SDImageCache's token: the completion runs once, now, with a miss.
    func cancel() {
        state.withLock { $0.cancelled = true }
        answer(nil, nil, .none)
    }
}

/// The first answer other than `.none`, or `.none` when all said so.
private final class FirstAnswer: Sendable {
    private let state: Locked<(left: Int, done: (@Sendable (SDImageCacheType) -> Void)?)>

    init(count: Int, done: @escaping @Sendable (SDImageCacheType) -> Void) {
        state = Locked((count, done))
    }

    func offer(_ type: SDImageCacheType) {
        let d = state.withLock { s -> (@Sendable (SDImageCacheType) -> Void)? in
            s.left -= 1
            let d = type != .none || s.left == 0 ? s.done : nil
            if d != nil { s.done = nil }
            return d
        }
        d?(type)
    }
}

/// Counts parts down; calls `done` once with the first error.
private final class AllDone: Sendable {
    private let state: Locked<(left: Int, error: (any Error)?)>
    private let done: (@Sendable ((any Error)?) -> Void)?

    init(count: Int, done: (@Sendable ((any Error)?) -> Void)?) {
        state = Locked((count, nil))
        self.done = done
    }

    func finish(_ e: (any Error)?) {
        let (last, err) = state.withLock { s in
            s.left -= 1
            if s.error == nil { s.error = e }
            return (s.left == 0, s.error)
        }
        if last { done?(err) }
    }
}
