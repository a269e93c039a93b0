import Dispatch
import Foundation

/// Anything that can be cancelled: cache queries, downloads, manager loads.
public protocol SDWebImageOperation: AnyObject, Sendable {
    /// Cancel it, if it has not completed: a cache query then answers a miss, a
    /// download or a manager load fails with `cancelled` (once).
    func cancel()
}

extension SDWebImageDownloadToken: SDWebImageOperation {}

/// Where callbacks go when nobody said: one serial queue (not the main queue:
/// most Linux programs never drain it).
let sdDefaultCallbackQueue = SDWebImageDownloaderConfig.defaultCallbackQueue

extension Dictionary where Key == SDWebImageContextOption, Value == any Sendable {
    var callbackQueue: SDCallbackQueue? { SDCallbackQueue.from(self[.callbackQueue]) }
}
