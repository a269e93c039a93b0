import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Per-download flags, SDWebImage's names and bits.
public struct SDWebImageDownloaderOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Queue behind normal and high priority downloads.
    public static let lowPriority = Self(rawValue: 1 << 0)
    /// Deliver previews (`isIncremental`, `finished == false`) while loading.
    public static let progressiveLoad = Self(rawValue: 1 << 1)
    /// Revalidate with the server (ETag / Last-Modified) from the downloader's
    /// small HTTP cache: a 304 gives back the bytes seen before.
    public static let useHTTPCache = Self(rawValue: 1 << 2)
    /// With `.useHTTPCache`: a 304 completes with no image and `cacheNotModified`.
    public static let ignoreCachedResponse = Self(rawValue: 1 << 3)
    /// Send and store cookies (in memory, shared by the downloader's transfers).
    public static let handleCookies = Self(rawValue: 1 << 5)
    /// Accept TLS certificates that do not verify (self-signed, expired, wrong host).
    public static let allowInvalidSSLCertificates = Self(rawValue: 1 << 6)
    /// Jump ahead of normal and low priority downloads.
    public static let highPriority = Self(rawValue: 1 << 7)
    /// Decode to at most `imageScaleDownLimitBytes` (default 60 MB) of pixels.
    public static let scaleDownLargeImages = Self(rawValue: 1 << 8)
    /// Bytes only: completion gets the data and no image.
    public static let avoidDecodeImage = Self(rawValue: 1 << 9)
    /// An animation decodes to its first frame, a still image.
    public static let decodeFirstFrameOnly = Self(rawValue: 1 << 10)
    /// Decode and keep every frame of an animation before completion.
    public static let preloadAllFrames = Self(rawValue: 1 << 11)
    /// The result is always of `.animatedImageClass` (else `badImageData`).
    public static let matchAnimatedImageClass = Self(rawValue: 1 << 12)
    /// Ours: read the whole file even for a thumbnail. Without it, a
    /// thumbnail's progressive JPEG ends its transfer once the scans still
    /// to come cannot move the thumbnail past the config's
    /// `thumbnailSettleLevels`; the rest is fetched (by `Range`) only when a
    /// larger size is asked for.
    public static let fetchWholeFile = Self(rawValue: 1 << 13)
}

/// The order queued downloads start in (the config's `executionOrder`).
public enum SDWebImageDownloaderExecutionOrder: Sendable {
    /// Oldest queued download first (default).
    case fifo
    /// Newest queued download first: what the user scrolled to last.
    case lifo
}

/// `(receivedSize, expectedSize, targetURL)`; expected is 0 when unknown.
public typealias SDWebImageDownloaderProgressBlock = @Sendable (_ receivedSize: Int, _ expectedSize: Int, _ targetURL: URL?) -> Void

/// `(image, data, error, finished)`: previews come with `finished == false`.
public typealias SDWebImageDownloaderCompletedBlock = @Sendable (_ image: SDImage?, _ data: Data?, _ error: (any Error)?, _ finished: Bool) -> Void
