import Foundation
import Logging
import SDCache
import SDCoders
import SDSync

/// Where a result came from / where to look or store.
public enum SDImageCacheType: Int, Sendable {
    /// Not from a cache (the network), or: no cache.
    case none = 0
    /// The disk cache.
    case disk = 1
    /// The memory cache.
    case memory = 2
    /// Both: memory first, then disk.
    case all = 3

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
    /// An animation decodes to its first frame; a memory hit on an animated
    /// image gives a new still image of its first frame.
    public static let decodeFirstFrameOnly = Self(rawValue: 1 << 5)
    /// Decode and keep every frame of an animation read from disk.
    public static let preloadAllFrames = Self(rawValue: 1 << 6)
    /// The result is always of `.animatedImageClass` (else a miss).
    public static let matchAnimatedImageClass = Self(rawValue: 1 << 7)
}

/// SDWebImage's name for the date that ages a disk entry.
public typealias SDImageCacheConfigExpireType = DiskCacheExpireType

/// Limits and behaviour of an `SDImageCache`. Thread-safe: every setting
/// lives in one locked `State`.
public final class SDImageCacheConfig: Sendable {
    /// The config `SDImageCache.shared` and caches made without one use.
    public static let `default` = SDImageCacheConfig()

    private struct State {
        var shouldCacheImagesInMemory = true
        var shouldUseWeakMemoryCache = false
        var maxMemoryCost = SDImageCacheConfig.defaultMaxMemoryCost
        var maxMemoryCount = 0
        var maxMemoryAge: TimeInterval = 0
        var maxMemoryEntryCost = 0
        var shouldTrimMemoryUnderPressure = true
        var memoryPressureThreshold: Double = 10
        var memoryPressureFile: String?? = .none
        var memoryPressureInterval: TimeInterval = 2
        var maxDiskAge: TimeInterval = 60 * 60 * 24 * 7
        var maxDiskSize = 0
        var diskCacheExpireType = SDImageCacheConfigExpireType.accessDate
        var diskSweepInterval: TimeInterval = 30 * 60
        var callbackQueue = sdDefaultCallbackQueue
        var diskCacheClass: (any SDDiskCacheProtocol.Type)?
        var memoryCacheClass: (any SDMemoryCacheProtocol.Type)?
        var decodeLimits = DecodeLimits()
        var decoderIsolation: DecoderIsolation?
        var logger = Logger.sdNoOp
    }

    private let state = Locked(State())
    private let observer = Locked<(@Sendable () -> Void)?>(nil)
    /// The cache that copied this config: told of every change.
    var onChange: (@Sendable () -> Void)? {
        get { observer.current }
        set { observer.set(newValue) }
    }

    /// 1/4 of the memory this process may use, at most 512 MiB: Linux has
    /// no memory warnings to empty the cache for us, so the limit must be
    /// real. In a container that is the cgroup's limit (`memory.max`, or v1's
    /// `memory.limit_in_bytes`), not the host's RAM.
    public static let defaultMaxMemoryCost: Int = min(SystemMemory.limit / 4, 512 << 20)

    /// A config with every default.
    public init() {}

    private subscript<T>(_ key: WritableKeyPath<State, T>) -> T {
        get { state.withLock { $0[keyPath: key] } }
        set {
            state.withLock { $0[keyPath: key] = newValue }
            onChange?()
        }
    }

    /// Where the cache's lines go (a disk that stops taking writes, memory
    /// pressure): the application's `Logger`, as swift-log advises for
    /// libraries. Default: nowhere.
    public var logger: Logger {
        get { self[\.logger] }
        set { self[\.logger] = newValue }
    }

    /// Keep decoded images in the memory tier (default true).
    public var shouldCacheImagesInMemory: Bool {
        get { self[\.shouldCacheImagesInMemory] }
        set { self[\.shouldCacheImagesInMemory] = newValue }
    }
    /// Also keep a weak reference to every image put in memory: one evicted
    /// by the limits but still alive elsewhere (on screen, in a list) comes
    /// back from memory instead of a disk read and a decode. Default false,
    /// as SDWebImage since 5.12.
    public var shouldUseWeakMemoryCache: Bool {
        get { self[\.shouldUseWeakMemoryCache] }
        set { self[\.shouldUseWeakMemoryCache] = newValue }
    }
    /// Bytes of decoded pixels the memory cache may hold (0 = no limit).
    public var maxMemoryCost: Int {
        get { self[\.maxMemoryCost] }
        set { self[\.maxMemoryCost] = max(0, newValue) }
    }
    /// Images the memory cache may hold (0 = no limit).
    public var maxMemoryCount: Int {
        get { self[\.maxMemoryCount] }
        set { self[\.maxMemoryCount] = max(0, newValue) }
    }
    /// Seconds an image stays valid in memory after it was stored (0, the
    /// default: until evicted); an older one is a miss there (the disk may
    /// still have it). Nuke's `ImageCache.ttl`.
    public var maxMemoryAge: TimeInterval {
        get { self[\.maxMemoryAge] }
        set { self[\.maxMemoryAge] = max(0, newValue) }
    }
    /// Bytes one image may cost and still be kept in memory (0, the default:
    /// only `maxMemoryCost` bounds it), so one huge image does not push out
    /// many small ones. Nuke's `entryCostLimit`.
    public var maxMemoryEntryCost: Int {
        get { self[\.maxMemoryEntryCost] }
        set { self[\.maxMemoryEntryCost] = max(0, newValue) }
    }
    /// Ours, for the memory warnings Linux does not send: watch memory
    /// pressure (PSI: the cgroup's `memory.pressure`, else
    /// `/proc/pressure/memory`) and, while some task stalls on memory for
    /// `memoryPressureThreshold` percent of the time or more, halve the
    /// memory tier every 2 s. Default true; read when the cache is made.
    public var shouldTrimMemoryUnderPressure: Bool {
        get { self[\.shouldTrimMemoryUnderPressure] }
        set { self[\.shouldTrimMemoryUnderPressure] = newValue }
    }
    /// PSI `some avg10` percentage from which the memory tier is trimmed (default 10).
    public var memoryPressureThreshold: Double {
        get { self[\.memoryPressureThreshold] }
        set { self[\.memoryPressureThreshold] = min(100, max(0, newValue)) }
    }
    /// The PSI file watched (nil: none); unset: the system's. For tests.
    package var memoryPressureFile: String?? {
        get { self[\.memoryPressureFile] }
        set { self[\.memoryPressureFile] = newValue }
    }
    /// Seconds between two looks at the PSI file (default 2, PSI's own step). For tests.
    package var memoryPressureInterval: TimeInterval {
        get { self[\.memoryPressureInterval] }
        set { self[\.memoryPressureInterval] = max(0.01, newValue) }
    }
    /// Seconds an entry lives on disk (default one week; < 0 never expires; 0 = all expired).
    public var maxDiskAge: TimeInterval {
        get { self[\.maxDiskAge] }
        set { self[\.maxDiskAge] = newValue }
    }
    /// Bytes on disk (0 = no limit); when exceeded the oldest go until half is left.
    public var maxDiskSize: Int {
        get { self[\.maxDiskSize] }
        set { self[\.maxDiskSize] = max(0, newValue) }
    }
    /// Ours: a write sweeps expired entries when the last sweep is this old
    /// (default 30 min; SDWebImage sweeps when an app enters the background,
    /// which a Linux process never does). The size limit is kept on every
    /// write regardless.
    public var diskSweepInterval: TimeInterval {
        get { self[\.diskSweepInterval] }
        set { self[\.diskSweepInterval] = max(0, newValue) }
    }
    /// Which file date ages a disk entry (default `.accessDate`, kept explicitly on reads).
    public var diskCacheExpireType: SDImageCacheConfigExpireType {
        get { self[\.diskCacheExpireType] }
        set { self[\.diskCacheExpireType] = newValue }
    }
    /// Where completions run unless the context names a queue.
    public var callbackQueue: DispatchQueue {
        get { self[\.callbackQueue] }
        set { self[\.callbackQueue] = newValue }
    }
    /// The disk tier's storage for caches made with this config (SDWebImage's
    /// `diskCacheClass`); nil: `DiskCache`, one file per key.
    public var diskCacheClass: (any SDDiskCacheProtocol.Type)? {
        get { self[\.diskCacheClass] }
        set { self[\.diskCacheClass] = newValue }
    }
    /// The memory tier for caches made with this config (SDWebImage's
    /// `memoryCacheClass`); nil: `SDMemoryCache`, a strict LRU by cost.
    public var memoryCacheClass: (any SDMemoryCacheProtocol.Type)? {
        get { self[\.memoryCacheClass] }
        set { self[\.memoryCacheClass] = newValue }
    }

    /// Ours: caps on every image decoded from the disk tier (and from a
    /// shared tier behind it, such as Redis), whatever a query asks —
    /// what `SDWebImageDownloaderConfig.decodeLimits` is for downloads. An
    /// entry passed the downloader's caps when it was fetched, but a folder
    /// or a Redis others can write to may hold anything: give such a cache
    /// the downloader's caps (`.server`). Default: the C core's.
    public var decodeLimits: DecodeLimits {
        get { self[\.decodeLimits] }
        set { self[\.decodeLimits] = newValue }
    }

    /// Ours: decode disk (and shared-tier) hits in sandboxed worker
    /// processes, as `SDWebImageDownloaderConfig.decoderIsolation` does
    /// downloads (a query with no `.imageCoder` of its own). nil: here.
    public var decoderIsolation: DecoderIsolation? {
        get { self[\.decoderIsolation] }
        set { self[\.decoderIsolation] = newValue }
    }

    /// The sweep policy of the disk tier, as configured now.
    var sweepPolicy: DiskSweeper.Policy {
        state.withLock { s in
            DiskSweeper.Policy(maxAge: s.maxDiskAge, maxSize: s.maxDiskSize,
                               expireType: s.diskCacheExpireType, interval: s.diskSweepInterval)
        }
    }

    /// An independent config with the same settings (a cache copies the one it is given).
    public func copy() -> SDImageCacheConfig {
        let c = SDImageCacheConfig()
        c.state.set(state.current)
        return c
    }
}
