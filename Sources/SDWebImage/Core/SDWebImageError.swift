import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDDownloader

/// An error in SDWebImage's domain, with SDWebImage's codes and meanings.
///
/// Network failures are not wrapped in it: like on Apple platforms they keep
/// their own cause as a `URLError` (`.timedOut`, `.cannotConnectToHost`,
/// `.secureConnectionFailed`, …), so existing `URLError` handling works.
///
///     catch SDWebImageError.cancelled { … }
///     catch let e as SDWebImageError where e.code == .invalidDownloadStatusCode { e.statusCode }
public struct SDWebImageError: Error, CustomNSError, CustomStringConvertible, Sendable {
    /// Codes as a struct with static members: new codes never break callers.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The URL is nil or cannot be requested.
        public static let invalidURL = Code(rawValue: 1000)
        /// Empty, undecodable, zero-pixel data; or a decryptor returned nil.
        public static let badImageData = Code(rawValue: 1001)
        /// 304 Not Modified and no cached data to use.
        public static let cacheNotModified = Code(rawValue: 1002)
        /// The URL failed before and is on the manager's blocklist.
        public static let blackListed = Code(rawValue: 1003)
        /// No operation could be made (e.g. a request modifier returned nil).
        public static let invalidDownloadOperation = Code(rawValue: 2000)
        /// The HTTP status is not acceptable; see `statusCode`.
        public static let invalidDownloadStatusCode = Code(rawValue: 2001)
        /// Cancelled by the caller.
        public static let cancelled = Code(rawValue: 2002)
        /// A response modifier returned nil.
        public static let invalidDownloadResponse = Code(rawValue: 2003)
        /// The Content-Type is not acceptable; see `contentType`.
        public static let invalidDownloadContentType = Code(rawValue: 2004)

        public var description: String {
            switch self {
            case .invalidURL: "invalidURL"
            case .badImageData: "badImageData"
            case .cacheNotModified: "cacheNotModified"
            case .blackListed: "blackListed"
            case .invalidDownloadOperation: "invalidDownloadOperation"
            case .invalidDownloadStatusCode: "invalidDownloadStatusCode"
            case .cancelled: "cancelled"
            case .invalidDownloadResponse: "invalidDownloadResponse"
            case .invalidDownloadContentType: "invalidDownloadContentType"
            default: "SDWebImageError(\(rawValue))"
            }
        }
    }

    /// ``Code/invalidURL`` (1000), as `SDWebImageError.invalidURL` in SDWebImage.
    public static let invalidURL = Code.invalidURL
    /// ``Code/badImageData`` (1001).
    public static let badImageData = Code.badImageData
    /// ``Code/cacheNotModified`` (1002).
    public static let cacheNotModified = Code.cacheNotModified
    /// ``Code/blackListed`` (1003).
    public static let blackListed = Code.blackListed
    /// ``Code/invalidDownloadOperation`` (2000).
    public static let invalidDownloadOperation = Code.invalidDownloadOperation
    /// ``Code/invalidDownloadStatusCode`` (2001).
    public static let invalidDownloadStatusCode = Code.invalidDownloadStatusCode
    /// ``Code/cancelled`` (2002).
    public static let cancelled = Code.cancelled
    /// ``Code/invalidDownloadResponse`` (2003).
    public static let invalidDownloadResponse = Code.invalidDownloadResponse
    /// ``Code/invalidDownloadContentType`` (2004).
    public static let invalidDownloadContentType = Code.invalidDownloadContentType

    /// The error domain, SDWebImage's string.
    public static let errorDomain = "SDWebImageErrorDomain"
    /// userInfo key of the response, as in SDWebImage.
    public static let downloadResponseKey = "SDWebImageErrorDownloadResponseKey"
    /// userInfo key of the HTTP status, as in SDWebImage.
    public static let downloadStatusCodeKey = "SDWebImageErrorDownloadStatusCodeKey"
    /// userInfo key of the rejected Content-Type, as in SDWebImage.
    public static let downloadContentTypeKey = "SDWebImageErrorDownloadContentTypeKey"

    /// What went wrong, SDWebImage's code.
    public let code: Code
    /// A sentence for people: the code's name unless something more precise was known.
    public let message: String
    /// The HTTP status, for `invalidDownloadStatusCode`.
    public let statusCode: Int?
    /// The (possibly modified) response, when one arrived.
    public let response: HTTPURLResponse?
    /// The rejected Content-Type, for `invalidDownloadContentType`.
    public let contentType: String?
    /// What went wrong underneath (e.g. the decoder's own words).
    public let underlyingError: (any Error)?

    /// An error with its code and, when known, a message and what came with it.
    public init(_ code: Code, _ message: String? = nil, statusCode: Int? = nil, response: HTTPURLResponse? = nil,
                contentType: String? = nil, underlyingError: (any Error)? = nil) {
        self.code = code
        self.message = message ?? code.description
        self.statusCode = statusCode
        self.response = response
        self.contentType = contentType
        self.underlyingError = underlyingError
    }

    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let statusCode { info[Self.downloadStatusCodeKey] = statusCode }
        if let response { info[Self.downloadResponseKey] = response }
        if let contentType { info[Self.downloadContentTypeKey] = contentType }
        return info
    }

    public var description: String { "\(code): \(message)" }
}

extension SDWebImageError.Code {
    /// `catch SDWebImageError.cancelled` and `case SDWebImageError.cancelled`.
    public static func ~= (code: Self, error: any Error) -> Bool {
        (error as? SDWebImageError)?.code == code
    }
}

extension SDWebImageError {
    /// The public error for a failed transfer: SDWebImage's code where it has
    /// one, otherwise the network cause as a `URLError`.
    static func from(_ e: DownloadError, url: URL?, response: HTTPURLResponse?) -> any Error {
        switch e.code {
        case .cancelled, .shuttingDown:
            return SDWebImageError(.cancelled, "the download was cancelled", response: response)
        case .badStatus:
            return SDWebImageError(.invalidDownloadStatusCode, "download failed with HTTP status \(e.statusCode ?? 0)",
                                   statusCode: e.statusCode ?? response?.statusCode, response: response)
        case .badContentType:
            return SDWebImageError(.invalidDownloadContentType, e.message, response: response,
                                   contentType: response?.mimeType)
        case .notModified:
            return SDWebImageError(.cacheNotModified, "HTTP 304: the cached copy is still valid", statusCode: 304,
                                   response: response)
        case .decodeFailed:
            return SDWebImageError(.badImageData, e.message, response: response, underlyingError: e)
        case .invalidRequest, .badURL:
            return SDWebImageError(.invalidURL, e.message, underlyingError: e)
        default:
            let code: URLError.Code = switch e.code {
            case .timedOut: .timedOut
            case .cannotResolveHost: .cannotFindHost
            case .cannotConnect: .cannotConnectToHost
            case .tls: .secureConnectionFailed
            case .tooLarge: .dataLengthExceedsMaximum
            case .tooManyRedirects: .httpTooManyRedirects
            case .truncatedBody, .network: .networkConnectionLost
            case .io: .fileDoesNotExist
            case .schemeNotAllowed: .unsupportedURL
            case .refusedByPolicy: .appTransportSecurityRequiresSecureConnection
            case .badServerResponse: .badServerResponse
            case .notRegularFile: .cannotOpenFile
            default: .unknown
            }
            var info: [String: Any] = [NSLocalizedDescriptionKey: e.message, "SDDownloadErrorCode": Int(e.code.rawValue)]
            if let url { info[NSURLErrorFailingURLErrorKey] = url }
            return URLError(code, userInfo: info)
        }
    }
}
