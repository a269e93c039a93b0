import Dispatch
import Foundation
import SDDownloader
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

    var cacheOptions: SDImageCacheOptions {
        var o: SDImageCacheOptions = []
        if contains(.queryMemoryData) { o.insert(.queryMemoryData) }
        if contains(.queryMemoryDataSync) { o.insert(.queryMemoryDataSync) }
        if contains(.queryDiskDataSync) { o.insert(.queryDiskDataSync) }
        if contains(.scaleDownLargeImages) { o.insert(.scaleDownLargeImages) }
        if contains(.avoidDecodeImage) { o.insert(.avoidDecodeImage) }
        if contains(.decodeFirstFrameOnly) { o.insert(.decodeFirstFrameOnly) }
        if contains(.preloadAllFrames) { o.insert(.preloadAllFrames) }
        if contains(.matchAnimatedImageClass) { o.insert(.matchAnimatedImageClass) }
        return o
    }

    var downloaderOptions: SDWebImageDownloaderOptions {
        var o: SDWebImageDownloaderOptions = []
        if contains(.lowPriority) { o.insert(.lowPriority) }
        if contains(.highPriority) { o.insert(.highPriority) }
        if contains(.progressiveLoad) { o.insert(.progressiveLoad) }
        if contains(.handleCookies) { o.insert(.handleCookies) }
        if contains(.allowInvalidSSLCertificates) { o.insert(.allowInvalidSSLCertificates) }
        if contains(.scaleDownLargeImages) { o.insert(.scaleDownLargeImages) }
        if contains(.avoidDecodeImage) { o.insert(.avoidDecodeImage) }
        if contains(.decodeFirstFrameOnly) { o.insert(.decodeFirstFrameOnly) }
        if contains(.preloadAllFrames) { o.insert(.preloadAllFrames) }
        if contains(.matchAnimatedImageClass) { o.insert(.matchAnimatedImageClass) }
        return o
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
}

/// ETag and Last-Modified of a stored response, for revalidation, and how
/// long the server said it stays fresh (`Cache-Control: max-age`, less `Age`):
/// until then `.refreshCached` needs no request, as a URL cache would answer.
public struct SDWebImageHTTPValidators: Codable, Sendable, Equatable {
    /// The stored ETag, sent back as `If-None-Match`.
    public var etag: String?
    /// The stored Last-Modified date, sent back as `If-Modified-Since`.
    public var lastModified: String?
    /// Until when the entry needs no revalidation; nil: always revalidate.
    public var freshUntil: Date?
    /// Validators from their parts.
    public init(etag: String?, lastModified: String?, freshUntil: Date? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.freshUntil = freshUntil
    }

    /// From a response's headers. `no-cache` and `no-store` mean never fresh.
    public init(response: HTTPURLResponse, now: Date = Date()) {
        // only well-formed ones are kept: they go back out in If-None-Match
        self.init(etag: HTTPValidator.etag(response.value(forHTTPHeaderField: "ETag")),
                  lastModified: HTTPValidator.date(response.value(forHTTPHeaderField: "Last-Modified")))
        guard let cc = response.value(forHTTPHeaderField: "Cache-Control")?.lowercased() else { return }
        var maxAge: Int?
        for part in cc.split(separator: ",") {
            let d = part.trimmingCharacters(in: .whitespaces)
            if d == "no-cache" || d == "no-store" { return }
            if d.hasPrefix("max-age=") { maxAge = Int(d.dropFirst(8).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))) }
        }
        let age = response.value(forHTTPHeaderField: "Age").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        if let maxAge, maxAge > age { freshUntil = now.addingTimeInterval(TimeInterval(maxAge - age)) }
    }

    /// The stored validators brought up to date by a 304's headers.
    func updated(by response: HTTPURLResponse?) -> SDWebImageHTTPValidators {
        guard let response else { return self }
        let new = SDWebImageHTTPValidators(response: response)
        return SDWebImageHTTPValidators(etag: new.etag ?? etag, lastModified: new.lastModified ?? lastModified,
                                        freshUntil: new.freshUntil)
    }

    /// Nothing to keep: no validator and no freshness (the manager stores
    /// no extended data for such a response; a loader that stores for it does
    /// the same).
    public var isEmpty: Bool { etag == nil && lastModified == nil && freshUntil == nil }
    var canRevalidate: Bool { etag != nil || lastModified != nil }
}

/// URL → cache key.
public protocol SDWebImageCacheKeyFilterProtocol: Sendable {
    /// The cache key for `url`; nil: the URL's absolute string.
    func cacheKey(for url: URL) -> String?
}

/// A cache key filter from a closure.
public struct SDWebImageCacheKeyFilter: SDWebImageCacheKeyFilterProtocol {
    private let block: @Sendable (URL) -> String?
    /// A filter that asks `block`.
    public init(block: @escaping @Sendable (URL) -> String?) { self.block = block }
    /// What `block` answers.
    public func cacheKey(for url: URL) -> String? { block(url) }
}

/// Image + downloaded bytes → bytes for the disk cache (nil: encode the image).
public protocol SDWebImageCacheSerializerProtocol: Sendable {
    /// The bytes to store on disk for `image`; nil: encode the image instead.
    func cacheData(with image: SDImage, originalData data: Data?, imageURL: URL?) -> Data?
}

/// A cache serializer from a closure.
public struct SDWebImageCacheSerializer: SDWebImageCacheSerializerProtocol {
    private let block: @Sendable (SDImage, Data?, URL?) -> Data?
    /// A serializer that asks `block` (image, downloaded bytes, URL).
    public init(block: @escaping @Sendable (SDImage, Data?, URL?) -> Data?) { self.block = block }
    /// What `block` answers.
    public func cacheData(with image: SDImage, originalData data: Data?, imageURL: URL?) -> Data? { block(image, data, imageURL) }
}

/// Rewrites the options and context of every load (global policy).
public protocol SDWebImageOptionsProcessorProtocol: Sendable {
    /// The options and context to load `url` with; nil: keep the caller's.
    func processedResult(for url: URL?, options: SDWebImageOptions, context: SDWebImageContext?) -> SDWebImageOptionsResult?
}

/// Options and context, as an options processor returns them.
public struct SDWebImageOptionsResult: Sendable {
    /// The options to load with.
    public let options: SDWebImageOptions
    /// The context to load with.
    public let context: SDWebImageContext?
    /// A result from its parts.
    public init(options: SDWebImageOptions, context: SDWebImageContext?) {
        self.options = options
        self.context = context
    }
}

/// An options processor from a closure.
public struct SDWebImageOptionsProcessor: SDWebImageOptionsProcessorProtocol {
    private let block: @Sendable (URL?, SDWebImageOptions, SDWebImageContext?) -> SDWebImageOptionsResult?
    /// A processor that asks `block`.
    public init(block: @escaping @Sendable (URL?, SDWebImageOptions, SDWebImageContext?) -> SDWebImageOptionsResult?) {
        self.block = block
    }
    /// What `block` answers.
    public func processedResult(for url: URL?, options: SDWebImageOptions, context: SDWebImageContext?) -> SDWebImageOptionsResult? {
        block(url, options, context)
    }
}

/// Turns a decoded image into another; its key names the result in caches.
public protocol SDImageTransformer: Sendable {
    /// Names the transformation in cache keys: equal keys must mean equal output.
    var transformerKey: String { get }
    /// The transformed image; nil when it cannot be made (the load then fails).
    /// `key` is the image's cache key.
    func transformedImage(with image: SDImage, forKey key: String) -> SDImage?
}
