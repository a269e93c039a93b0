import Dispatch
import Foundation
import SDCache
import SDCoders
import SDSync

/// Memory (strict LRU on decoded pixels) plus disk (one file per key) with
/// SDWebImage 5's API. Disk writes run in order on one queue; reads run
/// concurrently and see writes still in flight, so a store is readable at once.
// @unchecked: the disk tier's handle, pending writes and generation are under `lock`; the memory cache and config are Sendable.
public final class SDImageCache: SDImageCacheProtocol, @unchecked Sendable {
    /// The cache the shared manager uses (namespace "default").
    public static let shared = SDImageCache(namespace: "default")

    /// Limits and behaviour; changes apply from the next operation.
    public let config: SDImageCacheConfig
    /// The folder holding this cache's files.
    public let diskCachePath: String
    /// The memory tier (`config.memoryCacheClass`, default `SDMemoryCache`).
    public let memoryCache: any SDMemoryCacheProtocol
    let weakImages = WeakImageTable()
    /// The disk tier (`config.diskCacheClass`, default `DiskCache`); nil when
    /// it could not be opened (writes then fail with that error).
    public let diskCache: (any SDDiskCacheProtocol)?
    var disk: (any SDDiskCacheProtocol)? { diskCache }
    let diskError: (any Error)?
    /// Trims the memory tier under memory pressure (nil: off, or no PSI here).
    private let pressureMonitor: MemoryPressureMonitor?
    /// The pressure monitor's completed looks at its file (nil: no monitor).
    package var memoryPressurePolls: Int? { pressureMonitor?.polls }
    /// Sweeps the disk tier while the process runs (ioQueue only).
    let sweeper = DiskSweeper()
    let ioQueue = DispatchQueue(label: "SDImageCache.io", qos: .utility)
    let readQueue = DispatchQueue(label: "SDImageCache.read", qos: .userInitiated, attributes: .concurrent)
    let lock = NSLock()
    /// Disk writes not yet done, so reads see them: data, or nil for a removal.
    var pending: [String: (generation: UInt64, data: Data?, extended: Data?)] = [:]
    var generation: UInt64 = 0

    static let directoryLock = NSLock()
    nonisolated(unsafe) private static var customDirectory: String?

    /// The root of caches made without a directory: `$XDG_CACHE_HOME` (else
    /// `~/.cache`) + `/SDWebImage`, unless set; setting nil goes back to that.
    /// Caches made before a change keep their folder.
    public static var defaultDiskCacheDirectory: String! {
        get {
            directoryLock.lock()
            let custom = customDirectory
            directoryLock.unlock()
            if let custom { return custom }
            let env = ProcessInfo.processInfo.environment
            let base = env["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
                ?? (env["HOME"] ?? NSHomeDirectory()) + "/.cache"
            return base + "/SDWebImage"
        }
        set {
            directoryLock.lock()
            customDirectory = newValue
            directoryLock.unlock()
        }
    }

    /// A cache in `<diskCacheDirectory or the default>/<namespace>`. Expired
    /// files are swept in the background at start.
    public convenience init(namespace: String = "default", diskCacheDirectory: String? = nil,
                            config: SDImageCacheConfig? = .default) {
        let config = (config ?? .default).copy()
        let safe = namespace.replacingOccurrences(of: "/", with: "_")
        let path = (diskCacheDirectory ?? Self.defaultDiskCacheDirectory!) + "/" + (safe.isEmpty ? "default" : safe)
        let disk = Result { try (config.diskCacheClass ?? DiskCache.self).init(cachePath: path) }
        self.init(copied: config, path: path, disk: disk)
    }

    /// Ours: a cache whose disk tier is `diskCache`, made by the caller (a
    /// backend whose settings do not fit in a path, e.g. `SDRedisDiskCache`).
    /// `diskCachePath` is `path` (for messages; the tier keeps its own place).
    public convenience init(diskCache: any SDDiskCacheProtocol, path: String, config: SDImageCacheConfig? = .default) {
        self.init(copied: (config ?? .default).copy(), path: path, disk: .success(diskCache))
    }

    private init(copied config: SDImageCacheConfig, path: String, disk: Result<any SDDiskCacheProtocol, any Error>) {
        self.config = config
        diskCachePath = path
        memoryCache = (config.memoryCacheClass ?? SDMemoryCache.self).init(config: config)
        switch disk {
        case .success(let d):
            diskCache = d
            diskError = nil
        case .failure(let e):
            diskCache = nil
            diskError = e
        }
        if config.shouldTrimMemoryUnderPressure,
           let file = config.memoryPressureFile ?? SystemMemory.pressureFile() {
            let memory = memoryCache
            let episode = PressureEpisode()
            pressureMonitor = MemoryPressureMonitor(file: file, threshold: config.memoryPressureThreshold,
                                                    interval: config.memoryPressureInterval) { percent in
                if episode.begins() {
                    config.logger.notice("memory pressure: \(percent)% stalled; trimming the memory cache while it lasts")
                }
                memory.trimUnderMemoryPressure()
                Bitmap.trimPool()  // after the cache: the canvases it just let go of went there
            }
        } else {
            pressureMonitor = nil
        }
        config.onChange = { [weak self] in
            guard let self else { return }
            self.memoryCache.configDidChange(self.config)
        }
        deleteOldFiles(completion: nil)
    }
}

/// One log line per pressure episode, not one per trim: a trim more than
/// 10 s after the last one starts a new episode.
private final class PressureEpisode: Sendable {
    private let last = Locked<UInt64>(0)

    func begins() -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        return last.withLock { last in
            defer { last = now }
            return last == 0 || now - last > 10_000_000_000
        }
    }
}
