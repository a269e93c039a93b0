import Dispatch
import Foundation
import SDCache
import SDCoders

extension SDImageCache {
    // MARK: - Remove

    /// Remove `key` from memory and, unless `fromDisk` is false, from disk.
    public func removeImage(forKey key: String?, fromDisk: Bool = true, completion: (@Sendable () -> Void)? = nil) {
        removeImage(forKey: key, cacheType: fromDisk ? .all : .memory, completion: completion)
    }

    /// Remove `key` from the caches `cacheType` names; `completion` after.
    public func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        let queue = config.callbackQueue
        guard let key else {
            if let completion { queue.async(execute: completion) }
            return
        }
        if cacheType.includesMemory { removeImageFromMemory(forKey: key) }
        guard cacheType.includesDisk else {
            if let completion { queue.async(execute: completion) }
            return
        }
        let gen = setPending(key, nil)
        ioQueue.async { [self] in
            disk?.removeData(forKey: key)
            clearPending(key, gen)
            if let completion { queue.async(execute: completion) }
        }
    }

    /// Remove `key` from the memory cache only.
    public func removeImageFromMemory(forKey key: String?) {
        guard let key else { return }
        memoryCache.removeObject(forKey: key)
        weakImages.remove(forKey: key)
    }

    /// Remove the key's disk entry now, on the calling thread. Blocks until the disk writes queued before it are done.
    public func removeImageFromDisk(forKey key: String?) {
        guard let key else { return }
        ioQueue.sync { disk?.removeData(forKey: key) }
    }

    /// Empty the memory cache.
    public func clearMemory() {
        memoryCache.removeAllObjects()
        weakImages.removeAll()
    }

    /// Remove every disk entry; `completion` after.
    public func clearDisk(completion: (@Sendable () -> Void)? = nil) {
        let queue = config.callbackQueue
        ioQueue.async { [self] in
            disk?.removeAllData()
            sweeper.cleared()
            if let completion { queue.async(execute: completion) }
        }
    }

    /// Expiry and size sweep (`maxDiskAge`, `maxDiskSize`, `diskCacheExpireType`).
    public func deleteOldFiles(completion: (@Sendable () -> Void)? = nil) {
        let queue = config.callbackQueue
        ioQueue.async { [self] in
            if let disk { sweeper.sweep(disk, policy: config.sweepPolicy) }
            if let completion { queue.async(execute: completion) }
        }
    }

    /// Where `key` is (`.memory`, `.disk`) among the caches `cacheType` names; `.none` if nowhere.
    public func containsImage(forKey key: String?, cacheType: SDImageCacheType,
                              completion: @escaping @Sendable (SDImageCacheType) -> Void) {
        if cacheType.includesMemory, imageFromMemoryCache(forKey: key) != nil {
            completion(.memory)
            return
        }
        guard cacheType.includesDisk else {
            completion(.none)
            return
        }
        diskImageExists(withKey: key) { completion($0 ? .disk : .none) }
    }

    /// Empty the caches `cacheType` names; `completion` after.
    public func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?) {
        if cacheType.includesMemory { clearMemory() }
        if cacheType.includesDisk { clearDisk(completion: completion) } else if let completion {
            config.callbackQueue.async(execute: completion)
        }
    }
}
