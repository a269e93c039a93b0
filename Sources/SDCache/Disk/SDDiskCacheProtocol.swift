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
    /// Whether an entry for `key` exists (without reading it).
    func containsData(forKey key: String) -> Bool
    /// The bytes, or nil on a miss (an entry that fails its own checks is a miss).
    func data(forKey key: String) -> Data?
    /// Store (replacing) bytes and, when given, their extended data.
    func setData(_ data: Data, forKey key: String, extendedData: Data?) throws
    /// The extended data stored with `key`'s entry, or nil.
    func extendedData(forKey key: String) -> Data?
    /// Replace the extended data of an existing entry (nil removes it); throws when
    /// there is no entry.
    func setExtendedData(_ data: Data?, forKey key: String) throws
    /// Make the entry new again (access time) without rewriting it.
    func touch(forKey key: String)
    /// Remove `key`'s entry; a missing one is fine.
    func removeData(forKey key: String)
    /// Remove every entry.
    func removeAllData()
    /// Age out entries older than `maxAge` (< 0: never; 0: all), then, when
    /// `maxSize` > 0 is exceeded, drop the oldest until half of it is left.
    /// Returns how many went.
    @discardableResult
    func removeExpiredData(maxAge: TimeInterval, maxSize: Int, expireType: DiskCacheExpireType) -> Int
    /// Every entry with its size and dates (tools, size accounting).
    func entries() -> [DiskCache.Entry]
    /// Bytes the entries occupy.
    func totalSize() -> Int
    /// How many entries there are.
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
    /// When to sweep, and what: the tier's expiry and size settings.
    public struct Policy: Sendable {
        /// Entries older than this go (< 0: never; 0: all).
        public var maxAge: TimeInterval
        /// Over this many bytes, the oldest go until half is left (0: no limit).
        public var maxSize: Int
        /// Which date ages an entry.
        public var expireType: DiskCacheExpireType
        /// Sweep at least this often, in seconds, even under the size limit.
        public var interval: TimeInterval
        /// A policy from its parts.
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

    /// A sweeper that has seen no writes yet (its clock starts now).
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

    /// Sweep now, and start counting again.
    public func sweep(_ disk: any SDDiskCacheProtocol, policy: Policy) {
        disk.removeExpiredData(maxAge: policy.maxAge, maxSize: policy.maxSize, expireType: policy.expireType)
        bytes = policy.maxSize > 0 ? disk.totalSize() : nil
        writesSinceScan = 0
        lastSweep = Date()
    }

    /// The tier was emptied.
    public func cleared() { bytes = nil }
}
