import Foundation

/// Image + downloaded bytes → bytes for the disk cache (nil: encode the image).
public protocol SDWebImageCacheSerializerProtocol: Sendable {
    /// The bytes to store on disk for `image`; nil: encode the image instead.
    func cacheData(with image: SDImage, originalData data: Data?, imageURL: URL?) -> Data?
}

/// A cache serializer from a closure.
public struct SDWebImageCacheSerializer: SDWebImageCacheSerializerProtocol {
    private let block: @Sendable (SDImage, Data?, URL?) -> Data?
    /// A serializer that asks `block` (image, downloaded bytes, URL).
    public init(block: @escaping @Sendable (SDImage, Data?, URL?) -> Data?) { self.block = block }
    /// What `block` answers.
    public func cacheData(with image: SDImage, originalData data: Data?, imageURL: URL?) -> Data? { block(image, data, imageURL) }
}
