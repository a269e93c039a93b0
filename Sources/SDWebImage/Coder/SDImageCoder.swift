import Foundation
import SDCoders

/// A coder option key; SDWebImage's `SDImageCoderOption` names.
public struct SDImageCoderOption: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    // MARK: Decoding
    /// `Bool`: an animation decodes to its first frame, a still image.
    public static let decodeFirstFrameOnly: Self = "decodeFirstFrameOnly"
    /// `Double` ≥ 1: the scale stamped on the image.
    public static let decodeScaleFactor: Self = "decodeScaleFactor"
    /// `Bool`, default true: a thumbnail keeps the aspect ratio (false fills the box).
    public static let decodePreserveAspectRatio: Self = "decodePreserveAspectRatio"
    /// `CGSize` (or `Int` for a square box): decode no larger than this, in pixels.
    public static let decodeThumbnailPixelSize: Self = "decodeThumbnailPixelSize"
    /// `Int`: byte budget of the decoded bitmap (scaled down to fit).
    public static let decodeScaleDownLimitBytes: Self = "decodeScaleDownLimitBytes"
    /// `DecodeOptions`: the C core's limits and switches (max pixels, frames,
    /// frame cache, orientation) as a base; the keys above override it. Ours.
    public static let decodeCoreOptions: Self = "decodeCoreOptions"
    /// `DecodeCancellation`: cancelling it ends an isolated decode in flight
    /// (`SDImageCoreCoder(isolation:)`), its worker killed. Ours.
    public static let decodeCancellation: Self = "decodeCancellation"

    // MARK: Encoding
    /// `Double` 0...1, default 1: quality (JPEG, WebP, AVIF; 1 is lossless
    /// for AVIF, the best lossy quality for JPEG and WebP).
    public static let encodeCompressionQuality: Self = "encodeCompressionQuality"
    /// `CGSize` (or `Int`): downsize to fit inside before encoding (never upscales).
    public static let encodeMaxPixelSize: Self = "encodeMaxPixelSize"
    /// `Int` bytes: the highest quality whose output fits (a bounded search).
    public static let encodeMaxFileSize: Self = "encodeMaxFileSize"
    /// `Bool`: an animated image encodes its first frame only.
    public static let encodeFirstFrameOnly: Self = "encodeFirstFrameOnly"
    /// `Bool`: WebP lossless (the quality is ignored). SDWebImageWebPCoder's name.
    public static let encodeWebPLossless: Self = "encodeWebPLossless"
    /// `Int` 0...10 (slowest...fastest), default 8: the AV1 encoder's speed. Ours.
    public static let encodeAVIFSpeed: Self = "encodeAVIFSpeed"
    /// `Bool`, default false: a JPEG with Huffman tables made for the image
    /// (libvips' `optimize_coding`): the same pixels in a smaller file, for
    /// a second pass over the coefficients. Ours.
    public static let encodeJPEGOptimizeCoding: Self = "encodeJPEGOptimizeCoding"
    /// `UInt32` 0xRRGGBB, default white: what alpha is composited on for a
    /// format without alpha (JPEG).
    public static let encodeBackgroundColor: Self = "encodeBackgroundColor"
}

/// Options for one decode or encode (SDWebImage's `SDImageCoderOptions`).
public typealias SDImageCoderOptions = [SDImageCoderOption: any Sendable]

/// Decodes and encodes image data (SDWebImage's `SDImageCoder`). Add yours
/// to `SDImageCodersManager.shared`: every load, cache read, thumbnail and
/// transform then asks it before the built-in coders.
public protocol SDImageCoder: AnyObject, Sendable {
    /// This coder decodes `data` (usually a magic-byte check).
    func canDecode(from data: Data?) -> Bool
    /// The image, or nil when the data cannot be decoded.
    func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage?
    /// This coder writes `format`.
    func canEncode(to format: SDImageFormat) -> Bool
    /// Encoded data, or nil when it cannot be encoded.
    func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data?
    /// The formats this coder can claim, when it can say before seeing data
    /// (a format of your own counts: data the C core does not recognise is
    /// then handed to you). A download of any other format streams into the
    /// C core's decoder while a coder that says nil — the default: it may
    /// claim any data — makes every download decode through the list once
    /// its bytes are in.
    var claimedFormats: Set<SDImageFormat>? { get }
}

extension SDImageCoder {
    /// Nil: this coder may claim any data (`canDecode(from:)` decides).
    public var claimedFormats: Set<SDImageFormat>? { nil }
}

/// A coder that decodes as the bytes arrive (SDWebImage's
/// `SDProgressiveImageCoder`): one instance per download, fed the whole data
/// so far each time.
public protocol SDProgressiveImageCoder: SDImageCoder {
    /// This coder decodes `data`'s format as it arrives (the first bytes are enough to tell).
    func canIncrementalDecode(from data: Data?) -> Bool
    /// A fresh progressive decoder for one download.
    init(incrementalWithOptions options: SDImageCoderOptions?)
    /// All the data so far (not only the new bytes); `finished` on the last call.
    func updateIncrementalData(_ data: Data?, finished: Bool)
    /// What can be shown now, or nil.
    func incrementalDecodedImage(options: SDImageCoderOptions?) -> SDImage?
}

/// A coder that is also the frame source of one animation (SDWebImage's
/// `SDAnimatedImageCoder`): `SDAnimatedImage` asks it for frames on demand.
public protocol SDAnimatedImageCoder: SDImageCoder, SDAnimatedImageProvider {
    /// A frame source over `data`; nil when it is not this coder's format or does not decode.
    init?(animatedImageData data: Data?, options: SDImageCoderOptions?)
}

extension Dictionary where Key == SDImageCoderOption, Value == any Sendable {
    /// The C core's decode options these coder options ask for.
    var decodeOptions: DecodeOptions {
        var o = self[.decodeCoreOptions] as? DecodeOptions ?? DecodeOptions()
        if let size = pixelSize(.decodeThumbnailPixelSize) { o.thumbnailPixelSize = size }
        if let keep = bool(.decodePreserveAspectRatio) { o.preserveAspectRatio = keep }
        if let bytes = int(.decodeScaleDownLimitBytes) { o.scaleDownLimitBytes = Swift.max(0, bytes) }
        if let first = bool(.decodeFirstFrameOnly) { o.firstFrameOnly = first }
        return o
    }

    var scaleFactor: Double { Swift.max(1, double(.decodeScaleFactor) ?? 1) }
}
