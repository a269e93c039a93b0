import Dispatch
import Foundation
import SDCache
import SDCoders

extension SDImageCache {
    // MARK: - Info

    /// Bytes of decoded pixels held in memory, and how many images.
    public var memoryCost: Int { memoryCache.totalCost }
    /// Images in the memory cache now.
    public var memoryCount: Int { memoryCache.totalCount }

    /// Bytes on disk (allocated). Blocks until the disk writes queued before it are done.
    public func totalDiskSize() -> Int { ioQueue.sync { disk?.totalSize() ?? 0 } }
    /// Entries in the disk cache now. Blocks until the disk writes queued before it are done.
    public func totalDiskCount() -> Int { ioQueue.sync { disk?.totalCount() ?? 0 } }

    /// `completion` gets how many entries the disk cache holds, and their bytes.
    public func calculateSize(completion: @escaping @Sendable (_ fileCount: Int, _ totalSize: Int) -> Void) {
        let queue = config.callbackQueue
        ioQueue.async { [self] in
            let entries = disk?.entries() ?? []
            let size = entries.reduce(0) { $0 + $1.bytes }
            queue.async { completion(entries.count, size) }
        }
    }

    /// The file that holds (or would hold) the key's bytes; nil for a disk tier without files.
    public func cachePath(forKey key: String?) -> String? {
        guard let key else { return nil }
        // a tier without files has none (SDWebImage's rule); one that did not
        // open still names where the default tier would keep it
        if let disk { return disk.filePath(forKey: key) }
        return diskCachePath + "/" + DiskCache.fileName(forKey: key)
    }

    /// Entries on disk, oldest access first (for tools such as `sdimage cache info`). Blocks until the disk writes queued before it are done.
    public func diskEntries() -> [DiskCache.Entry] {
        ioQueue.sync { (disk?.entries() ?? []).sorted { $0.accessDate < $1.accessDate } }
    }

    /// Block until queued disk writes are done.
    public func waitForPendingWrites() { ioQueue.sync {} }
}
