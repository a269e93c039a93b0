import Dispatch
import Foundation

/// A context key; SDWebImage's extensible, string-backed names.
public struct SDWebImageContextOption: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    /// `CGSize` (or `Int` for a square box): decode a thumbnail no larger than this, in pixels.
    public static let imageThumbnailPixelSize: Self = "imageThumbnailPixelSize"
    /// `Bool`, default true: the thumbnail keeps the aspect ratio (false fills the box).
    public static let imagePreserveAspectRatio: Self = "imagePreserveAspectRatio"
    /// `RenderPlan`: decode to this render — a crop, a resize type (fit,
    /// fill, fill-down, force, auto), gravity, extend, padding, turns —
    /// shrinking on load at its scale, in one pass of the C core. It
    /// replaces `.imageThumbnailPixelSize` for the load and is cached under
    /// a key of its own. Not SDWebImage's (imgproxy's and libvips' model).
    public static let imageRenderPlan: Self = "imageRenderPlan"
    /// `Double` ≥ 1: the image's scale (default: `@2x`/`@3x` in the URL's file name, else 1).
    public static let imageScaleFactor: Self = "imageScaleFactor"
    /// `Int`: byte budget for the decoded bitmap (with `.scaleDownLargeImages`, a default applies).
    public static let imageScaleDownLimitBytes: Self = "imageScaleDownLimitBytes"
    /// `Resampling` (or just a `Resampling.Filter`): how a thumbnail or a
    /// scaled-down image is resampled (default `Resampling.default`:
    /// Lanczos-3 after shrinking on load to twice the size). Not SDWebImage's:
    /// ImageIO chooses there. A thumbnail made another way is cached under
    /// its own key.
    public static let imageResampling: Self = "imageResampling"
    /// `ColorManagement`: `.convertToSRGB` (default) or `.keepSource` (the
    /// pixels as stored, `SDImage.iccProfile` set when the coders decode).
    /// SDWebImage has ImageIO convert; this is the way to opt out.
    public static let imageColorManagement: Self = "imageColorManagement"
    /// `SDWebImageDownloaderRequestModifierProtocol` for this request only.
    public static let downloadRequestModifier: Self = "downloadRequestModifier"
    /// `SDWebImageDownloaderResponseModifierProtocol` for this request only.
    public static let downloadResponseModifier: Self = "downloadResponseModifier"
    /// `SDWebImageDownloaderDecryptorProtocol` for this request only.
    public static let downloadDecryptor: Self = "downloadDecryptor"
    /// `SDCallbackQueue` (queue + policy) or a plain `DispatchQueue` (blocks
    /// dispatched to it) for this request's callbacks; serial keeps them in order.
    public static let callbackQueue: Self = "callbackQueue"
    /// `SDImageCoder`: decode with this coder only, without asking `canDecode`
    /// (an `SDImageCodersManager` of your own is asked as a list instead).
    public static let imageCoder: Self = "imageCoder"
    /// `SDImageCoderOptions` handed to the coder; the keys above
    /// (`.imageScaleFactor`, `.imageThumbnailPixelSize`, …) take precedence.
    public static let imageDecodeOptions: Self = "imageDecodeOptions"
    /// `SDImageCoderOptions` for encoding a derived image (thumbnail,
    /// transformed) when it is stored: format-independent quality, max size.
    public static let imageEncodeOptions: Self = "imageEncodeOptions"
    /// `SDAnimatedImage.Type`: the class an image is decoded into (with
    /// `.matchAnimatedImageClass`, any other result is `badImageData`).
    public static let animatedImageClass: Self = "animatedImageClass"
}

/// Per-request knobs beyond the option flags. Values must be `Sendable`.
public typealias SDWebImageContext = [SDWebImageContextOption: any Sendable]

/// Typed reads of the string-keyed dictionaries (context, coder options).
extension Dictionary where Value == any Sendable {
    func bool(_ key: Key) -> Bool? { self[key] as? Bool }

    /// Any integer or floating-point type (a `UInt32` colour, a `CGFloat` size, …).
    func double(_ key: Key) -> Double? {
        switch self[key] {
        case let v as any BinaryFloatingPoint: Double(v)
        case let v as any BinaryInteger: Double(v)
        default: nil
        }
    }

    /// Any integer type, clamped to `Int`; a finite floating-point value
    /// rounded toward zero and clamped (NaN and infinities: nil).
    func int(_ key: Key) -> Int? {
        switch self[key] {
        case let v as any BinaryInteger: Int(clamping: v)
        case let v as any BinaryFloatingPoint:
            Double(v).isFinite ? Int(Swift.max(-9.2e18, Swift.min(9.2e18, Double(v)))) : nil
        default: nil
        }
    }

    /// A pixel box from a `CGSize`, or a square from a number.
    func pixelSize(_ key: Key) -> (width: Int, height: Int)? {
        if let s = self[key] as? CGSize {
            return s.width > 0 || s.height > 0 ? (Int(s.width.rounded()), Int(s.height.rounded())) : nil
        }
        if let n = int(key), n > 0 { return (n, n) }
        return nil
    }
}
