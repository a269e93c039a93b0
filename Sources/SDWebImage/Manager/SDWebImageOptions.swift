import Foundation

/// Manager-level flags, SDWebImage's names and bits.
public struct SDWebImageOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Do not blocklist a URL after it failed (and try a blocklisted one again).
    public static let retryFailed = Self(rawValue: 1 << 0)
    /// The download waits behind normal and high-priority ones.
    public static let lowPriority = Self(rawValue: 1 << 1)
    /// Previews while loading: completion with `finished == false`.
    public static let progressiveLoad = Self(rawValue: 1 << 2)
    /// Serve the cached image, then revalidate with the server (ETag /
    /// Last-Modified): a 304 keeps the entry (and makes it new again), a
    /// changed image calls completion a second time.
    public static let refreshCached = Self(rawValue: 1 << 3)
    /// Send and keep cookies for the download (off: no cookie engine at all).
    public static let handleCookies = Self(rawValue: 1 << 5)
    /// Skip TLS certificate verification; for test servers, never for untrusted hosts.
    public static let allowInvalidSSLCertificates = Self(rawValue: 1 << 6)
    /// The download starts before queued normal and low-priority ones.
    public static let highPriority = Self(rawValue: 1 << 7)
    /// Decode large images smaller, to `DecodeOptions.defaultScaleDownLimitBytes` of bitmap
    /// (or the context's `imageScaleDownLimitBytes`).
    public static let scaleDownLargeImages = Self(rawValue: 1 << 11)
    /// On a memory hit, read the disk data too (the completion gets it), asynchronously.
    public static let queryMemoryData = Self(rawValue: 1 << 12)
    /// As `.queryMemoryData`, and read it synchronously on the caller's thread.
    public static let queryMemoryDataSync = Self(rawValue: 1 << 13)
    /// On a memory miss, query the disk synchronously on the caller's thread.
    public static let queryDiskDataSync = Self(rawValue: 1 << 14)
    /// Never use the network.
    public static let fromCacheOnly = Self(rawValue: 1 << 15)
    /// Never query the cache (the result is still stored).
    public static let fromLoaderOnly = Self(rawValue: 1 << 16)
    /// Bytes only: no image is decoded.
    public static let avoidDecodeImage = Self(rawValue: 1 << 18)
    /// Apply the transformer to every frame of an animation (otherwise: to
    /// its first frame, which becomes a still image).
    public static let transformAnimatedImage = Self(rawValue: 1 << 9)
    /// An animation decodes to its first frame, a still image.
    public static let decodeFirstFrameOnly = Self(rawValue: 1 << 19)
    /// Decode and keep every frame of an animation before completion.
    public static let preloadAllFrames = Self(rawValue: 1 << 20)
    /// The result is always of `.animatedImageClass` (else `badImageData`).
    public static let matchAnimatedImageClass = Self(rawValue: 1 << 21)
    /// Complete only after the disk write finished.
    public static let waitStoreCache = Self(rawValue: 1 << 22)
    /// Ours: a thumbnail load reads the whole file (see
    /// `SDWebImageDownloaderOptions.fetchWholeFile`).
    public static let fetchWholeFile = Self(rawValue: 1 << 23)

    /// The manager's options the image cache understands (SDWebImage's
    /// `SDImageCacheOptionsForWebImageOptions`): the same flags under the cache's names.
    var cacheOptions: SDImageCacheOptions {
        Self.translated(self, [(.queryMemoryData, .queryMemoryData), (.queryMemoryDataSync, .queryMemoryDataSync),
                               (.queryDiskDataSync, .queryDiskDataSync), (.scaleDownLargeImages, .scaleDownLargeImages),
                               (.avoidDecodeImage, .avoidDecodeImage), (.decodeFirstFrameOnly, .decodeFirstFrameOnly),
                               (.preloadAllFrames, .preloadAllFrames), (.matchAnimatedImageClass, .matchAnimatedImageClass)])
    }

    /// The manager's options the downloader understands.
    var downloaderOptions: SDWebImageDownloaderOptions {
        Self.translated(self, [(.lowPriority, .lowPriority), (.highPriority, .highPriority),
                               (.progressiveLoad, .progressiveLoad), (.handleCookies, .handleCookies),
                               (.allowInvalidSSLCertificates, .allowInvalidSSLCertificates),
                               (.scaleDownLargeImages, .scaleDownLargeImages), (.avoidDecodeImage, .avoidDecodeImage),
                               (.decodeFirstFrameOnly, .decodeFirstFrameOnly), (.preloadAllFrames, .preloadAllFrames),
                               (.matchAnimatedImageClass, .matchAnimatedImageClass), (.fetchWholeFile, .fetchWholeFile)])
    }

    /// Each pair's second flag where `options` holds its first.
    private static func translated<T: OptionSet>(_ options: Self, _ pairs: [(Self, T)]) -> T where T.Element == T {
        pairs.reduce(into: T()) { result, pair in if options.contains(pair.0) { result.insert(pair.1) } }
    }
}

extension SDWebImageContextOption {
    /// `SDImageCacheType`: where to look (default `.all`).
    public static let queryCacheType: Self = "queryCacheType"
    /// `SDImageCacheType`: where to store the final image (default `.all`).
    public static let storeCacheType: Self = "storeCacheType"
    /// `SDImageCacheType`: where to look for the original of a thumbnail or
    /// transformed image (default `.disk`).
    public static let originalQueryCacheType: Self = "originalQueryCacheType"
    /// `SDImageCacheType`: where to keep the original bytes of a thumbnail or
    /// transformed download (default `.disk`).
    public static let originalStoreCacheType: Self = "originalStoreCacheType"
    /// `SDImageCacheProtocol` for this load.
    public static let imageCache: Self = "imageCache"
    /// `SDImageCacheProtocol` for originals.
    public static let originalImageCache: Self = "originalImageCache"
    /// `SDImageLoader` for this load.
    public static let imageLoader: Self = "imageLoader"
    /// `SDImageTransformer` for this load.
    public static let imageTransformer: Self = "imageTransformer"
    /// `SDWebImageCacheKeyFilterProtocol` for this load.
    public static let cacheKeyFilter: Self = "cacheKeyFilter"
    /// `SDWebImageCacheSerializerProtocol` for this load.
    public static let cacheSerializer: Self = "cacheSerializer"
    /// `SDWebImageHTTPValidators`: send a conditional request; a 304 fails the
    /// download with `cacheNotModified` (the manager's `.refreshCached` uses it).
    public static let httpValidators: Self = "httpValidators"
    /// The first bytes of the file and the validator they came with: the
    /// download asks for the rest only (`Range` + `If-Range`). The manager
    /// sets it for a larger load of a URL whose disk entry holds a
    /// thumbnail's early-ended transfer.
    static let resumeData: Self = "resumeData"
}
