import Foundation
import SDCoders

/// SDWebImage's name for the image format: the one mirror of the C core's
/// `sd_format` (SDCoders' `ImageFormat`). SDWebImage's `.undefined` is
/// `.unknown`.
public typealias SDImageFormat = ImageFormat

extension ImageFormat {
    /// SDWebImage's name for "no format" (`SDImageFormatUndefined`).
    public static var undefined: ImageFormat { .unknown }

    /// Sniffed from the magic bytes (SDWebImage's `sd_imageFormat(forImageData:)`).
    public init(data: Data?) {
        guard let data else { self = .unknown; return }
        self = data.withUnsafeBytes { ImageFormat(sniffing: $0) }
    }
}

/// The decoded image used everywhere above the C core: premultiplied ARGB32
/// in native byte order (B,G,R,A bytes on little-endian, cairo's ARGB32),
/// immutable and shareable across threads. `SDAnimatedImage` is the one
/// subclass in this module; a subclass of yours must stay thread-safe.
// @unchecked: immutable after init (subclasses keep it so); the Bitmap is immutable.
open class SDImage: @unchecked Sendable, CustomStringConvertible {
    /// The pixels (owned; freed with the last reference).
    public let bitmap: Bitmap
    /// The format it was decoded from (`.undefined` for images made in memory).
    public let format: SDImageFormat
    /// The EXIF orientation of the source (1...8), already applied to the pixels.
    public let orientation: Int
    /// Pixels per point: `@2x` in the URL gives 2.
    public let scale: Double
    /// A progressive preview, not the final image.
    public let isIncremental: Bool
    /// Pixel size of the source before any thumbnailing (0 when unknown).
    public let sourcePixelWidth: Int
    /// Pixel height of the source before any thumbnailing (0 when unknown).
    public let sourcePixelHeight: Int
    /// The ICC profile of the source, when it was decoded with
    /// `.imageColorManagement: ColorManagement.keepSource` (the pixels are
    /// then as stored) and the coders decoded it; nil otherwise (the pixels
    /// are sRGB).
    public let iccProfile: [UInt8]?
    /// Where the other frames of an animation come from (nil for a still
    /// image; `bitmap` is always frame 0): see `SDImageFrame.swift`.
    open var animatedProvider: (any SDAnimatedImageProvider)? { provider }
    private let provider: (any SDAnimatedImageProvider)?

    /// An image over `bitmap` (not copied). `orientation` is what the source said
    /// (the pixels are upright already); a `scale` below 1 counts as 1.
    public init(bitmap: Bitmap, format: SDImageFormat = .undefined, orientation: Int = 1, scale: Double = 1,
                isIncremental: Bool = false, sourcePixelWidth: Int = 0, sourcePixelHeight: Int = 0,
                animatedProvider: (any SDAnimatedImageProvider)? = nil, iccProfile: [UInt8]? = nil) {
        self.iccProfile = iccProfile
        self.bitmap = bitmap
        self.format = format
        self.orientation = orientation
        self.scale = scale >= 1 ? scale : 1
        self.isIncremental = isIncremental
        self.sourcePixelWidth = sourcePixelWidth
        self.sourcePixelHeight = sourcePixelHeight
        self.provider = animatedProvider
    }

    convenience init(decoded d: DecodedImage, scale: Double, isIncremental: Bool = false) {
        self.init(bitmap: d.bitmap, format: d.format, orientation: d.orientation, scale: scale,
                  isIncremental: isIncremental, sourcePixelWidth: d.sourceWidth, sourcePixelHeight: d.sourceHeight,
                  iccProfile: d.iccProfile)
    }

    /// Decode through `SDImageCodersManager.shared` (nil when no coder
    /// decodes it), like `UIImage(data:scale:)`. An animation keeps its
    /// frames (they come from the decoded `SDAnimatedImage`).
    public convenience init?(data: Data, scale: Double = 1, options: DecodeOptions = DecodeOptions()) {
        guard let image = try? SDImage.decode(data, scale: scale, options: options) else { return nil }
        self.init(bitmap: image.bitmap, format: image.format, orientation: image.orientation, scale: image.scale,
                  sourcePixelWidth: image.sourcePixelWidth, sourcePixelHeight: image.sourcePixelHeight,
                  animatedProvider: image.animatedProvider)
    }

    /// Decode through `SDImageCodersManager.shared`, saying why it failed
    /// (an animation comes back as an `SDAnimatedImage`).
    public static func decode(_ data: Data, scale: Double = 1,
                              options: DecodeOptions = DecodeOptions()) throws(SDWebImageError) -> SDImage {
        let o: SDImageCoderOptions = [.decodeCoreOptions: options, .decodeScaleFactor: scale,
                                      .decodeFirstFrameOnly: options.firstFrameOnly]
        return try SDImageCodersManager.shared.decode(data, options: o).get().image
    }

    /// Width in pixels.
    public var width: Int { bitmap.width }
    /// Height in pixels.
    public var height: Int { bitmap.height }
    /// Bytes from one row of pixels to the next (at least 4 × width).
    public var bytesPerRow: Int { bitmap.bytesPerRow }
    /// Size in points (pixels / scale), as `UIImage.size`.
    public var size: CGSize { CGSize(width: Double(width) / scale, height: Double(height) / scale) }
    /// Bytes of decoded pixels: what it costs in a memory cache (every
    /// frame held in memory counts, as SDWebImage's `sd_memoryCost`).
    open var cost: Int { (animatedProvider as? SDFramesProvider)?.cost ?? bitmap.cost }
    /// True if any pixel is not fully opaque.
    public var hasAlpha: Bool { bitmap.hasAlpha }

    /// Borrow the pixels without copying; valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bitmap.withUnsafeBytes(body)
    }

    /// PNG data (RGBA when there is alpha, RGB otherwise).
    public func pngData() -> Data? {
        (try? bitmap.pngData()).map { Data($0) }
    }

    /// JPEG data, quality 0...1 as `UIImage.jpegData(compressionQuality:)`.
    public func jpegData(compressionQuality: Double = 0.9) -> Data? {
        let q = Int((min(1, max(0, compressionQuality)) * 100).rounded())
        return (try? bitmap.jpegData(quality: max(1, q))).map { Data($0) }
    }

    /// Encoded data through `SDImageCodersManager.shared`, as SDWebImage's
    /// `sd_imageData(as:compressionQuality:firstFrameOnly:)`: any format a
    /// coder there writes (an animation stays one unless `firstFrameOnly`);
    /// `.undefined` picks PNG when there is alpha, JPEG otherwise. nil when no
    /// coder writes `format`.
    public func sd_imageData(as format: SDImageFormat = .undefined, compressionQuality: Double = 1,
                             firstFrameOnly: Bool = false) -> Data? {
        SDImageCodersManager.shared.encodedData(with: self, format: format, options: [
            .encodeCompressionQuality: compressionQuality, .encodeFirstFrameOnly: firstFrameOnly,
        ])
    }

    public var description: String {
        "<SDImage \(width)x\(height) @\(scale)x \(format)\(isIncremental ? " incremental" : "")"
            + (sd_isAnimated ? " \(sd_imageFrameCount) frames>" : ">")
    }
}

/// The scale a key implies: `@2x`/`@3x` before the extension (or at the end)
/// of the last path component, as SDWebImage's `SDImageScaleFactorForKey`.
public func SDImageScaleFactorForKey(_ key: String?) -> Double {
    guard let key, !key.isEmpty else { return 1 }
    var name = Substring(key)
    if let q = name.firstIndex(where: { $0 == "?" || $0 == "#" }) { name = name[..<q] }
    if let slash = name.lastIndex(of: "/") { name = name[name.index(after: slash)...] }
    guard let at = name.lastIndex(of: "@") else { return 1 }
    var digits = name[name.index(after: at)...]
    guard let x = digits.firstIndex(of: "x") else { return 1 }
    let rest = digits[digits.index(after: x)...]
    guard rest.isEmpty || rest.first == "." else { return 1 }
    digits = digits[..<x]
    guard let v = Double(digits), v >= 1 else { return 1 }
    return v
}
