import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDCoders
import SDDownloader

/// Everything an operation needs from its downloader, resolved per request.
public struct SDWebImageDownloaderOperationEnvironment: Sendable {
    /// The C transfer loop shared by the downloader's operations.
    public let loader: DataLoader
    /// Minimum seconds between two progress calls (the config's `minimumProgressInterval`).
    public let minimumProgressInterval: Double
    /// The transport settings every download of this operation starts from:
    /// the config's `requestTemplate` (policy, limits, timeouts, proxy,
    /// credentials). The operation copies it and sets the URL, headers,
    /// priority and decode.
    public var requestTemplate: DownloadRequest
    /// HTTP Basic user (the config's `username`, or its `urlCredential`'s).
    public var username: String? { requestTemplate.username }
    /// HTTP Basic password (the config's `password`, or its `urlCredential`'s).
    public var password: String? { requestTemplate.password }
    /// Statuses that count as success; nil: any.
    public let acceptableStatusCodes: IndexSet?
    /// Content types that count as success; nil: any.
    public let acceptableContentTypes: Set<String>?
    /// Sees the response first and may replace or refuse it.
    public let responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?
    /// Turns the downloaded bytes into image bytes before decoding.
    public let decryptor: (any SDWebImageDownloaderDecryptorProtocol)?
    /// Where progress and completion blocks run.
    public let callbackQueue: DispatchQueue
    let httpCache: HTTPValidatorCache?
    var resumable: ResumableDataStore?
    /// The config's `thumbnailSettleLevels` (-1: thumbnails read whole files).
    var settleLevels = -1
    /// An environment for operations of your own (tests, custom downloaders); the
    /// downloader builds one per request from its config.
    public init(loader: DataLoader, minimumProgressInterval: Double = 0, username: String? = nil,
                password: String? = nil, acceptableStatusCodes: IndexSet? = IndexSet(integersIn: 200..<300),
                acceptableContentTypes: Set<String>? = nil,
                responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)? = nil,
                decryptor: (any SDWebImageDownloaderDecryptorProtocol)? = nil,
                callbackQueue: DispatchQueue = SDWebImageDownloaderConfig.defaultCallbackQueue) {
        self.init(loader: loader, minimumProgressInterval: minimumProgressInterval,
                  acceptableStatusCodes: acceptableStatusCodes,
                  acceptableContentTypes: acceptableContentTypes, responseModifier: responseModifier,
                  decryptor: decryptor, callbackQueue: callbackQueue, httpCache: nil)
        requestTemplate.username = username
        requestTemplate.password = password
    }

    init(loader: DataLoader, minimumProgressInterval: Double, requestTemplate: DownloadRequest = .template,
         acceptableStatusCodes: IndexSet?, acceptableContentTypes: Set<String>?,
         responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?,
         decryptor: (any SDWebImageDownloaderDecryptorProtocol)?, callbackQueue: DispatchQueue,
         httpCache: HTTPValidatorCache?) {
        self.loader = loader
        self.minimumProgressInterval = minimumProgressInterval
        self.requestTemplate = requestTemplate
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
        self.responseModifier = responseModifier
        self.decryptor = decryptor
        self.callbackQueue = callbackQueue
        self.httpCache = httpCache
    }
}

/// An operation downloads one URL for any number of subscribers. Plug your
/// own in with `SDWebImageDownloaderConfig.operationClass`.
public protocol SDWebImageDownloaderOperationProtocol: AnyObject, Sendable {
    /// An operation for `request`; it does nothing until `start()`.
    init(request: URLRequest, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
         environment: SDWebImageDownloaderOperationEnvironment)
    /// Subscribe; nil once the operation has finished (the caller starts a new one).
    func addHandlers(forProgress progressBlock: SDWebImageDownloaderProgressBlock?,
                     completed completedBlock: SDWebImageDownloaderCompletedBlock?,
                     decodeOptions: SDImageLoaderDecodeOptions) -> (any Sendable)?
    /// Unsubscribe: that subscriber's completion gets `cancelled`. True when it
    /// was the last one and the transfer stopped.
    func cancel(_ token: (any Sendable)?) -> Bool
    /// Begin the transfer (the downloader calls it once).
    func start()
    /// Stop the transfer; every subscriber gets `cancelled`.
    func cancel()
    /// The request as sent (after the request modifier).
    var request: URLRequest? { get }
    /// The response, once its headers arrived.
    var response: URLResponse? { get }
    /// Timings and sizes, once the transfer finished.
    var metrics: DownloadMetrics? { get }
    /// Started and not yet finished.
    var isExecuting: Bool { get }
    /// Finished, whatever the outcome.
    var isFinished: Bool { get }
    /// Cancelled (by `cancel()` or by its last subscriber leaving).
    var isCancelled: Bool { get }
    /// Called once when the operation finished (the downloader forgets it then).
    var completionBlock: (@Sendable () -> Void)? { get set }
    /// Move the transfer up or down its queue while it waits (the downloader
    /// calls it with the highest priority of the subscribers as they join,
    /// leave or change theirs). Default: ignored.
    func setPriority(_ priority: DownloadPriority)
}

extension SDWebImageDownloaderOperationProtocol {
    /// Ignored: an operation of your own need not reorder anything.
    public func setPriority(_ priority: DownloadPriority) {}
}

public extension Notification.Name {
    /// The operation started its transfer (object: the operation).
    static let SDWebImageDownloadStart = Notification.Name("SDWebImageDownloadStartNotification")
    /// The response headers arrived (object: the operation).
    static let SDWebImageDownloadReceiveResponse = Notification.Name("SDWebImageDownloadReceiveResponseNotification")
    /// The transfer ended, whatever the outcome (object: the operation).
    static let SDWebImageDownloadStop = Notification.Name("SDWebImageDownloadStopNotification")
    /// The transfer succeeded (object: the operation).
    static let SDWebImageDownloadFinish = Notification.Name("SDWebImageDownloadFinishNotification")
}

/// Notifications are posted from one serial queue, never the loop thread, in order.
let notificationQueue = DispatchQueue(label: "SDWebImage.notifications")

func post(_ name: Notification.Name, _ object: any SDWebImageDownloaderOperationProtocol) {
    notificationQueue.async { NotificationCenter.default.post(name: name, object: object) }
}
