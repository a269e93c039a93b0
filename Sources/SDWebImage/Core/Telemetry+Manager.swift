import Foundation
import Logging
import Metrics
import SDDownloader

/// The manager's share of `Telemetry` (SDDownloader): how loads end and
/// where their images came from. Same rules: nothing unless a backend wants
/// it, recorded off the caller's thread.
extension Telemetry {
    static let managerLog = Logger(label: "sdwebimage.manager")
    static let memoryHits = Counter(label: "sdwebimage_cache_hits_total", dimensions: [("tier", "memory")])
    static let diskHits = Counter(label: "sdwebimage_cache_hits_total", dimensions: [("tier", "disk")])
    static let misses = Counter(label: "sdwebimage_cache_misses_total")

    /// A load's cache query answered.
    static func cacheQueried(hit: Bool, _ type: SDImageCacheType) {
        guard metricsOn else { return }
        queue.async {
            if !hit { misses.increment() } else if type == .memory { memoryHits.increment() } else { diskHits.increment() }
        }
    }

    static let cacheLog = Logger(label: "sdwebimage.cache")
    private static let outageLock = NSLock()
    nonisolated(unsafe) private static var failingCaches = Set<ObjectIdentifier>()

    /// A disk write of `cache` ended: a failure is a warning once per outage
    /// (a full or read-only disk fails every write until it is fixed), then
    /// debug; the first success after it says it is over.
    static func diskWrite(_ error: (any Error)?, _ cache: AnyObject) {
        let id = ObjectIdentifier(cache)
        outageLock.lock()
        let first = error != nil && failingCaches.insert(id).inserted
        let recovered = error == nil && failingCaches.remove(id) != nil
        outageLock.unlock()
        guard error != nil || recovered else { return }
        let what = error.map { "\($0)" } ?? ""
        queue.async {
            if recovered {
                cacheLog.info("disk cache writes work again")
            } else {
                cacheLog.log(level: first ? .warning : .debug, "disk cache write failed; memory still serves",
                             metadata: ["error": "\(what)"])
            }
        }
    }

    /// A load's last word.
    static func loadEnded(_ key: String?, _ error: (any Error)?, _ type: SDImageCacheType) {
        let level: Logger.Level = error == nil ? .trace : .debug
        guard managerLog.logLevel <= level else { return }
        if let e = error as? SDWebImageError, e.code == .cancelled { return }
        let source = switch type {
        case .memory: "memory"
        case .disk: "disk"
        case .all: "cache"
        default: "network"
        }
        let what = error.map { "\($0)" }
        queue.async {
            var metadata: Logger.Metadata = ["key": "\(key.map(redacted) ?? "-")", "source": "\(source)"]
            if let what { metadata["error"] = "\(what)" }
            managerLog.log(level: level, what == nil ? "load done" : "load failed", metadata: metadata)
        }
    }
}

/// What the tiers above the manager (the Redis cache, the fleet loader) log
/// for a URL: credentials redacted, by the same rule as everything else.
package enum LogText {
    package static func url(_ s: String) -> String { Telemetry.redacted(s) }
}
