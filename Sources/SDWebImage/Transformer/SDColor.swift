import Foundation
import SDCoders

/// An RGBA color, components 0...1 (not premultiplied).
public struct SDColor: Sendable, Hashable {
    /// Red, 0...1.
    public var red: Double
    /// Green, 0...1.
    public var green: Double
    /// Blue, 0...1.
    public var blue: Double
    /// Opacity, 0...1 (1: opaque).
    public var alpha: Double
    /// A color from straight (not premultiplied) components; opaque by default.
    public init(red: Double, green: Double, blue: Double, alpha: Double = 1) {
        (self.red, self.green, self.blue, self.alpha) = (red, green, blue, alpha)
    }
    /// Opaque black.
    public static let black = SDColor(red: 0, green: 0, blue: 0)
    /// Opaque white.
    public static let white = SDColor(red: 1, green: 1, blue: 1)
    /// Fully transparent.
    public static let clear = SDColor(red: 0, green: 0, blue: 0, alpha: 0)

    /// `#rrggbbaa`, as in transformer keys.
    public var hex: String {
        func c(_ v: Double) -> String { String(format: "%02x", Int((min(1, max(0, v)) * 255).rounded())) }
        return "#" + c(red) + c(green) + c(blue) + c(alpha)
    }

    /// The native premultiplied ARGB32 pixel.
    var premultiplied: UInt32 {
        let a = min(1, max(0, alpha))
        func c(_ v: Double) -> UInt32 { UInt32((min(1, max(0, v)) * a * 255).rounded()) }
        return UInt32((a * 255).rounded()) << 24 | c(red) << 16 | c(green) << 8 | c(blue)
    }
}

/// How a resize fits the image into the target size.
public enum SDImageScaleMode: Int, Sendable {
    /// Stretch to exactly the size.
    case fill = 0
    /// Keep the aspect ratio, fit inside; the rest stays transparent.
    case aspectFit = 1
    /// Keep the aspect ratio, cover the size; the overflow is cropped (centred).
    case aspectFill = 2
}
