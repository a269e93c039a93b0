import Foundation

/// Turns a decoded image into another; its key names the result in caches.
public protocol SDImageTransformer: Sendable {
    /// Names the transformation in cache keys: equal keys must mean equal output.
    var transformerKey: String { get }
    /// The transformed image; nil when it cannot be made (the load then fails).
    /// `key` is the image's cache key.
    func transformedImage(with image: SDImage, forKey key: String) -> SDImage?
}
