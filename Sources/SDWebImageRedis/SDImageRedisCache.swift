import Foundation
import SDCache
import SDSync
import SDWebImage

/// A shared image cache on Redis (ours; SDWebImage has none): the original
/// bytes of each image with its HTTP validators and freshness, shared by
/// every process and machine pointed at the same Redis, so a fleet fetches
/// and decodes an image once, not once per instance.
///
/// Use it as the second tier behind each process's own cache:
///
///     let redis = try SDImageRedisCache(url: "redis://cache.internal:6379/0")
///     let caches = redis.tiered(behind: SDImageCache.shared)
///     let manager = SDWebImageManager(cache: caches, loader: SDWebImageDownloader.shared)
///
/// It answers as a disk tier (`.disk`); it keeps no decoded images in
/// memory (the first tier does). A Redis that is down, slow or full never
/// fails a load: queries miss and stores are dropped within
/// `SDRedisDiskCache.Options.timeout`, with one warning per outage
/// (`SDRedisDiskCache`).
public final class SDImageRedisCache: SDImageCacheProtocol, Sendable {
    /// The Redis tier underneath (keys, values, faults).
    public let store: SDRedisDiskCache
    /// The image cache on that tier: queries decode through the coders
    /// manager like any disk hit.
    public let cache: SDImageCache

    /// A cache on the Redis at `url` (`redis://[user:password@]host[:port][/db]`),
    /// keys under `namespace`. `config` supplies the decode settings; its memory
    /// tier is turned off, and `options.ttl` (not `maxDiskAge`) ages entries.
    public init(url: String, namespace: String = "default", options: SDRedisDiskCache.Options = .init(),
                config: SDImageCacheConfig? = nil) throws {
        store = try SDRedisDiskCache(url: url, namespace: namespace, options: options)
        let c = (config ?? SDImageCacheConfig()).copy()
        c.shouldCacheImagesInMemory = false
        c.shouldTrimMemoryUnderPressure = false  // no memory tier: nothing for a pressure monitor to trim
        c.maxDiskSize = 0  // Redis's maxmemory bounds it; no scans to trim
        c.maxDiskAge = -1  // Redis expires entries itself
        cache = SDImageCache(diskCache: store, path: url + "#" + namespace, config: c)
    }

    /// This tier behind `local`, set up as an L2: a caches manager that asks
    /// `local` first (its memory, then its disk) and this tier on a miss,
    /// stores what a load fetched in both (`SDImageCachesManager` alone
    /// stores to its highest-priority cache only, as SDWebImage's), and a
    /// 304 renews both; and a Redis hit is copied to `local`'s disk, so the
    /// next load of it stays on the machine.
    public func tiered(behind local: any SDImageCacheProtocol) -> SDImageCachesManager {
        let caches = SDImageCachesManager()
        caches.caches = [self, local]  // the last one is asked first
        caches.storeOperationPolicy = .concurrent
        state.withLock { $0.promotion = local }
        return caches
    }

    /// The cache a Redis hit is copied to, and the hits so far.
    private let state = Locked<(promotion: (any SDImageCacheProtocol)?, hits: Int)>((nil, 0))

    /// Queries this tier answered from Redis (an image, or bytes when only
    /// bytes were asked for) since it was made: what a caller cannot tell
    /// from the `.disk` a hit of either tier reports.
    public var hits: Int {
        state.withLock { $0.hits }
    }

    public func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?,
                           cacheType: SDImageCacheType,
                           completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)? {
        let local = state.withLock { $0.promotion }
        return cache.queryImage(forKey: key, options: options, context: context, cacheType: cacheType) {
            image, data, type in
            if type == .disk {
                self.state.withLock { $0.hits += 1 }
            }
            // the bytes only, to disk: the image may be a thumbnail of them
            if type == .disk, let local, let key, let data {
                local.store(nil, imageData: data, forKey: key, cacheType: .disk,
                            extendedData: self.store.takeExtendedDataOfLastRead(forKey: key), completion: nil)
            }
            completion?(image, data, type)
        }
    }

    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      completion: (@Sendable ((any Error)?) -> Void)?) {
        cache.store(image, imageData: imageData, forKey: key, cacheType: cacheType, completion: completion)
    }

    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?) {
        cache.store(image, imageData: imageData, forKey: key, cacheType: cacheType, extendedData: extendedData,
                    completion: completion)
    }

    public func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        cache.removeImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    public func containsImage(forKey key: String?, cacheType: SDImageCacheType,
                              completion: @escaping @Sendable (SDImageCacheType) -> Void) {
        cache.containsImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    public func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        cache.clear(with: cacheType, completion: completion)
    }

    public func extendedData(forKey key: String?) -> Data? { cache.extendedData(forKey: key) }

    public func touchDiskEntry(forKey key: String?) { cache.touchDiskEntry(forKey: key) }

    public func storeExtendedData(_ data: Data?, forKey key: String?) throws {
        try cache.storeExtendedData(data, forKey: key)
    }

    /// Wait until every store and removal issued so far has reached Redis
    /// (or been dropped in an outage).
    public func waitForPendingWrites() { cache.waitForPendingWrites() }
}
