import Foundation
import Logging
import Metrics
import SDDownloader

/// One manager's lines and counters: how loads end and where their images
/// came from. Same rules as the loader's: nothing unless the instance's logger
/// or a metrics backend wants it, recorded off the caller's thread.
final class ManagerTelemetry: Sendable {
    let log: Logger
    let memoryHits: Counter
    let diskHits: Counter
    let misses: Counter

    init(_ t: SDTelemetry) {
        log = t.logger
        memoryHits = Counter(label: "sdwebimage_cache_hits_total", dimensions: t.metricsDimensions + [("tier", "memory")])
        diskHits = Counter(label: "sdwebimage_cache_hits_total", dimensions: t.metricsDimensions + [("tier", "disk")])
        misses = Counter(label: "sdwebimage_cache_misses_total", dimensions: t.metricsDimensions)
    }

    /// A load's cache query answered.
    func cacheQueried(hit: Bool, _ type: SDImageCacheType) {
        guard Telemetry.metricsOn else { return }
        Telemetry.queue.async { [self] in
            if !hit { misses.increment() } else if type == .memory { memoryHits.increment() } else { diskHits.increment() }
        }
    }

    /// A load's last word.
    func loadEnded(_ key: String?, _ error: (any Error)?, _ type: SDImageCacheType) {
        let level: Logger.Level = error == nil ? .trace : .debug
        guard log.logLevel <= level else { return }
        if let e = error as? SDWebImageError, e.code == .cancelled { return }
        let source = switch type {
        case .memory: "memory"
        case .disk: "disk"
        case .all: "cache"
        default: "network"
        }
        let what = error.map { "\($0)" }
        let log = self.log
        Telemetry.queue.async {
            var metadata: Logger.Metadata = ["key": "\(key.map(Telemetry.redacted) ?? "-")", "source": "\(source)"]
            if let what { metadata["error"] = "\(what)" }
            log.log(level: level, what == nil ? "load done" : "load failed", metadata: metadata)
        }
    }
}

extension Telemetry {
    private static let outageLock = NSLock()
    nonisolated(unsafe) private static var failingCaches = Set<ObjectIdentifier>()

    /// A disk write of `cache` ended: a failure is a warning once per outage
    /// (a full or read-only disk fails every write until it is fixed), then
    /// debug; the first success after it says it is over. To `log`, the cache's.
    static func diskWrite(_ error: (any Error)?, _ cache: AnyObject, _ log: Logger) {
        let id = ObjectIdentifier(cache)
        outageLock.lock()
        let first = error != nil && failingCaches.insert(id).inserted
        let recovered = error == nil && failingCaches.remove(id) != nil
        outageLock.unlock()
        guard error != nil || recovered else { return }
        let what = error.map { "\($0)" } ?? ""
        queue.async {
            if recovered {
                log.info("disk cache writes work again")
            } else {
                log.log(level: first ? .warning : .debug, "disk cache write failed; memory still serves",
                        metadata: ["error": "\(what)"])
            }
        }
    }
}

/// What the tiers above the manager (the Redis cache, the fleet loader) log
/// for a URL: credentials redacted, by the same rule as everything else.
package enum LogText {
    package static func url(_ s: String) -> String { Telemetry.redacted(s) }
}
