import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The downloader's settings. A downloader copies the config it is given;
/// change `downloader.config` to affect that downloader (concurrency and
/// order take effect at once, the rest for downloads that start later).
/// Thread-safe.
public final class SDWebImageDownloaderConfig: @unchecked Sendable {
    /// The config `SDWebImageDownloader.shared` is made from.
    public static let `default` = SDWebImageDownloaderConfig()

    private let lock = NSLock()
    private var _maxConcurrentDownloads = 6
    private var _maxConnectionsPerHost = 6
    private var _downloadTimeout: TimeInterval = 15
    private var _downloadTotalTimeout = DownloadRequest.defaultTotalTimeout
    private var _minimumProgressInterval: Double = 0
    private var _executionOrder = SDWebImageDownloaderExecutionOrder.fifo
    private var _operationClass: (any SDWebImageDownloaderOperationProtocol.Type)?
    private var _urlCredential: URLCredential?
    private var _username: String?
    private var _password: String?
    private var _acceptableStatusCodes: IndexSet? = IndexSet(integersIn: 200..<300)
    private var _acceptableContentTypes: Set<String>?
    private var _requestModifier: (any SDWebImageDownloaderRequestModifierProtocol)?
    private var _responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?
    private var _decryptor: (any SDWebImageDownloaderDecryptorProtocol)?
    private var _callbackQueue: DispatchQueue = SDWebImageDownloaderConfig.defaultCallbackQueue
    private var _httpCacheCapacity = 16 << 20
    private var _resumableDataCapacity = 32 << 20
    private var _urlPolicy = URLPolicy.none
    private var _maxResponseBytes = DownloadRequest.defaultMaxResponseBytes
    private var _maxRedirects = DownloadRequest.defaultMaxRedirects
    var onChange: (@Sendable () -> Void)?

    /// Callbacks default to one serial queue (not the main queue: most Linux
    /// programs never run a main loop that would drain it).
    public static let defaultCallbackQueue = DispatchQueue(label: "SDWebImage.callbacks", qos: .userInitiated)

    public init() {}

    private func get<T>(_ v: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return v() }
    private func set(_ body: () -> Void, notify: Bool = false) {
        lock.lock()
        body()
        let cb = notify ? onChange : nil
        lock.unlock()
        cb?()
    }

    /// What downloads may reach (ours; SDWebImage has no such setting):
    /// schemes, hosts, address classes, https -> http redirects. Default
    /// `.none`; `SDWebImageDownloaderConfig.server()` turns it on.
    public var urlPolicy: URLPolicy {
        get { get { _urlPolicy } }
        set { set { _urlPolicy = newValue } }
    }
    /// Largest response body accepted (default 200 MiB).
    public var maxResponseBytes: Int {
        get { get { _maxResponseBytes } }
        set { set { _maxResponseBytes = max(0, newValue) } }
    }
    /// Redirects followed at most (default 10, URLSession's is 16).
    public var maxRedirects: Int {
        get { get { _maxRedirects } }
        set { set { _maxRedirects = max(0, newValue) } }
    }

    /// The preset for a service fed untrusted URLs (SECURITY.md): the
    /// `.server` URL policy (http/https only, no non-public address, no
    /// https -> http), 3 redirects, 20 MiB bodies, 30 s downloads, 6
    /// connections per host. The C core's `sd_request_use_server_preset`
    /// is the same for C programs.
    public static func server() -> SDWebImageDownloaderConfig {
        let c = SDWebImageDownloaderConfig()
        c._urlPolicy = .server
        c._maxRedirects = 3
        c._maxResponseBytes = 20 << 20
        c._downloadTimeout = 10
        c._downloadTotalTimeout = 30
        c._maxConnectionsPerHost = 6
        return c
    }

    /// At most this many transfers at once (default 6); changeable at runtime.
    /// Connections to one host at most (URLSession's
    /// `httpMaximumConnectionsPerHost`; default 6 as there, so a long list
    /// from one host does not open dozens of connections to it; 0: no limit
    /// but `maxConcurrentDownloads`). Downloads over it wait for a connection.
    public var maxConnectionsPerHost: Int {
        get { get { _maxConnectionsPerHost } }
        set { set({ _maxConnectionsPerHost = max(0, newValue) }, notify: true) }
    }
    public var maxConcurrentDownloads: Int {
        get { get { _maxConcurrentDownloads } }
        set { set({ _maxConcurrentDownloads = max(1, newValue) }, notify: true) }
    }
    /// Idle timeout in seconds (default 15): a download fails when no byte
    /// arrived for this long, as SDWebImage's (URLRequest.timeoutInterval,
    /// which URLSession applies to idle time). `downloadTotalTimeout`
    /// bounds the whole download.
    public var downloadTimeout: TimeInterval {
        get { get { _downloadTimeout } }
        set { set { _downloadTimeout = newValue } }
    }
    /// Ours: the longest one download may take however steadily its bytes
    /// come (a 1-byte-per-second drip ends here). Default 120 s; 0: none.
    public var downloadTotalTimeout: TimeInterval {
        get { get { _downloadTotalTimeout } }
        set { set { _downloadTotalTimeout = max(0, newValue) } }
    }
    /// Fraction of the expected size (0...1) that must arrive between two
    /// progress calls (default 0: every chunk). The last call always comes.
    public var minimumProgressInterval: Double {
        get { get { _minimumProgressInterval } }
        set { set { _minimumProgressInterval = min(1, max(0, newValue)) } }
    }
    public var executionOrder: SDWebImageDownloaderExecutionOrder {
        get { get { _executionOrder } }
        set { set({ _executionOrder = newValue }, notify: true) }
    }
    /// A custom operation type (nil: `SDWebImageDownloaderOperation`).
    public var operationClass: (any SDWebImageDownloaderOperationProtocol.Type)? {
        get { get { _operationClass } }
        set { set { _operationClass = newValue } }
    }
    /// Basic-auth credential; wins over `username`/`password`.
    public var urlCredential: URLCredential? {
        get { get { _urlCredential } }
        set { set { _urlCredential = newValue } }
    }
    public var username: String? {
        get { get { _username } }
        set { set { _username = newValue } }
    }
    public var password: String? {
        get { get { _password } }
        set { set { _password = newValue } }
    }
    /// Default 200..<300; nil accepts any status.
    public var acceptableStatusCodes: IndexSet? {
        get { get { _acceptableStatusCodes } }
        set { set { _acceptableStatusCodes = newValue } }
    }
    /// MIME types (or prefixes such as "image/"); nil (default) accepts any:
    /// the format comes from the bytes.
    public var acceptableContentTypes: Set<String>? {
        get { get { _acceptableContentTypes } }
        set { set { _acceptableContentTypes = newValue } }
    }
    public var requestModifier: (any SDWebImageDownloaderRequestModifierProtocol)? {
        get { get { _requestModifier } }
        set { set { _requestModifier = newValue } }
    }
    public var responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)? {
        get { get { _responseModifier } }
        set { set { _responseModifier = newValue } }
    }
    public var decryptor: (any SDWebImageDownloaderDecryptorProtocol)? {
        get { get { _decryptor } }
        set { set { _decryptor = newValue } }
    }
    /// Where callbacks run unless the context names a queue. Keep it serial:
    /// a subscriber's progress, previews and completion then arrive in order.
    public var callbackQueue: DispatchQueue {
        get { get { _callbackQueue } }
        set { set { _callbackQueue = newValue } }
    }
    /// Bytes the `.useHTTPCache` store may keep (default 16 MiB).
    public var httpCacheCapacity: Int {
        get { get { _httpCacheCapacity } }
        set { set { _httpCacheCapacity = max(0, newValue) } }
    }

    /// Bytes of broken-off downloads kept to resume them (default 32 MiB; 0:
    /// never resume). Ours: a later request for the URL — a retry, say —
    /// asks only for the rest, if the server still has the same resource.
    public var resumableDataCapacity: Int {
        get { get { _resumableDataCapacity } }
        set { set { _resumableDataCapacity = max(0, newValue) } }
    }

    public func copy() -> SDWebImageDownloaderConfig {
        let c = SDWebImageDownloaderConfig()
        lock.lock()
        defer { lock.unlock() }
        c._maxConcurrentDownloads = _maxConcurrentDownloads
        c._downloadTimeout = _downloadTimeout
        c._downloadTotalTimeout = _downloadTotalTimeout
        c._minimumProgressInterval = _minimumProgressInterval
        c._executionOrder = _executionOrder
        c._operationClass = _operationClass
        c._urlCredential = _urlCredential
        c._username = _username
        c._password = _password
        c._acceptableStatusCodes = _acceptableStatusCodes
        c._acceptableContentTypes = _acceptableContentTypes
        c._requestModifier = _requestModifier
        c._responseModifier = _responseModifier
        c._decryptor = _decryptor
        c._callbackQueue = _callbackQueue
        c._httpCacheCapacity = _httpCacheCapacity
        c._maxConnectionsPerHost = _maxConnectionsPerHost
        c._resumableDataCapacity = _resumableDataCapacity
        c._urlPolicy = _urlPolicy
        c._maxResponseBytes = _maxResponseBytes
        c._maxRedirects = _maxRedirects
        return c
    }
}
