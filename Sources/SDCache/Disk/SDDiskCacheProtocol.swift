import Foundation

/// Storage for a cache tier's bytes by key, with a small extended-data blob
/// beside each entry (SDWebImage's `SDDiskCache` protocol, which Swift sees
/// as `SDDiskCacheProtocol`): all `SDImageCache` needs of its disk, so another
/// backend (a database, an object store, a shared tier) sits under it through
/// `SDImageCacheConfig.diskCacheClass` without copying its decode logic.
/// `DiskCache` (one file per key) is the default.
///
/// Threads: writes (set, remove, touch, sweep) come in order from one queue;
/// reads may run concurrently with them and with each other.
public protocol SDDiskCacheProtocol: AnyObject, Sendable {
    /// Open (or create) the storage at `cachePath`; throw when it cannot be used.
    init(cachePath: String) throws
    func containsData(forKey key: String) -> Bool
    /// The bytes, or nil on a miss (an entry that fails its own checks is a miss).
    func data(forKey key: String) -> Data?
    /// Store (replacing) bytes and, when given, their extended data.
    func setData(_ data: Data, forKey key: String, extendedData: Data?) throws
    func extendedData(forKey key: String) -> Data?
    func setExtendedData(_ data: Data?, forKey key: String) throws
    /// Make the entry new again (access time) without rewriting it.
    func touch(forKey key: String)
    func removeData(forKey key: String)
    func removeAllData()
    /// Age out entries older than `maxAge` (< 0: never; 0: all), then, when
    /// `maxSize` > 0 is exceeded, drop the oldest until half of it is left.
    /// Returns how many went.
    @discardableResult
    func removeExpiredData(maxAge: TimeInterval, maxSize: Int, expireType: DiskCacheExpireType) -> Int
    /// Every entry with its size and dates (tools, size accounting).
    func entries() -> [DiskCache.Entry]
    func totalSize() -> Int
    func totalCount() -> Int
    /// The file holding the key's bytes, when the backend has files (nil otherwise).
    func filePath(forKey key: String) -> String?
}

extension DiskCache: SDDiskCacheProtocol {
    public convenience init(cachePath: String) throws {
        try self.init(directory: cachePath)
    }

    public func filePath(forKey key: String) -> String? { cachePath(forKey: key) }
}

/// When a disk tier is swept while the process runs (a Linux daemon has no
/// "entering background" to sweep at): writes keep a running estimate of the
/// tier's bytes (rescanned every 1000 writes and after each sweep, since other
/// processes may share it) instead of listing it on every write, and sweep
/// when it is over the size limit or `interval` has passed since the last
/// sweep. Confined to the tier's writer queue.
public final class DiskSweeper {
    public struct Policy: Sendable {
        public var maxAge: TimeInterval
        public var maxSize: Int
        public var expireType: DiskCacheExpireType
        public var interval: TimeInterval
        public init(maxAge: TimeInterval, maxSize: Int, expireType: DiskCacheExpireType, interval: TimeInterval) {
            self.maxAge = maxAge
            self.maxSize = maxSize
            self.expireType = expireType
            self.interval = interval
        }
    }

    private var bytes: Int?
    private var writesSinceScan = 0
    private var lastSweep = Date()

    public init() {}

    /// After a write of `count` bytes: sweep if the policy says so.
    public func didWrite(_ count: Int, to disk: any SDDiskCacheProtocol, policy: Policy) {
        writesSinceScan += 1
        if policy.maxSize > 0 {
            if let b = bytes, writesSinceScan < 1000 {
                bytes = b + (count + 4095) & ~4095  // allocated blocks, about
            } else {
                bytes = disk.totalSize()
                writesSinceScan = 0
            }
        }
        if (policy.maxSize > 0 && bytes! > policy.maxSize) || Date().timeIntervalSince(lastSweep) >= policy.interval {
            sweep(disk, policy: policy)
        }
    }

    public func sweep(_ disk: any SDDiskCacheProtocol, policy: Policy) {
        disk.removeExpiredData(maxAge: policy.maxAge, maxSize: policy.maxSize, expireType: policy.expireType)
        bytes = policy.maxSize > 0 ? disk.totalSize() : nil
        writesSinceScan = 0
        lastSweep = Date()
    }

    /// The tier was emptied.
    public func cleared() { bytes = nil }
}
