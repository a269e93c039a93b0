import Foundation
import SDTestSupport
import SDWebImage

extension SDWebImageDownloaderConfig {
    /// A configuration with the suite's patient timeouts (`Patience`); every
    /// other setting is the default, or `base`'s.
    public static func patient(_ base: SDWebImageDownloaderConfig? = nil) -> SDWebImageDownloaderConfig {
        let config = base?.copy() ?? SDWebImageDownloaderConfig()  // patience: the helper itself
        config.downloadTimeout = Patience.idle
        config.downloadTotalTimeout = Patience.total
        config.downloadConnectTimeout = Patience.connect
        return config
    }
}

/// A downloader with the suite's patient timeouts: the one every test uses
/// unless it tests a timeout. `config`'s other settings are kept.
public func patientDownloader(_ config: SDWebImageDownloaderConfig? = nil) -> SDWebImageDownloader {
    SDWebImageDownloader(config: .patient(config))  // patience: the helper itself
}

/// Makes `SDWebImageDownloaderConfig.default` patient, for a child process
/// whose test is about the shared downloader (`SDWebImageDownloader.shared`
/// copies the default configuration when first used, so call this first).
public func makeDefaultsPatient() {
    let d = SDWebImageDownloaderConfig.default
    d.downloadTimeout = Patience.idle
    d.downloadTotalTimeout = Patience.total
    d.downloadConnectTimeout = Patience.connect
}
