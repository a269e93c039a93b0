import Dispatch
import Foundation
import SDCache
import SDCoders

extension SDImageCache {
    /// The image for `key`, from memory or disk (decoded as `options` and `context` say), or nil.
    public func image(forKey key: String?, options: SDImageCacheOptions = [], context: SDWebImageContext? = nil,
                      cacheType: SDImageCacheType = .all) async -> (image: SDImage?, data: Data?, cacheType: SDImageCacheType) {
        await awaitCallback { done in
            var ctx = context ?? [:]
            ctx[.callbackQueue] = DispatchQueue.global()
            queryCacheOperation(forKey: key, options: options, context: ctx, cacheType: cacheType) { image, data, type in
                done((image, data, type))
            }
        }
    }

    /// Store in the tiers `cacheType` names; returns once it is stored and throws the
    /// disk error if the disk write failed.
    public func store(_ image: SDImage?, imageData: Data? = nil, forKey key: String?,
                      cacheType: SDImageCacheType = .all) async throws {
        let error: (any Error)? = await awaitCallback { c in
            store(image, imageData: imageData, forKey: key, cacheType: cacheType) { c($0) }
        }
        if let error { throw error }
    }

    /// Remove every disk entry; returns when they are gone.
    public func clearDisk() async {
        await awaitCallback { c in clearDisk { c(()) } }
    }

    /// Remove expired entries and trim to `maxDiskSize`; returns when done.
    public func deleteOldFiles() async {
        await awaitCallback { c in deleteOldFiles { c(()) } }
    }

    /// Removes from memory and (after pending writes) from disk.
    public func removeImage(forKey key: String?, cacheType: SDImageCacheType) async {
        await awaitCallback { c in removeImage(forKey: key, cacheType: cacheType) { c(()) } }
    }

    /// Where the image is (`.memory`, `.disk`) or `.none`, without decoding.
    public func containsImage(forKey key: String?, cacheType: SDImageCacheType = .all) async -> SDImageCacheType {
        await awaitCallback { c in containsImage(forKey: key, cacheType: cacheType) { c($0) } }
    }

    /// The disk entries: how many, and their total size in bytes.
    public func calculateSize() async -> (fileCount: Int, totalSize: Int) {
        await awaitCallback { c in calculateSize { c(($0, $1)) } }
    }

    /// Whether the disk holds an entry for `key` (off the caller's thread;
    /// `diskImageDataExists(withKey:)` is the blocking form, and like every
    /// synchronous disk call it waits for nothing: writes still queued are
    /// seen through the pending-write table).
    public func diskImageExists(withKey key: String?) async -> Bool {
        await awaitCallback { c in diskImageExists(withKey: key) { c($0) } }
    }
}
