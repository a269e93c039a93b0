import Foundation

/// A strict LRU memory cache with cost and count limits (Nuke's model, not
/// NSCache's heuristics: Linux sends no memory warnings, so the limits are
/// the only brake). Thread-safe; hits and stores are O(1).
// @unchecked: the LRU list, the map and the limits are under the pthread mutex `lock`.
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    private final class Node {
        let key: Key
        var value: Value
        var cost: Int
        /// When it was stored (monotonic ns), for the age limit.
        var stored: UInt64
        // `map` owns every node; the links only order them (no ARC traffic).
        unowned(unsafe) var newer: Node?
        unowned(unsafe) var older: Node?
        init(key: Key, value: Value, cost: Int, stored: UInt64) {
            self.key = key
            self.value = value
            self.cost = cost
            self.stored = stored
        }
    }

    private var lock = pthread_mutex_t()
    private var map: [Key: Node] = [:]
    private unowned(unsafe) var head: Node?  // most recently used
    private unowned(unsafe) var tail: Node?  // least recently used
    private var _totalCost = 0
    private var _costLimit: Int
    private var _countLimit: Int
    private var _entryCostLimit = 0
    private var _ageLimitNs: UInt64 = 0

    /// Limits of 0 mean none.
    public init(costLimit: Int = 0, countLimit: Int = 0) {
        _costLimit = max(0, costLimit)
        _countLimit = max(0, countLimit)
        pthread_mutex_init(&lock, nil)
    }

    deinit {
        pthread_mutex_destroy(&lock)
    }

    @inline(__always) private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        return body()
    }

    /// Total cost kept at most (0: no limit); lowering it evicts at once.
    public var costLimit: Int {
        get { locked { _costLimit } }
        set { locked { _costLimit = max(0, newValue); trim() } }
    }
    /// Entries kept at most (0: no limit); lowering it evicts at once.
    public var countLimit: Int {
        get { locked { _countLimit } }
        set { locked { _countLimit = max(0, newValue); trim() } }
    }
    /// A value costing more than this is not kept (0: only the whole
    /// `costLimit` bounds it): one huge image cannot flush everything else.
    public var entryCostLimit: Int {
        get { locked { _entryCostLimit } }
        set { locked { _entryCostLimit = max(0, newValue) } }
    }
    /// Seconds an entry stays valid after it was stored (0: forever); an
    /// older one is a miss and is dropped when met, or by `removeExpired()`.
    public var ageLimit: TimeInterval {
        get { locked { Double(_ageLimitNs) / 1e9 } }
        set { locked { _ageLimitNs = newValue > 0 ? UInt64(min(newValue, 1e9) * 1e9) : 0 } }
    }
    /// The summed cost of the entries held.
    public var totalCost: Int { locked { _totalCost } }
    /// Entries held.
    public var totalCount: Int { locked { map.count } }

    /// The value, made most recently used.
    public func value(forKey key: Key) -> Value? {
        locked {
            guard let node = map[key] else { return nil }
            if _ageLimitNs > 0, Self.now() &- node.stored > _ageLimitNs {
                remove(node)
                return nil
            }
            moveToFront(node)
            return node.value
        }
    }

    /// Store (replacing); a value costing more than the whole limit is not kept.
    public func setValue(_ value: Value, forKey key: Key, cost: Int = 0) {
        locked {
            let cost = max(0, cost)
            if (_costLimit > 0 && cost > _costLimit) || (_entryCostLimit > 0 && cost > _entryCostLimit) {
                // would evict everything else and then itself: keep nothing new
                if let node = map[key] { remove(node) }
                return
            }
            if let node = map[key] {
                _totalCost += cost - node.cost
                node.value = value
                node.cost = cost
                node.stored = Self.now()
                moveToFront(node)
            } else {
                let node = Node(key: key, value: value, cost: cost, stored: Self.now())
                map[key] = node
                _totalCost += cost
                insertAtFront(node)
            }
            trim()
        }
    }

    /// Remove `key`'s entry; returns its value, if there was one.
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        locked {
            guard let node = map[key] else { return nil }
            remove(node)
            return node.value
        }
    }

    /// Remove every entry.
    public func removeAll() {
        locked {
            head = nil
            tail = nil
            map.removeAll()
            _totalCost = 0
        }
    }

    /// Drop least recently used entries until within these limits.
    public func trim(toCost cost: Int) { locked { trim(cost: cost, count: _countLimit) } }
    /// Drop least recently used entries until at most `count` are left.
    public func trim(toCount count: Int) { locked { trim(cost: _costLimit, count: count) } }
    /// Drop every entry older than `ageLimit`; returns how many went.
    @discardableResult
    public func removeExpired() -> Int {
        locked {
            guard _ageLimitNs > 0 else { return 0 }
            let now = Self.now()
            var removed = 0
            var node = tail
            while let n = node {
                node = n.newer
                if now &- n.stored > _ageLimitNs {
                    remove(n)
                    removed += 1
                }
            }
            return removed
        }
    }

    @inline(__always) private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    // MARK: - list (lock held)

    private func trim() { trim(cost: _costLimit, count: _countLimit) }

    private func remove(_ node: Node) {
        unlink(node)
        _totalCost -= node.cost
        map.removeValue(forKey: node.key)  // the caller holds `node`: it outlives the map's reference
    }

    private func trim(cost: Int, count: Int) {
        while let last = tail, (cost > 0 && _totalCost > cost) || (count > 0 && map.count > count) {
            remove(last)
        }
    }

    private func insertAtFront(_ node: Node) {
        node.newer = nil
        node.older = head
        if let h = head { h.newer = node } else { tail = node }
        head = node
    }

    private func unlink(_ node: Node) {
        if let n = node.newer { n.older = node.older } else { head = node.older }
        if let o = node.older { o.newer = node.newer } else { tail = node.newer }
        node.newer = nil
        node.older = nil
    }

    private func moveToFront(_ node: Node) {
        guard head !== node else { return }
        unlink(node)
        insertAtFront(node)
    }
}
