import CSDCore
import Dispatch
import Foundation
import Logging
import Metrics
import SDCoders

/// What the loaders and the C core tell swift-log and swift-metrics.
///
/// Both APIs do nothing until the program bootstraps a backend
/// (`LoggingSystem.bootstrap`, `MetricsSystem.bootstrap`); do that before
/// the first loader is made, as swift-log and swift-metrics advise: loggers
/// and metrics are made once, at first use. Levels follow swift-log's advice
/// for libraries: one transfer's story is `.trace` (success) or `.debug`
/// (failure); `.warning` and `.error` only for trouble the library cannot
/// handle itself. Nothing is logged or recorded on the loop thread: events
/// hop to one utility queue, and only when a backend wants them.
package enum Telemetry {
    package static let downloaderLog = Logger(label: "sdwebimage.downloader")
    /// The C core's diagnostics (`sd_set_log_callback`).
    static let coreLog = Logger(label: "sdwebimage.core")
    package static let queue = DispatchQueue(label: "sdwebimage.telemetry", qos: .utility)

    /// A metrics backend was bootstrapped: otherwise nothing is recorded.
    package static let metricsOn: Bool = !(MetricsSystem.factory is NOOPMetricsHandler)

    static let downloads = Counter(label: "sdwebimage_downloads_total")
    static let bytes = Counter(label: "sdwebimage_download_bytes_total")
    static let downloadTime = Metrics.Timer(label: "sdwebimage_download_duration_seconds")
    static let decodeTime = Metrics.Timer(label: "sdwebimage_decode_duration_seconds")
    /// Transfers submitted and not yet complete, over every loader.
    static let inFlight = Gauge(label: "sdwebimage_downloads_in_flight")
    private static let lock = NSLock()
    nonisolated(unsafe) private static var running = 0

    /// The C core's diagnostics into `sdwebimage.core`, installed once (the
    /// first loader does), at the level that logger wants.
    static let coreBridge: Void = {
        let level = coreLog.logLevel
        let max: sd_log_level = level <= .trace ? SD_LOG_DEBUG : level <= .debug ? SD_LOG_INFO
            : level <= .warning ? SD_LOG_WARNING : SD_LOG_ERROR
        _ = sd_set_log_callback({ level, message, _ in
            let text = String(cString: message!)
            let swiftLevel: Logger.Level = switch level {
            case SD_LOG_ERROR: .error
            case SD_LOG_WARNING: .warning
            case SD_LOG_INFO: .debug  // per request (a policy refusal): swift-log's debug
            default: .trace
            }
            Telemetry.queue.async { coreLog.log(level: swiftLevel, "\(text)") }
        }, max, nil)
    }()

    /// `url` as the logs write it: the user info, query values and fragment
    /// redacted (`sd_redact_url`, the C core's rule, so both halves agree).
    package static func redacted(_ url: String) -> String {
        url.withCString { c in
            let n = Int(sd_redact_url(c, nil, 0))
            guard n >= 0 else { return "" }
            var out = [CChar](repeating: 0, count: n + 1)
            _ = sd_redact_url(c, &out, n + 1)
            return out.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }
    }

    /// A short, stable name for an error kind (a metrics dimension).
    package static func kind(_ status: SDStatus) -> String {
        switch status {
        case .timedOut: "timeout"
        case .cannotResolveHost: "dns"
        case .cannotConnect: "connect"
        case .tls: "tls"
        case .badStatus: "http_status"
        case .badContentType: "content_type"
        case .tooLarge: "too_large"
        case .truncatedBody, .network: "network"
        case .tooManyRedirects: "redirects"
        case .decodeFailed, .corruptData, .unsupportedFormat, .truncatedHeader: "decode"
        case .outOfMemory: "memory"
        case .cancelled: "cancelled"
        case .notModified: "not_modified"
        default: status.rawValue == SD_EPOLICY.rawValue ? "policy" : "other"
        }
    }

    /// A transfer is being submitted (its completion may come before
    /// submit returns); then `accepted` or `refused`.
    static func started() {
        lock.lock(); running += 1; lock.unlock()
    }

    static func accepted() {
        guard metricsOn else { return }
        lock.lock(); let n = running; lock.unlock()
        queue.async { downloads.increment(); inFlight.record(n) }
    }

    static func refused() {
        lock.lock(); running -= 1; lock.unlock()
    }

    /// Loop thread: a transfer ended (everything here is already copied out).
    static func finished(_ url: String, _ outcome: Result<DownloadResult, DownloadError>) {
        lock.lock(); running -= 1; let n = running; lock.unlock()
        let detail = downloaderLog.logLevel <= .trace
        let failures = downloaderLog.logLevel <= .debug
        guard metricsOn || failures else { return }
        queue.async {
            switch outcome {
            case .success(let r):
                if metricsOn {
                    bytes.increment(by: Int64(r.metrics.bytes))
                    downloadTime.recordNanoseconds(Int64(r.metrics.totalMs * 1e6))
                    if r.image != nil { decodeTime.recordNanoseconds(Int64(r.metrics.decodeMs * 1e6)) }
                }
                if detail {
                    downloaderLog.trace("downloaded", metadata: [
                        "url": "\(redacted(url))", "bytes": "\(r.metrics.bytes)", "ms": "\(Int(r.metrics.totalMs))",
                        "status": "\(r.response?.statusCode ?? 0)",
                    ])
                }
            case .failure(let e):
                let kind = kind(e.code)
                if metricsOn && e.code != .cancelled {
                    Counter(label: "sdwebimage_download_errors_total", dimensions: [("kind", kind)]).increment()
                }
                if failures && e.code != .cancelled {
                    downloaderLog.debug("download failed", metadata: [
                        "url": "\(redacted(url))", "kind": "\(kind)", "error": "\(e.message)",
                    ])
                }
            }
            if metricsOn { inFlight.record(n) }
        }
    }
}
