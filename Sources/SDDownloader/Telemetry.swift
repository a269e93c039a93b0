import CSDCore
import Dispatch
import Foundation
import Logging
import Metrics
import SDCoders
import SDSync

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
/// Where one instance's log lines and metrics go, as swift-log advises for
/// libraries: the application's `Logger` (its handler, level and metadata),
/// given per instance; by default a logger that drops everything, so a
/// library that was not asked prints nothing. Metrics carry the instance's
/// `metricsDimensions` (say `[("instance", "thumbnails")]`) on every series.
public struct SDTelemetry: Sendable {
    /// Where the lines go.
    public var logger: Logger
    /// Dimensions added to every metric this instance records.
    public var metricsDimensions: [(String, String)]

    /// `logger`'s lines and metrics with `metricsDimensions`.
    public init(logger: Logger, metricsDimensions: [(String, String)] = []) {
        self.logger = logger
        self.metricsDimensions = metricsDimensions
    }

    /// Nothing logged (metrics still go to the bootstrapped backend, undimensioned).
    public static var none: SDTelemetry { SDTelemetry(logger: Logger.sdNoOp) }
}

extension Logger {
    /// A logger that drops every line: the libraries' default.
    public static var sdNoOp: Logger { Logger(label: "sdwebimage", factory: { _ in SwiftLogNoOpLogHandler() }) }
}

/// One loader's counters and logger (`SDTelemetry` made concrete).
package final class LoaderTelemetry: Sendable {
    package let log: Logger
    let downloads: Counter
    let bytes: Counter
    /// Bytes of files whose transfers ended once their thumbnails settled, not fetched.
    let bytesNotFetched: Counter
    let downloadTime: Metrics.Timer
    let decodeTime: Metrics.Timer
    /// Transfers submitted and not yet complete, over this loader.
    let inFlight: Gauge
    let dims: [(String, String)]
    private let running = Locked(0)

    package init(_ t: SDTelemetry) {
        log = t.logger
        dims = t.metricsDimensions
        downloads = Counter(label: "sdwebimage_downloads_total", dimensions: dims)
        bytes = Counter(label: "sdwebimage_download_bytes_total", dimensions: dims)
        bytesNotFetched = Counter(label: "sdwebimage_download_bytes_not_fetched_total", dimensions: dims)
        downloadTime = Metrics.Timer(label: "sdwebimage_download_duration_seconds", dimensions: dims)
        decodeTime = Metrics.Timer(label: "sdwebimage_decode_duration_seconds", dimensions: dims)
        inFlight = Gauge(label: "sdwebimage_downloads_in_flight", dimensions: dims)
    }

    /// A transfer is being submitted (its completion may come before
    /// submit returns); then `accepted` or `refused`.
    func started() { running.withLock { $0 += 1 } }

    func accepted() {
        guard Telemetry.metricsOn else { return }
        let n = running.current
        Telemetry.queue.async { [self] in downloads.increment(); inFlight.record(n) }
    }

    func refused() { running.withLock { $0 -= 1 } }

    /// Loop thread: a transfer ended (everything here is already copied out).
    func finished(_ url: String, _ outcome: Result<DownloadResult, DownloadError>) {
        let n = running.withLock { $0 -= 1; return $0 }
        let detail = log.logLevel <= .trace
        let failures = log.logLevel <= .debug
        let metricsOn = Telemetry.metricsOn
        guard metricsOn || failures else { return }
        Telemetry.queue.async { [self] in
            switch outcome {
            case .success(let r):
                if metricsOn {
                    bytes.increment(by: Int64(r.metrics.bytes))
                    let rest = r.metrics.fullLength - r.metrics.resumedBytes - r.metrics.bytes
                    if r.metrics.endedEarly && rest > 0 { bytesNotFetched.increment(by: Int64(rest)) }
                    downloadTime.recordNanoseconds(Int64(r.metrics.totalMs * 1e6))
                    if r.image != nil { decodeTime.recordNanoseconds(Int64(r.metrics.decodeMs * 1e6)) }
                }
                if detail {
                    log.trace("downloaded", metadata: [
                        "url": "\(Telemetry.redacted(url))", "bytes": "\(r.metrics.bytes)", "ms": "\(Int(r.metrics.totalMs))",
                        "status": "\(r.response?.statusCode ?? 0)",
                    ])
                }
            case .failure(let e):
                let kind = Telemetry.kind(e.code)
                if metricsOn && e.code != .cancelled {
                    Counter(label: "sdwebimage_download_errors_total", dimensions: dims + [("kind", kind)]).increment()
                }
                if failures && e.code != .cancelled {
                    log.debug("download failed", metadata: [
                        "url": "\(Telemetry.redacted(url))", "kind": "\(kind)", "error": "\(e.message)",
                    ])
                }
            }
            if metricsOn { inFlight.record(n) }
        }
    }
}

package enum Telemetry {
    package static let queue = DispatchQueue(label: "sdwebimage.telemetry", qos: .utility)

    /// A metrics backend was bootstrapped: otherwise nothing is recorded.
    package static let metricsOn: Bool = !(MetricsSystem.factory is NOOPMetricsHandler)

    private static let coreLock = NSLock()
    nonisolated(unsafe) private static var core = Logger.sdNoOp  // under coreLock

    /// Where the C core's diagnostics go (`sd_set_log_callback`: one callback
    /// per process, so one logger per process, not per instance); by default
    /// nowhere. Setting it installs the bridge at the level it wants.
    package static var coreLogger: Logger {
        get { coreLock.lock(); defer { coreLock.unlock() }; return core }
        set {
            coreLock.lock(); core = newValue; coreLock.unlock()
            let level = newValue.logLevel
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
                let log = Telemetry.coreLogger
                Telemetry.queue.async { log.log(level: swiftLevel, "\(text)") }
            }, max, nil)
        }
    }

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
}
