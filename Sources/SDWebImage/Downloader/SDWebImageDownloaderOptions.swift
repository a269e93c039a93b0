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

/// Rewrites the request before it is sent; nil fails the download with
/// `invalidDownloadOperation`. Only GET is supported (images are fetched).
public protocol SDWebImageDownloaderRequestModifierProtocol: Sendable {
    /// The request to send instead of `request`; nil fails the download.
    func modifiedRequest(with request: URLRequest) -> URLRequest?
}

/// Inspects or rewrites the response; nil fails it with `invalidDownloadResponse`.
/// Status and content type are checked on the modified response.
public protocol SDWebImageDownloaderResponseModifierProtocol: Sendable {
    /// The response to go on with instead of `response`; nil fails the download.
    func modifiedResponse(with response: URLResponse) -> URLResponse?
}

/// Turns the downloaded bytes into image bytes; nil fails with `badImageData`.
/// A decryptor turns progressive decoding off (the bytes are not an image yet).
public protocol SDWebImageDownloaderDecryptorProtocol: Sendable {
    /// The image bytes hidden in `data`; nil fails the download.
    func decryptedData(with data: Data, response: URLResponse?) -> Data?
}

/// A request modifier from a closure (or a set of headers).
public struct SDWebImageDownloaderRequestModifier: SDWebImageDownloaderRequestModifierProtocol {
    private let block: @Sendable (URLRequest) -> URLRequest?
    /// A modifier that asks `block`.
    public init(block: @escaping @Sendable (URLRequest) -> URLRequest?) { self.block = block }
    /// Adds (or replaces) these header fields.
    public init(headers: [String: String]) {
        block = { request in
            var r = request
            for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
            return r
        }
    }
    /// What the block answers.
    public func modifiedRequest(with request: URLRequest) -> URLRequest? { block(request) }
}

/// A response modifier from a closure (or a replacement status).
public struct SDWebImageDownloaderResponseModifier: SDWebImageDownloaderResponseModifierProtocol {
    private let block: @Sendable (URLResponse) -> URLResponse?
    /// A modifier that asks `block`.
    public init(block: @escaping @Sendable (URLResponse) -> URLResponse?) { self.block = block }
    /// Replaces the status code (and optionally the HTTP version and headers).
    public init(statusCode: Int, version: String? = nil, headers: [String: String]? = nil) {
        block = { response in
            guard let url = response.url else { return nil }
            let old = (response as? HTTPURLResponse)?.allHeaderFields as? [String: String]
            return HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: version ?? "HTTP/1.1",
                                   headerFields: headers ?? old)
        }
    }
    /// What the block answers.
    public func modifiedResponse(with response: URLResponse) -> URLResponse? { block(response) }
}

/// A decryptor from a closure.
public struct SDWebImageDownloaderDecryptor: SDWebImageDownloaderDecryptorProtocol {
    private let block: @Sendable (Data, URLResponse?) -> Data?
    /// A decryptor that asks `block` (the bytes and the response).
    public init(block: @escaping @Sendable (Data, URLResponse?) -> Data?) { self.block = block }
    /// What the block answers.
    public func decryptedData(with data: Data, response: URLResponse?) -> Data? { block(data, response) }

    /// Bytes that arrive base64-encoded.
    public static let base64 = SDWebImageDownloaderDecryptor { data, _ in
        Data(base64Encoded: data, options: .ignoreUnknownCharacters)
    }
}
