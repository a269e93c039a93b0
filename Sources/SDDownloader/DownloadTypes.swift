import CSDCore
import Foundation
import SDCoders

/// The C core's version ("MAJOR.MINOR.PATCH", as linked), for User-Agent strings and logs.
public let sdCoreVersion = String(cString: sd_version_string())

/// A failed download: the stable C status, its detail, and the HTTP status
/// when the server answered.
public struct DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C status (`SDStatus`, SDCoders' one mapping of `sd_status`).
    public typealias Code = SDStatus

    /// What went wrong, as the C core classifies it (timeout, TLS, HTTP status, too big…).
    public let code: Code
    /// A readable detail: the core's message for this transfer, or the code's description.
    public let message: String
    /// The HTTP status, when a response arrived.
    public let statusCode: Int?
    /// What arrived before the connection failed, when the server can send
    /// the rest (a strong validator and byte ranges): give it to the next
    /// request's `resume`.
    public var resumable: ResumableData?

    /// An error with `code`; `message` defaults to the code's description.
    public init(_ code: Code, message: String? = nil, statusCode: Int? = nil) {
        self.code = code
        self.message = message ?? code.description
        self.statusCode = statusCode
    }

    /// The message.
    public var description: String { message }
}

/// Where a request waits in the loop's queue: higher first, then by the
/// loop's execution order (SDWebImage's low/high priority options).
public enum DownloadPriority: Int32, Sendable {
    /// After every queued normal and high request.
    case low = -1
    /// The default.
    case normal = 0
    /// Before every queued normal and low request.
    case high = 1
}

/// The order queued requests of equal priority start in (SDWebImage's
/// `SDWebImageDownloaderExecutionOrder`).
public enum DownloadExecutionOrder: Int64, Sendable {
    /// First in, first out: the default.
    case fifo = 0
    /// Last in, first out: the newest request starts first (a scrolling list).
    case lifo = 1
}

/// Well-formed HTTP validators (RFC 9110 §8.8): what a server sends is kept
/// and sent back in a conditional request only if it is one, so a hostile
/// ETag can never carry a header of its own.
public enum HTTPValidator {
    /// `"opaque"` or `W/"opaque"`: printable ASCII without `"` inside (or
    /// obs-text), at most 1 KiB.
    public static func etag(_ value: String?) -> String? {
        guard let value else { return nil }
        let bytes = Array(value.utf8)
        guard bytes.count <= 1024 else { return nil }
        let body = bytes.starts(with: Array("W/".utf8)) ? bytes.dropFirst(2) : bytes[...]
        guard body.count >= 2, body.first == 0x22, body.last == 0x22 else { return nil }
        return body.dropFirst().dropLast().allSatisfy { $0 == 0x21 || (0x23...0x7E).contains($0) || $0 >= 0x80 }
            ? value : nil
    }

    /// An HTTP-date: visible ASCII and spaces, at most 64 bytes.
    public static func date(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 64,
              value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return value
    }
}

/// The start of a body and the validator (strong ETag, else Last-Modified)
/// of the response it came from: enough to ask for the rest.
public struct ResumableData: Sendable, Equatable {
    /// The body bytes received so far.
    public let data: Data
    /// The strong ETag (or Last-Modified date) sent as `If-Range`: a changed
    /// resource is sent whole instead of the rest.
    public let validator: String

    /// Bytes already received and the validator of the response they came from.
    public init(data: Data, validator: String) {
        self.data = data
        self.validator = validator
    }

    /// From a failed transfer's response and partial body, if the server said
    /// it serves ranges (or already did) and gave a strong validator.
    init?(response: DownloadResponse?, partial: Data) {
        guard let r = response, !partial.isEmpty, r.statusCode == 200 || r.statusCode == 206 else { return nil }
        let ranges = r.statusCode == 206
            || (r.value(forHTTPHeaderField: "Accept-Ranges")?.lowercased().contains("bytes") ?? false)
        let etag = HTTPValidator.etag(r.value(forHTTPHeaderField: "ETag")).flatMap { $0.hasPrefix("W/") ? nil : $0 }
        guard ranges, let v = etag ?? HTTPValidator.date(r.value(forHTTPHeaderField: "Last-Modified")) else { return nil }
        self.init(data: partial, validator: v)
    }
}

/// What a request may reach, for services fed untrusted URLs (SECURITY.md).
/// Off by default (`.none`); `.server` is the preset for a service. Checked
/// in the C loop for the first URL and every redirect; addresses on the
/// resolved address of every connection, reused ones included.
public struct URLPolicy: Sendable, Equatable {
    /// Address classes (`sd_address`) no connection may go to.
    public struct Addresses: OptionSet, Sendable, Hashable {
        public let rawValue: Int64
        public init(rawValue: Int64) { self.rawValue = rawValue }
        /// 127/8 and ::1.
        public static let loopback = Self(rawValue: Int64(SD_ADDRESS_LOOPBACK.rawValue))
        /// 10/8, 172.16/12, 192.168/16, carrier-grade NAT (100.64/10), 198.18/15, 192.0.0/24,
        /// IPv6 unique-local (fc00::/7), local-use NAT64 (64:ff9b:1::/48). An IPv6 address that
        /// carries an IPv4 one (mapped, NAT64, 6to4, Teredo) is in that address's class.
        public static let `private` = Self(rawValue: Int64(SD_ADDRESS_PRIVATE.rawValue))
        /// 169.254/16 (cloud metadata endpoints live here) and fe80::/10.
        public static let linkLocal = Self(rawValue: Int64(SD_ADDRESS_LINK_LOCAL.rawValue))
        /// 224/4, 240/4, 255.255.255.255 and ff00::/8.
        public static let multicast = Self(rawValue: Int64(SD_ADDRESS_MULTICAST.rawValue))
        /// 0.0.0.0/8 and ::, which many stacks route to the local host.
        public static let unspecified = Self(rawValue: Int64(SD_ADDRESS_UNSPECIFIED.rawValue))
        /// Every class that is not the public internet (the `.server` preset's choice).
        public static let nonPublic = Self(rawValue: Int64(SD_ADDRESS_NON_PUBLIC.rawValue))
    }
    /// nil: http, https and file.
    public var allowedSchemes: [String]?
    /// Patterns: "host", "*.domain", an IP literal. Non-empty: only these.
    public var allowedHosts: [String] = []
    /// Patterns refused even when `allowedHosts` would let them through.
    public var blockedHosts: [String] = []
    /// Exempt from `blockedAddresses` (an internal CDN; test servers).
    public var trustedHosts: [String] = []
    /// Address classes no connection may reach, checked on the address
    /// actually connected to (DNS rebinding cannot slip past).
    public var blockedAddresses: Addresses = []
    /// false: a redirect from https to http fails with `.refusedByPolicy`.
    public var allowsHTTPSToHTTPRedirect = true

    /// A policy from its parts; every default lets everything through.
    public init(allowedSchemes: [String]? = nil, allowedHosts: [String] = [], blockedHosts: [String] = [],
                trustedHosts: [String] = [], blockedAddresses: Addresses = [], allowsHTTPSToHTTPRedirect: Bool = true) {
        self.allowedSchemes = allowedSchemes
        self.allowedHosts = allowedHosts
        self.blockedHosts = blockedHosts
        self.trustedHosts = trustedHosts
        self.blockedAddresses = blockedAddresses
        self.allowsHTTPSToHTTPRedirect = allowsHTTPSToHTTPRedirect
    }

    /// Anything goes (the library's default, as SDWebImage).
    public static let none = URLPolicy()
    /// http and https only, no non-public address, no https -> http redirect.
    public static let server = URLPolicy(allowedSchemes: ["http", "https"], blockedAddresses: .nonPublic,
                                         allowsHTTPSToHTTPRedirect: false)
}

/// What to fetch and how; a plain value.
public struct DownloadRequest: Sendable {
    /// What to fetch: http, https or file (see `policy`).
    public var url: URL
    /// Where it waits in the loop's queue.
    public var priority = DownloadPriority.normal
    /// Idle timeout: fail when no byte arrived for this long (SDWebImage's
    /// downloadTimeout, 15 s: URLSession's timeoutInterval is an idle
    /// timeout, so an image whose bytes keep coming is never cut). 0: off.
    public var timeout: TimeInterval = 15
    /// Whole-transfer timeout (ours): a drip that never idles long enough
    /// still ends. 120 s by default; 0: none.
    public var totalTimeout: TimeInterval = DownloadRequest.defaultTotalTimeout
    /// Low-speed floor (ours, curl's low-speed limit): fail with `.timedOut`
    /// when fewer than this many bytes per second arrive for `lowSpeedTime`
    /// seconds. 0 (the default): off.
    public var lowSpeedLimit = 0
    /// How long a transfer may stay under `lowSpeedLimit` (whole seconds,
    /// rounded up; default 10).
    public var lowSpeedTime: TimeInterval = 10
    /// Extra request headers; a value or name with a control character is refused.
    public var headers: [String: String] = [:]
    /// Decode on the loop's workers (false: bytes only, SDWebImage's avoidDecodeImage).
    public var decode = true
    /// How the C core decodes (thumbnail size, orientation, limits).
    public var decodeOptions = DecodeOptions()
    /// Deliver previews while loading (SDWebImage's progressiveLoad).
    public var progressivePreviews = false
    /// HTTP Basic authentication user.
    public var username: String?
    /// HTTP Basic authentication password, with `username`.
    public var password: String?
    /// Skip TLS certificate verification (SDWebImage's allowInvalidSSLCertificates); never for untrusted hosts.
    public var allowsInvalidCertificates = false
    /// Send and keep cookies (SDWebImage's handleCookies); off: no cookie engine at all.
    public var handlesCookies = false
    /// Statuses that count as success; any other fails with `.badStatus`.
    public var acceptableStatusCodes: ClosedRange<Int> = 200...299
    /// Content-type prefixes, e.g. ["image/"]; nil accepts any.
    public var acceptableContentTypes: [String]?
    /// Conditional request for revalidation: a match completes with `.notModified`.
    public var ifNoneMatch: String?
    /// Conditional request by date (an HTTP-date): a 304 completes with `.notModified`.
    public var ifModifiedSince: String?
    /// Bodies larger than this fail with `.tooLarge` as soon as that is known.
    public var maxResponseBytes = DownloadRequest.defaultMaxResponseBytes
    /// Minimum seconds between two progress calls.
    public var minimumProgressInterval: TimeInterval = 0
    /// Continue an earlier transfer that failed part-way (`DownloadError.resumable`):
    /// the server sends only the rest if the resource is unchanged.
    public var resume: ResumableData?
    /// What the request may reach (redirects included).
    public var policy = URLPolicy.none
    /// Proxy URL ("" for none); nil: the environment's, unless `policy`
    /// blocks addresses (`SD_REQ_PROXY`).
    public var proxy: String?
    /// Redirects followed at most (0: none).
    public var maxRedirects = DownloadRequest.defaultMaxRedirects
    /// Sees each piece of the body as it arrives, on the loop thread (copy
    /// and hop; never block): for decoders that are not the C core's (a
    /// progressive coder of the user's), or beside it (`decode` true: a
    /// progressive animation's frames so far).
    public var bodyObserver: (@Sendable (UnsafeRawBufferPointer) -> Void)?

    /// The defaults above, for the layers that carry these settings.
    public static let defaultMaxResponseBytes = Int(SD_DEFAULT_MAX_RESPONSE_BYTES)
    /// Redirects followed by default (`sd_request`'s default).
    public static let defaultMaxRedirects = Int(SD_DEFAULT_MAX_REDIRECTS)
    /// The whole-transfer timeout by default, in seconds.
    public static let defaultTotalTimeout: TimeInterval = 120

    /// A request for `url` with every default.
    public init(url: URL) { self.url = url }
}

/// The final response's status line and headers.
public struct DownloadResponse: Sendable {
    /// The HTTP status (0 when the URL is not HTTP).
    public let statusCode: Int
    /// The URL that answered, after redirects.
    public let url: URL?
    /// Content-Length, 0 when unknown.
    public let expectedContentLength: Int64
    /// The Content-Type header as sent, when there is one.
    public let mimeType: String?
    /// Headers in arrival order (names as sent).
    public let headers: [(name: String, value: String)]

    /// Last value of a header, case-insensitive.
    public func value(forHTTPHeaderField name: String) -> String? {
        headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Timing and size of one transfer (milliseconds from its start).
public struct DownloadMetrics: Sendable {
    /// Name resolution done.
    public let dnsMs: Double
    /// TCP connected.
    public let connectMs: Double
    /// TLS handshake done (0 without TLS).
    public let tlsMs: Double
    /// First response byte arrived.
    public let firstByteMs: Double
    /// The whole transfer, redirects included.
    public let totalMs: Double
    /// Waiting in the loop's queue before it started.
    public let queuedMs: Double
    /// Decoding on the loop's workers, summed over the pieces.
    public let decodeMs: Double
    /// Body bytes received over the network.
    public let bytes: Int
    /// 10, 11 or 20.
    public let httpVersion: Int
    /// Redirects followed.
    public let redirects: Int
    /// New connections opened (0: an existing one was reused).
    public let newConnections: Int
    /// Body bytes reused from `DownloadRequest.resume` (not fetched again).
    public var resumedBytes = 0
}

/// A finished download: the body, its image, the response and timings.
public struct DownloadResult: Sendable {
    /// The raw body (what a disk cache stores).
    public let data: Data
    /// The decoded image, unless decoding was off.
    public let image: DecodedImage?
    /// The final response; nil when none arrived (the connection failed).
    public let response: DownloadResponse?
    /// Timings and sizes.
    public let metrics: DownloadMetrics
}
