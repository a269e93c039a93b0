import Foundation
import SDCache

/// The memory tier of an `SDImageCache` (SDWebImage's `SDMemoryCache`
/// protocol, `SDMemoryCacheProtocol` in Swift): plug another one in through
/// `SDImageCacheConfig.memoryCacheClass`. Called from any thread.
public protocol SDMemoryCacheProtocol: AnyObject, Sendable {
    /// A tier with the config's limits (`maxMemoryCost`, `maxMemoryCount`).
    init(config: SDImageCacheConfig)
    /// The image stored under `key`, or nil.
    func object(forKey key: String) -> SDImage?
    /// `cost`: bytes of decoded pixels (`SDImage.cost`).
    func setObject(_ object: SDImage, forKey key: String, cost: Int)
    /// Drop `key`'s image.
    func removeObject(forKey key: String)
    /// Drop every image.
    func removeAllObjects()
    /// Bytes and images held (ours: `SDImageCache.memoryCost`/`memoryCount`).
    var totalCost: Int { get }
    /// Images held.
    var totalCount: Int { get }
    /// The config's limits changed. Default: nothing.
    func configDidChange(_ config: SDImageCacheConfig)
    /// The system is short of memory (`shouldTrimMemoryUnderPressure`):
    /// give some back. Default: `removeAllObjects()`, what SDWebImage's
    /// memory cache does on a memory warning.
    func trimUnderMemoryPressure()
}

extension SDMemoryCacheProtocol {
    /// Ignored.
    public func configDidChange(_ config: SDImageCacheConfig) {}
    /// Drops everything.
    public func trimUnderMemoryPressure() { removeAllObjects() }
}

/// The default memory tier: a strict LRU bounded by cost and count.
public final class SDMemoryCache: SDMemoryCacheProtocol, Sendable {
    private let lru: MemoryCache<String, SDImage>

    public init(config: SDImageCacheConfig) {
        lru = MemoryCache(costLimit: config.maxMemoryCost, countLimit: config.maxMemoryCount)
        lru.ageLimit = config.maxMemoryAge
        lru.entryCostLimit = config.maxMemoryEntryCost
    }

    public func object(forKey key: String) -> SDImage? { lru.value(forKey: key) }
    public func setObject(_ object: SDImage, forKey key: String, cost: Int) { lru.setValue(object, forKey: key, cost: cost) }
    public func removeObject(forKey key: String) { lru.removeValue(forKey: key) }
    public func removeAllObjects() { lru.removeAll() }
    public var totalCost: Int { lru.totalCost }
    public var totalCount: Int { lru.totalCount }

    public func configDidChange(_ config: SDImageCacheConfig) {
        lru.costLimit = config.maxMemoryCost
        lru.countLimit = config.maxMemoryCount
        lru.ageLimit = config.maxMemoryAge
        lru.entryCostLimit = config.maxMemoryEntryCost
    }

    /// Drops expired images, then the least recently used until half the
    /// cost is left: repeated while the pressure lasts, that halves again.
    public func trimUnderMemoryPressure() {
        lru.removeExpired()
        lru.trim(toCost: lru.totalCost / 2)
    }
}
