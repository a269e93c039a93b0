import Dispatch
import Foundation
import Logging
import SDCoders
import SDSync
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The downloader's settings. A downloader copies the config it is given;
/// change `downloader.config` to affect that downloader (concurrency and
/// order take effect at once, the rest for downloads that start later).
/// Thread-safe.
public final class SDWebImageDownloaderConfig: Sendable {
    /// The config `SDWebImageDownloader.shared` is made from.
    public static let `default` = SDWebImageDownloaderConfig()

    /// Every setting, under one lock.
    private struct State {
        var maxConcurrentDownloads = 6
        var maxConnectionsPerHost = 6
        /// The transport settings: every download copies this template
        /// and sets only its URL, headers, priority and decode.
        var request = DownloadRequest.template
        var minimumProgressInterval: Double = 0
        var executionOrder = SDWebImageDownloaderExecutionOrder.fifo
        var operationClass: (any SDWebImageDownloaderOperationProtocol.Type)?
        var urlCredential: URLCredential?
        var acceptableStatusCodes: IndexSet? = IndexSet(integersIn: 200..<300)
        var acceptableContentTypes: Set<String>?
        var requestModifier: (any SDWebImageDownloaderRequestModifierProtocol)?
        var responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?
        var decryptor: (any SDWebImageDownloaderDecryptorProtocol)?
        var callbackQueue: DispatchQueue = SDWebImageDownloaderConfig.defaultCallbackQueue
        var httpCacheCapacity = 16 << 20
        var resumableDataCapacity = 32 << 20
        var decodeLimits = DecodeLimits()
        var decoderIsolation: DecoderIsolation?
        var thumbnailSettleLevels = 1
        var telemetry = SDTelemetry.none
    }

    private let state = Locked(State())
    private let observer = Locked<(@Sendable () -> Void)?>(nil)
    /// The downloader that copied this config: told of settings it applies at once.
    var onChange: (@Sendable () -> Void)? {
        get { observer.current }
        set { observer.set(newValue) }
    }

    /// Callbacks default to one serial queue (not the main queue: most Linux
    /// programs never run a main loop that would drain it).
    public static let defaultCallbackQueue = DispatchQueue(label: "SDWebImage.callbacks", qos: .userInitiated)

    /// A config with every default.
    public init() {}

    private subscript<T>(_ key: WritableKeyPath<State, T>) -> T {
        get { state.withLock { $0[keyPath: key] } }
        set { state.withLock { $0[keyPath: key] = newValue } }
    }

    /// Settings the running downloader applies at once (concurrency, order).
    private func setNotifying<T>(_ key: WritableKeyPath<State, T>, _ value: T) {
        state.withLock { $0[keyPath: key] = value }
        onChange?()
    }

    /// The transport settings as one value (ours, libcurl's
    /// `curl_easy_duphandle` shape): the properties below that set a
    /// download's policy, limits, timeouts, proxy and credentials are views
    /// of it, and each download starts from a copy, setting only its URL,
    /// headers, priority and decode. A `DownloadRequest` field with no
    /// property of its own here is set through this. `urlCredential`, when
    /// set, gives the user and password read here; setting the template back
    /// with those leaves `username` and `password` as they were.
    public var requestTemplate: DownloadRequest {
        get {
            state.withLock { s in
                var r = s.request
                if let c = s.urlCredential {
                    r.username = c.user
                    r.password = c.password
                }
                return r
            }
        }
        set {
            state.withLock { s in
                var r = newValue
                if let c = s.urlCredential, r.username == c.user, r.password == c.password {
                    // what the getter put in: the credential's, not the config's own
                    r.username = s.request.username
                    r.password = s.request.password
                }
                s.request = r
            }
        }
    }

    /// What downloads may reach (ours; SDWebImage has no such setting):
    /// schemes, hosts, address classes, https -> http redirects. Default
    /// `.none`; `SDWebImageDownloaderConfig.server()` turns it on.
    public var urlPolicy: URLPolicy {
        get { self[\.request.policy] }
        set { self[\.request.policy] = newValue }
    }
    /// Largest response body accepted (default 200 MiB).
    public var maxResponseBytes: Int {
        get { self[\.request.maxResponseBytes] }
        set { self[\.request.maxResponseBytes] = max(0, newValue) }
    }
    /// Redirects followed at most (default 10, URLSession's is 16).
    public var maxRedirects: Int {
        get { self[\.request.maxRedirects] }
        set { self[\.request.maxRedirects] = max(0, newValue) }
    }

    /// Ours: caps on every image this downloader decodes — source pixels,
    /// pixels a side, codec working memory per decode — whatever a request's
    /// decode options ask (each limit is the smaller of the two). Default:
    /// the C core's; `.server` in `server()`. Decodes also share the
    /// process-wide `ImageDecoder.memoryBudget`.
    public var decodeLimits: DecodeLimits {
        get { self[\.decodeLimits] }
        set { self[\.decodeLimits] = newValue }
    }

    /// Ours: decode downloads in sandboxed worker processes (seccomp,
    /// Landlock, memory, CPU and time limits per decode): a load with no
    /// `.imageCoder` of its own decodes the core formats there, once its
    /// bytes are in (no previews), and a decoder that overruns or is killed
    /// is that load's `badImageData`. nil (default, `server()` too): in this
    /// process. The worker program must call
    /// `DecoderIsolation.runWorkerIfAsked()` first in its `main` (so the
    /// library cannot turn this on by itself; `sdimage` does).
    public var decoderIsolation: DecoderIsolation? {
        get { self[\.decoderIsolation] }
        set { self[\.decoderIsolation] = newValue }
    }

    /// Ours: a thumbnail load (`.imageThumbnailPixelSize` or a render plan)
    /// of a progressive JPEG ends its transfer once the scans still to come
    /// cannot move any of the thumbnail's samples by more than this many
    /// levels at its decode scale (`DecodeOptions.settleLevels`): default 1,
    /// 0 only when nothing can change; -1 never ends early (as
    /// `.fetchWholeFile` on each load). The bytes fetched are stored as what
    /// they are: a later load that needs more resumes the transfer.
    public var thumbnailSettleLevels: Int {
        get { self[\.thumbnailSettleLevels] }
        set { self[\.thumbnailSettleLevels] = newValue }
    }

    /// Ours (URLSession's `connectionProxyDictionary`): the proxy downloads
    /// go through, e.g. "http://10.0.0.5:3128" or "socks5h://host:1080";
    /// "" for none. nil (default): the environment's `http_proxy`,
    /// `https_proxy`, `all_proxy` and `no_proxy`, except under a `urlPolicy`
    /// that blocks addresses, which must see where a connection goes and so
    /// ignores them. With a proxy under such a policy every download goes
    /// through it (the operator's, trusted): an IP-literal host is still
    /// judged, a name is the proxy's to resolve and police (SECURITY.md).
    public var proxy: String? {
        get { self[\.request.proxy] }
        set { self[\.request.proxy] = newValue }
    }

    /// The preset for a service fed untrusted URLs (SECURITY.md): the
    /// `.server` URL policy (http/https only, no non-public address, no
    /// https -> http), 3 redirects, 20 MiB bodies, 30 s downloads, 5 s to
    /// connect, 10 s without a byte or a floor of 1 KiB/s over 10 s, 6
    /// connections per host, and images of at most 40 megapixels, 8192
    /// pixels a side and 256 MiB of codec memory (`DecodeLimits.server`).
    /// The numbers are the C core's `SD_SERVER_*`, which its
    /// `sd_request_use_server_preset` sets for C programs.
    public static func server() -> SDWebImageDownloaderConfig {
        let c = SDWebImageDownloaderConfig()
        c.state.withLock { s in
            // the C core's server preset (sd_request_use_server_preset): its
            // numbers are read from its header, not restated here
            s.request.policy = .server
            s.request.maxRedirects = ServerPreset.maxRedirects
            s.request.maxResponseBytes = ServerPreset.maxResponseBytes
            s.request.timeout = ServerPreset.idleTimeout
            s.request.totalTimeout = ServerPreset.totalTimeout
            s.request.connectTimeout = ServerPreset.connectTimeout
            s.request.lowSpeedLimit = ServerPreset.lowSpeedLimit
            s.request.lowSpeedTime = ServerPreset.lowSpeedTime
            s.maxConnectionsPerHost = 6
            s.decodeLimits = .server
        }
        return c
    }

    /// Connections to one host at most (URLSession's
    /// `httpMaximumConnectionsPerHost`; default 6 as there, so a long list
    /// from one host does not open dozens of connections to it; 0: no limit
    /// but `maxConcurrentDownloads`). Downloads over it wait for a connection.
    public var maxConnectionsPerHost: Int {
        get { self[\.maxConnectionsPerHost] }
        set { setNotifying(\.maxConnectionsPerHost, max(0, newValue)) }
    }
    /// At most this many transfers at once (default 6); changeable at runtime.
    public var maxConcurrentDownloads: Int {
        get { self[\.maxConcurrentDownloads] }
        set { setNotifying(\.maxConcurrentDownloads, max(1, newValue)) }
    }
    /// Idle timeout in seconds (default 15): a download fails when no byte
    /// arrived for this long, as SDWebImage's (URLRequest.timeoutInterval,
    /// which URLSession applies to idle time). `downloadTotalTimeout`
    /// bounds the whole download.
    public var downloadTimeout: TimeInterval {
        get { self[\.request.timeout] }
        set { self[\.request.timeout] = newValue }
    }
    /// Ours: the longest one download may take however steadily its bytes
    /// come (a 1-byte-per-second drip ends here). Default 120 s; 0: none.
    public var downloadTotalTimeout: TimeInterval {
        get { self[\.request.totalTimeout] }
        set { self[\.request.totalTimeout] = max(0, newValue) }
    }
    /// Ours: a download fails with `timedOut` when fewer than this many
    /// bytes per second arrive for `downloadLowSpeedTime` seconds — a
    /// server dripping a byte now and then is never idle, so only this (or
    /// the total timeout) ends it early. Default 0: off; 1 KiB/s in `server()`.
    public var downloadLowSpeedLimit: Int {
        get { self[\.request.lowSpeedLimit] }
        set { self[\.request.lowSpeedLimit] = max(0, newValue) }
    }
    /// Seconds a download may stay under `downloadLowSpeedLimit` (default 10).
    public var downloadLowSpeedTime: TimeInterval {
        get { self[\.request.lowSpeedTime] }
        set { self[\.request.lowSpeedTime] = max(0, newValue) }
    }
    /// Ours: seconds to connect (name lookup, TCP and TLS) before a download
    /// fails with `timedOut`. Default 10 (the C core's); 5 in `server()`.
    public var downloadConnectTimeout: TimeInterval {
        get { self[\.request.connectTimeout] }
        set { self[\.request.connectTimeout] = max(0, newValue) }
    }
    /// Fraction of the expected size (0...1) that must arrive between two
    /// progress calls (default 0: every chunk). The last call always comes.
    public var minimumProgressInterval: Double {
        get { self[\.minimumProgressInterval] }
        set { self[\.minimumProgressInterval] = min(1, max(0, newValue)) }
    }
    /// The order queued downloads start in (default `.fifo`).
    public var executionOrder: SDWebImageDownloaderExecutionOrder {
        get { self[\.executionOrder] }
        set { setNotifying(\.executionOrder, newValue) }
    }
    /// A custom operation type (nil: `SDWebImageDownloaderOperation`).
    public var operationClass: (any SDWebImageDownloaderOperationProtocol.Type)? {
        get { self[\.operationClass] }
        set { self[\.operationClass] = newValue }
    }
    /// Basic-auth credential; wins over `username`/`password`.
    public var urlCredential: URLCredential? {
        get { self[\.urlCredential] }
        set { self[\.urlCredential] = newValue }
    }
    /// HTTP Basic user, with `password` (`urlCredential` wins).
    public var username: String? {
        get { self[\.request.username] }
        set { self[\.request.username] = newValue }
    }
    /// HTTP Basic password, with `username`.
    public var password: String? {
        get { self[\.request.password] }
        set { self[\.request.password] = newValue }
    }
    /// Default 200..<300; nil accepts any status.
    public var acceptableStatusCodes: IndexSet? {
        get { self[\.acceptableStatusCodes] }
        set { self[\.acceptableStatusCodes] = newValue }
    }
    /// MIME types (or prefixes such as "image/"); nil (default) accepts any:
    /// the format comes from the bytes.
    public var acceptableContentTypes: Set<String>? {
        get { self[\.acceptableContentTypes] }
        set { self[\.acceptableContentTypes] = newValue }
    }
    /// Rewrites every request (the context's `downloadRequestModifier` wins).
    public var requestModifier: (any SDWebImageDownloaderRequestModifierProtocol)? {
        get { self[\.requestModifier] }
        set { self[\.requestModifier] = newValue }
    }
    /// Inspects or rewrites every response (the context's `downloadResponseModifier` wins).
    public var responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)? {
        get { self[\.responseModifier] }
        set { self[\.responseModifier] = newValue }
    }
    /// Turns every download's bytes into image bytes (the context's `downloadDecryptor` wins).
    public var decryptor: (any SDWebImageDownloaderDecryptorProtocol)? {
        get { self[\.decryptor] }
        set { self[\.decryptor] = newValue }
    }
    /// Where callbacks run unless the context names a queue. Keep it serial:
    /// a subscriber's progress, previews and completion then arrive in order.
    public var callbackQueue: DispatchQueue {
        get { self[\.callbackQueue] }
        set { self[\.callbackQueue] = newValue }
    }
    /// Bytes the `.useHTTPCache` store may keep (default 16 MiB).
    public var httpCacheCapacity: Int {
        get { self[\.httpCacheCapacity] }
        set { self[\.httpCacheCapacity] = max(0, newValue) }
    }

    /// Bytes of broken-off downloads kept to resume them (default 32 MiB; 0:
    /// never resume). Ours: a later request for the URL — a retry, say —
    /// asks only for the rest, if the server still has the same resource.
    public var resumableDataCapacity: Int {
        get { self[\.resumableDataCapacity] }
        set { self[\.resumableDataCapacity] = max(0, newValue) }
    }

    /// Where the downloader's lines go (the application's `Logger`, as
    /// swift-log advises for libraries): a download at `.trace`, a failure at
    /// `.debug`, URLs with their credentials redacted. Default: nowhere. Read
    /// when the downloader is made.
    public var logger: Logger {
        get { self[\.telemetry].logger }
        set { self[\.telemetry].logger = newValue }
    }
    /// Dimensions added to every metric the downloader records (say
    /// `[("instance", "thumbnails")]`), so two downloaders' series differ.
    public var metricsDimensions: [(String, String)] {
        get { self[\.telemetry].metricsDimensions }
        set { self[\.telemetry].metricsDimensions = newValue }
    }

    /// An independent config with the same settings (a downloader copies the one it is given).
    public func copy() -> SDWebImageDownloaderConfig {
        let c = SDWebImageDownloaderConfig()
        c.state.set(state.current)
        return c
    }
}
