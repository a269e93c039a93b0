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
    public let minimumProgressInterval: Double
    public let username: String?
    public let password: String?
    public let acceptableStatusCodes: IndexSet?
    public let acceptableContentTypes: Set<String>?
    public let responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?
    public let decryptor: (any SDWebImageDownloaderDecryptorProtocol)?
    public let callbackQueue: DispatchQueue
    let httpCache: HTTPValidatorCache?
    var resumable: ResumableDataStore?
    /// The config's `urlPolicy`, `maxResponseBytes`, `maxRedirects`.
    public var urlPolicy = URLPolicy.none
    public var maxResponseBytes = DownloadRequest.defaultMaxResponseBytes
    public var maxRedirects = DownloadRequest.defaultMaxRedirects
    /// The config's `downloadTotalTimeout`.
    public var totalTimeout = DownloadRequest.defaultTotalTimeout

    public init(loader: DataLoader, minimumProgressInterval: Double = 0, username: String? = nil,
                password: String? = nil, acceptableStatusCodes: IndexSet? = IndexSet(integersIn: 200..<300),
                acceptableContentTypes: Set<String>? = nil,
                responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)? = nil,
                decryptor: (any SDWebImageDownloaderDecryptorProtocol)? = nil,
                callbackQueue: DispatchQueue = SDWebImageDownloaderConfig.defaultCallbackQueue) {
        self.init(loader: loader, minimumProgressInterval: minimumProgressInterval, username: username,
                  password: password, acceptableStatusCodes: acceptableStatusCodes,
                  acceptableContentTypes: acceptableContentTypes, responseModifier: responseModifier,
                  decryptor: decryptor, callbackQueue: callbackQueue, httpCache: nil)
    }

    init(loader: DataLoader, minimumProgressInterval: Double, username: String?, password: String?,
         acceptableStatusCodes: IndexSet?, acceptableContentTypes: Set<String>?,
         responseModifier: (any SDWebImageDownloaderResponseModifierProtocol)?,
         decryptor: (any SDWebImageDownloaderDecryptorProtocol)?, callbackQueue: DispatchQueue,
         httpCache: HTTPValidatorCache?) {
        self.loader = loader
        self.minimumProgressInterval = minimumProgressInterval
        self.username = username
        self.password = password
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
    init(request: URLRequest, options: SDWebImageDownloaderOptions, context: SDWebImageContext?,
         environment: SDWebImageDownloaderOperationEnvironment)
    /// Subscribe; nil once the operation has finished (the caller starts a new one).
    func addHandlers(forProgress progressBlock: SDWebImageDownloaderProgressBlock?,
                     completed completedBlock: SDWebImageDownloaderCompletedBlock?,
                     decodeOptions: SDImageLoaderDecodeOptions) -> (any Sendable)?
    /// Unsubscribe: that subscriber's completion gets `cancelled`. True when it
    /// was the last one and the transfer stopped.
    func cancel(_ token: (any Sendable)?) -> Bool
    func start()
    /// Stop the transfer; every subscriber gets `cancelled`.
    func cancel()
    var request: URLRequest? { get }
    var response: URLResponse? { get }
    var metrics: DownloadMetrics? { get }
    var isExecuting: Bool { get }
    var isFinished: Bool { get }
    var isCancelled: Bool { get }
    /// Called once when the operation finished (the downloader forgets it then).
    var completionBlock: (@Sendable () -> Void)? { get set }
    /// Move the transfer up or down its queue while it waits (the downloader
    /// calls it with the highest priority of the subscribers as they join,
    /// leave or change theirs). Default: ignored.
    func setPriority(_ priority: DownloadPriority)
}

extension SDWebImageDownloaderOperationProtocol {
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
