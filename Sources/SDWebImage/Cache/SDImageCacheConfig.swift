import Foundation
import SDCache

/// Where a result came from / where to look or store.
public enum SDImageCacheType: Int, Sendable {
    case none = 0, disk = 1, memory = 2, all = 3

    var includesMemory: Bool { self == .memory || self == .all }
    var includesDisk: Bool { self == .disk || self == .all }
}

/// Query flags, SDWebImage's names and bits.
public struct SDImageCacheOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// On a memory hit, also read the bytes from disk (asynchronously).
    public static let queryMemoryData = Self(rawValue: 1 << 0)
    /// …synchronously.
    public static let queryMemoryDataSync = Self(rawValue: 1 << 1)
    /// On a memory miss, read the disk synchronously (the callback runs before the call returns).
    public static let queryDiskDataSync = Self(rawValue: 1 << 2)
    /// Decode within `imageScaleDownLimitBytes` (default 60 MB).
    public static let scaleDownLargeImages = Self(rawValue: 1 << 3)
    /// Bytes only: no image from the disk.
    public static let avoidDecodeImage = Self(rawValue: 1 << 4)
}

public typealias SDImageCacheConfigExpireType = DiskCacheExpireType

/// Limits and behaviour of an `SDImageCache`. Thread-safe.
public final class SDImageCacheConfig: @unchecked Sendable {
    public static let `default` = SDImageCacheConfig()

    private let lock = NSLock()
    private var _shouldCacheImagesInMemory = true
    private var _shouldUseWeakMemoryCache = false
    private var _maxMemoryCost = SDImageCacheConfig.defaultMaxMemoryCost
    private var _maxMemoryCount = 0
    private var _maxDiskAge: TimeInterval = 60 * 60 * 24 * 7
    private var _maxDiskSize = 0
    private var _diskCacheExpireType = SDImageCacheConfigExpireType.accessDate
    private var _diskSweepInterval: TimeInterval = 30 * 60
    private var _callbackQueue = sdDefaultCallbackQueue
    var onChange: (@Sendable () -> Void)?

    /// 1/4 of physical memory, at most 512 MiB: Linux has no memory warnings
    /// to empty the cache for us, so the limit must be real.
    public static let defaultMaxMemoryCost: Int = {
        let pages = sysconf(Int32(_SC_PHYS_PAGES)), size = sysconf(Int32(_SC_PAGESIZE))
        let ram = pages > 0 && size > 0 ? pages * size : 1 << 30
        return min(ram / 4, 512 << 20)
    }()

    public init() {}

    private func get<T>(_ v: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return v() }
    private func set(_ body: () -> Void) {
        lock.lock()
        body()
        let cb = onChange
        lock.unlock()
        cb?()
    }

    public var shouldCacheImagesInMemory: Bool {
        get { get { _shouldCacheImagesInMemory } }
        set { set { _shouldCacheImagesInMemory = newValue } }
    }
    /// Also keep a weak reference to every image put in memory: one evicted
    /// by the limits but still alive elsewhere (on screen, in a list) comes
    /// back from memory instead of a disk read and a decode. Default false,
    /// as SDWebImage since 5.12.
    public var shouldUseWeakMemoryCache: Bool {
        get { get { _shouldUseWeakMemoryCache } }
        set { set { _shouldUseWeakMemoryCache = newValue } }
    }
    /// Bytes of decoded pixels the memory cache may hold (0 = no limit).
    public var maxMemoryCost: Int {
        get { get { _maxMemoryCost } }
        set { set { _maxMemoryCost = max(0, newValue) } }
    }
    /// Images the memory cache may hold (0 = no limit).
    public var maxMemoryCount: Int {
        get { get { _maxMemoryCount } }
        set { set { _maxMemoryCount = max(0, newValue) } }
    }
    /// Seconds an entry lives on disk (default one week; < 0 never expires; 0 = all expired).
    public var maxDiskAge: TimeInterval {
        get { get { _maxDiskAge } }
        set { set { _maxDiskAge = newValue } }
    }
    /// Bytes on disk (0 = no limit); when exceeded the oldest go until half is left.
    public var maxDiskSize: Int {
        get { get { _maxDiskSize } }
        set { set { _maxDiskSize = max(0, newValue) } }
    }
    /// Ours: a write sweeps expired entries when the last sweep is this old
    /// (default 30 min; SDWebImage sweeps when an app enters the background,
    /// which a Linux process never does). The size limit is kept on every
    /// write regardless.
    public var diskSweepInterval: TimeInterval {
        get { get { _diskSweepInterval } }
        set { set { _diskSweepInterval = max(0, newValue) } }
    }
    public var diskCacheExpireType: SDImageCacheConfigExpireType {
        get { get { _diskCacheExpireType } }
        set { set { _diskCacheExpireType = newValue } }
    }
    /// Where completions run unless the context names a queue.
    public var callbackQueue: DispatchQueue {
        get { get { _callbackQueue } }
        set { set { _callbackQueue = newValue } }
    }

    public func copy() -> SDImageCacheConfig {
        let c = SDImageCacheConfig()
        lock.lock()
        defer { lock.unlock() }
        c._shouldCacheImagesInMemory = _shouldCacheImagesInMemory
        c._shouldUseWeakMemoryCache = _shouldUseWeakMemoryCache
        c._maxMemoryCost = _maxMemoryCost
        c._maxMemoryCount = _maxMemoryCount
        c._maxDiskAge = _maxDiskAge
        c._maxDiskSize = _maxDiskSize
        c._diskCacheExpireType = _diskCacheExpireType
        c._diskSweepInterval = _diskSweepInterval
        c._callbackQueue = _callbackQueue
        return c
    }
}
