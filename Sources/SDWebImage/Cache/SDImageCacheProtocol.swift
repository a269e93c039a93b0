import Dispatch
import Foundation
import SDCache
import SDCoders
import SDSync

/// `(image, data, cacheType)`: where it was found (`.none` on a miss).
public typealias SDImageCacheQueryCompletionBlock = @Sendable (_ image: SDImage?, _ data: Data?, _ cacheType: SDImageCacheType) -> Void

/// A cancellable cache query. Cancelling a pending query calls its `done`
/// at once (nil, nil, `.none`), on the cancelling thread, exactly once.
public final class SDImageCacheToken: SDWebImageOperation, Sendable {
    /// The key queried.
    public let key: String?
    private let state: Locked<(done: SDImageCacheQueryCompletionBlock?, cancelled: Bool)>

    init(key: String?, done: SDImageCacheQueryCompletionBlock?) {
        self.key = key
        state = Locked((done, false))
    }

    /// Cancelled before its answer was delivered.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancel: the completion runs now with a miss, unless it already ran.
    public func cancel() {
        let d = state.withLock { s -> SDImageCacheQueryCompletionBlock? in
            guard let d = s.done else { return nil }
            s.done = nil
            s.cancelled = true
            return d
        }
        d?(nil, nil, .none)
    }

    /// The one real answer, on `queue` (nil: right here). A cancel that comes
    /// before it runs wins, even once it is queued.
    func finish(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType, on queue: SDCallbackQueue?) {
        guard let queue else { return deliver(image, data, type) }
        queue.async { self.deliver(image, data, type) }
    }

    private func deliver(_ image: SDImage?, _ data: Data?, _ type: SDImageCacheType) {
        let d = state.withLock { s in defer { s.done = nil }; return s.done }
        d?(image, data, type)
    }
}

/// The image cache SDWebImage's manager talks to.
public protocol SDImageCacheProtocol: AnyObject, Sendable {
    /// Look `key` up in the tiers `cacheType` names; `completion` gets the image (and
    /// the data, when asked for or found on disk) and where it was found. Returns what
    /// cancels the query (nil when it answered synchronously).
    func queryImage(forKey key: String?, options: SDWebImageOptions, context: SDWebImageContext?,
                    cacheType: SDImageCacheType, completion: SDImageCacheQueryCompletionBlock?) -> (any SDWebImageOperation)?
    /// `completion` gets the disk error, if storing to disk failed.
    func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
               completion: (@Sendable ((any Error)?) -> Void)?)
    /// Remove `key` from the tiers `cacheType` names; `completion` once it is gone.
    func removeImage(forKey key: String?, cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?)
    /// Where `key` is stored (`.memory`, `.disk`, or `.none`), checking the tiers
    /// `cacheType` names, memory first.
    func containsImage(forKey key: String?, cacheType: SDImageCacheType,
                       completion: @escaping @Sendable (SDImageCacheType) -> Void)
    /// Empty the tiers `cacheType` names; `completion` once they are empty.
    func clear(with cacheType: SDImageCacheType, completion: (@Sendable () -> Void)?)

    // Revalidation hooks: the manager keeps an entry's HTTP validators (ETag,
    // Last-Modified) as extended data and sends them with `.refreshCached`.
    // A cache without them still works; it just cannot revalidate.

    /// Extended data stored with the entry for `key`. Default: none.
    func extendedData(forKey key: String?) -> Data?
    /// Store with extended data kept beside the bytes. Default: store without it.
    func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
               extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?)
    /// The server said the entry for `key` is current (a 304): make it new
    /// again for age-based expiry. Default: nothing.
    func touchDiskEntry(forKey key: String?)
    /// Replace the extended data of an existing entry (a 304 brought new
    /// validators or a new max-age). Default: nothing.
    func storeExtendedData(_ data: Data?, forKey key: String?) throws
}

extension SDImageCacheProtocol {
    public func extendedData(forKey key: String?) -> Data? { nil }
    public func store(_ image: SDImage?, imageData: Data?, forKey key: String?, cacheType: SDImageCacheType,
                      extendedData: Data?, completion: (@Sendable ((any Error)?) -> Void)?) {
        store(image, imageData: imageData, forKey: key, cacheType: cacheType, completion: completion)
    }
    public func touchDiskEntry(forKey key: String?) {}
    public func storeExtendedData(_ data: Data?, forKey key: String?) throws {}
}
