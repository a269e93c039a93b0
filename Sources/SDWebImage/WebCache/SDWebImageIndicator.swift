import Dispatch
import Foundation
import SDSync

/// What a view shows while it loads (SDWebImage's `SDWebImageIndicator`):
/// the view layer starts it when a load with a URL begins, passes it the
/// fraction of bytes as they arrive, and stops it when the load ends (image,
/// failure or cancel) — every call on the view's queue. Set one with
/// ``SDWebImageView/sd_imageIndicator``.
public protocol SDWebImageIndicator: AnyObject, Sendable {
    /// A load began.
    func startAnimatingIndicator()
    /// The load ended.
    func stopAnimatingIndicator()
    /// `progress` (0...1) of the bytes arrived; the default ignores it.
    func updateIndicatorProgress(_ progress: Double)
}

extension SDWebImageIndicator {
    public func updateIndicatorProgress(_ progress: Double) {}
}

/// An opaque colour for the built-in indicators.
public struct SDWebImageIndicatorColor: Sendable, Equatable {
    /// Red, green and blue, 0...255.
    public var r, g, b: UInt8
    /// The colour `r`, `g`, `b`.
    public init(_ r: UInt8, _ g: UInt8, _ b: UInt8) { self.r = r; self.g = g; self.b = b }
}
