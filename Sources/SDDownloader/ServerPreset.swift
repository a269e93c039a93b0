import CSDCore
import Foundation

/// The C core's server preset (`sd_request_use_server_preset`), read from
/// its header's `SD_SERVER_*` macros: the one place its numbers live, for
/// `SDWebImageDownloaderConfig.server()` above this module.
package enum ServerPreset {
    package static let maxRedirects = Int(SD_SERVER_MAX_REDIRECTS)
    package static let maxResponseBytes = Int(SD_SERVER_MAX_BYTES)
    /// Seconds.
    package static let totalTimeout = TimeInterval(SD_SERVER_TIMEOUT_MS) / 1000
    package static let connectTimeout = TimeInterval(SD_SERVER_CONNECT_TIMEOUT_MS) / 1000
    package static let idleTimeout = TimeInterval(SD_SERVER_IDLE_TIMEOUT_MS) / 1000
    package static let lowSpeedLimit = Int(SD_SERVER_LOW_SPEED_BYTES)
    package static let lowSpeedTime = TimeInterval(SD_SERVER_LOW_SPEED_TIME_MS) / 1000
}
