import Dispatch
import Foundation
import SDCache
import SDCoders

extension SDImageCache {
    public func image(forKey key: String?, options: SDImageCacheOptions = [], context: SDWebImageContext? = nil,
                      cacheType: SDImageCacheType = .all) async -> (image: SDImage?, data: Data?, cacheType: SDImageCacheType) {
        await withCheckedContinuation { c in
            var ctx = context ?? [:]
            ctx[.callbackQueue] = DispatchQueue.global()
            queryCacheOperation(forKey: key, options: options, context: ctx, cacheType: cacheType) { image, data, type in
                c.resume(returning: (image, data, type))
            }
        }
    }

    public func store(_ image: SDImage?, imageData: Data? = nil, forKey key: String?,
                      cacheType: SDImageCacheType = .all) async throws {
        let error: (any Error)? = await withCheckedContinuation { c in
            store(image, imageData: imageData, forKey: key, cacheType: cacheType) { c.resume(returning: $0) }
        }
        if let error { throw error }
    }

    public func clearDisk() async {
        await withCheckedContinuation { c in clearDisk { c.resume() } }
    }

    public func deleteOldFiles() async {
        await withCheckedContinuation { c in deleteOldFiles { c.resume() } }
    }

    /// Removes from memory and (after pending writes) from disk.
    public func removeImage(forKey key: String?, cacheType: SDImageCacheType) async {
        await withCheckedContinuation { c in removeImage(forKey: key, cacheType: cacheType) { c.resume() } }
    }

    /// Where the image is (`.memory`, `.disk`) or `.none`, without decoding.
    public func containsImage(forKey key: String?, cacheType: SDImageCacheType = .all) async -> SDImageCacheType {
        await withCheckedContinuation { c in containsImage(forKey: key, cacheType: cacheType) { c.resume(returning: $0) } }
    }

    /// The disk entries: how many, and their total size in bytes.
    public func calculateSize() async -> (fileCount: Int, totalSize: Int) {
        await withCheckedContinuation { c in calculateSize { c.resume(returning: ($0, $1)) } }
    }

    /// Whether the disk holds an entry for `key` (off the caller's thread;
    /// `diskImageDataExists(withKey:)` is the blocking form, and like every
    /// synchronous disk call it waits for nothing: writes still queued are
    /// seen through the pending-write table).
    public func diskImageExists(withKey key: String?) async -> Bool {
        await withCheckedContinuation { c in diskImageExists(withKey: key) { c.resume(returning: $0) } }
    }
}
