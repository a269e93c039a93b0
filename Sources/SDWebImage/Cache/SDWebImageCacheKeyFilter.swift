import Foundation

/// URL → cache key.
public protocol SDWebImageCacheKeyFilterProtocol: Sendable {
    /// The cache key for `url`; nil: the URL's absolute string.
    func cacheKey(for url: URL) -> String?
}

/// A cache key filter from a closure.
public struct SDWebImageCacheKeyFilter: SDWebImageCacheKeyFilterProtocol {
    private let block: @Sendable (URL) -> String?
    /// A filter that asks `block`.
    public init(block: @escaping @Sendable (URL) -> String?) { self.block = block }
    /// What `block` answers.
    public func cacheKey(for url: URL) -> String? { block(url) }
}
