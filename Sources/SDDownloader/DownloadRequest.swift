import CSDCore
import Foundation
import SDCoders

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
    /// Time to connect (ours: DNS, TCP and TLS), 10 s by default (the C
    /// core's); 0: the default.
    public var connectTimeout: TimeInterval = DownloadRequest.defaultConnectTimeout
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
    /// End the transfer as soon as the decoded image is complete at its size
    /// (a thumbnail of a progressive JPEG, `DecodeOptions.settleLevels`):
    /// the result's `data` is then the file's first bytes, marked by
    /// `DownloadMetrics.endedEarly` and `DownloadResult.completeUpTo`
    /// (`SD_DEC_END_WHEN_SETTLED`). Off by default.
    public var endsWhenSettled = false
    /// With `progressivePreviews`: an animation's frames come as previews
    /// (`LoaderPreview.frame`) as they complete, until they total this many
    /// bytes (`SD_DEC_PREVIEW_FRAME_BYTES`); 0: none.
    package var animationFrameBytes = 0
    /// The decoder's frame cache by default (`SD_DEFAULT_FRAME_CACHE_BYTES`).
    package static let defaultAnimationFrameBytes = Int(SD_DEFAULT_FRAME_CACHE_BYTES)
    /// The decode sink's partials are `sd_preview`s (frames among them).
    var framesPreviews: Bool { decode && progressivePreviews && animationFrameBytes > 0 }
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
    /// The connect timeout by default, in seconds (`sd_request`'s default).
    public static let defaultConnectTimeout = TimeInterval(SD_DEFAULT_CONNECT_TIMEOUT_MS) / 1000

    /// A request for `url` with every default.
    public init(url: URL) { self.url = url }

    /// Every default and no URL yet (`about:blank`): the template a
    /// downloader config keeps its transport settings in. Each download
    /// copies it and sets only what is its own — URL, headers, priority,
    /// decode (libcurl's `curl_easy_duphandle` shape).
    public static var template: DownloadRequest { DownloadRequest(url: URL(string: "about:blank")!) }
}

extension DownloadRequest {
    /// Writes every field into a C request (the one DownloadRequest ->
    /// `sd_request` mapping): 0, or the first negative status.
    func write(to r: OpaquePointer) -> Int32 {
        let q = self
        var rc: Int32 = 0
        func set(_ p: sd_request_param, _ v: Int64) { if rc == 0 { rc = sd_request_set(r, p, v) } }
        func str(_ p: sd_request_string, _ v: String?) { if rc == 0, let v { rc = sd_request_set_string(r, p, v) } }
        set(SD_REQ_PRIORITY, Int64(q.priority.rawValue))
        set(SD_REQ_IDLE_TIMEOUT_MS, Int64(max(0, q.timeout * 1000)))
        set(SD_REQ_TIMEOUT_MS, Int64(max(0, q.totalTimeout * 1000)))
        if q.connectTimeout > 0 { set(SD_REQ_CONNECT_TIMEOUT_MS, Int64(q.connectTimeout * 1000)) }
        if q.lowSpeedLimit > 0 && q.lowSpeedTime > 0 {
            set(SD_REQ_LOW_SPEED_BYTES, Int64(q.lowSpeedLimit))
            set(SD_REQ_LOW_SPEED_TIME_MS, Int64(q.lowSpeedTime * 1000))
        }
        set(SD_REQ_USE_SINK, q.decode ? 1 : 0)
        set(SD_REQ_ALLOW_INVALID_CERTS, q.allowsInvalidCertificates ? 1 : 0)
        set(SD_REQ_COOKIES, q.handlesCookies ? 1 : 0)
        set(SD_REQ_STATUS_MIN, Int64(q.acceptableStatusCodes.lowerBound))
        set(SD_REQ_STATUS_MAX, Int64(q.acceptableStatusCodes.upperBound))
        set(SD_REQ_MAX_BYTES, Int64(max(0, q.maxResponseBytes)))
        set(SD_REQ_PROGRESS_INTERVAL_MS, Int64(max(0, q.minimumProgressInterval * 1000)))
        if rc == 0, let resume = q.resume {
            rc = resume.data.withUnsafeBytes { raw in
                sd_request_set_resume(r, raw.bindMemory(to: UInt8.self).baseAddress, raw.count, resume.validator)
            }
        }
        str(SD_REQ_USERNAME, q.username)
        str(SD_REQ_PASSWORD, q.password)
        str(SD_REQ_IF_NONE_MATCH, q.ifNoneMatch)
        str(SD_REQ_IF_MODIFIED_SINCE, q.ifModifiedSince)
        str(SD_REQ_ACCEPT_CONTENT_TYPES, q.acceptableContentTypes?.joined(separator: ","))
        str(SD_REQ_PROXY, q.proxy)
        set(SD_REQ_MAX_REDIRECTS, Int64(max(0, q.maxRedirects)))
        let pol = q.policy
        if pol != .none {
            str(SD_REQ_ALLOWED_SCHEMES, pol.allowedSchemes?.joined(separator: ","))
            if !pol.allowedHosts.isEmpty { str(SD_REQ_ALLOWED_HOSTS, pol.allowedHosts.joined(separator: ",")) }
            if !pol.blockedHosts.isEmpty { str(SD_REQ_BLOCKED_HOSTS, pol.blockedHosts.joined(separator: ",")) }
            if !pol.trustedHosts.isEmpty { str(SD_REQ_TRUSTED_HOSTS, pol.trustedHosts.joined(separator: ",")) }
            set(SD_REQ_BLOCK_ADDRESSES, pol.blockedAddresses.rawValue)
            set(SD_REQ_NO_DOWNGRADE, pol.allowsHTTPSToHTTPRedirect ? 0 : 1)
        }
        for (name, value) in q.headers.sorted(by: { $0.key < $1.key }) where rc == 0 {
            rc = sd_request_add_header(r, "\(name): \(value)")
        }
        // The one DecodeOptions -> sd_decoder_param mapping; previews are the
        // request's to ask for (they cost a render per scan).
        var o = q.decodeOptions
        o.progressivePreviews = q.progressivePreviews
        for (p, v) in o.coreParameters where rc == 0 {
            rc = sd_request_set_decoder_param(r, p, v)
        }
        if rc == 0, var render = o.render?.core {
            rc = sd_request_set_render(r, &render)
        }
        if q.decode && q.endsWhenSettled && rc == 0 {
            rc = sd_request_set_decoder_param(r, SD_DEC_END_WHEN_SETTLED, 1)
        }
        if q.framesPreviews && rc == 0 {
            rc = sd_request_set_decoder_param(r, SD_DEC_PREVIEW_FRAME_BYTES, Int64(q.animationFrameBytes))
        }
        return rc
    }
}
