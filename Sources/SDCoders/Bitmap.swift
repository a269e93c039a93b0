import CSDCore

/// A decoded image: premultiplied ARGB32 in native byte order (B,G,R,A bytes
/// on little-endian — cairo's `CAIRO_FORMAT_ARGB32`).
///
/// Owns exactly one C `sd_bitmap` (no copy is made when a decoder hands one
/// over) and frees it in `deinit`. Immutable once created, so it may be shared
/// across threads.
// @unchecked: owns one C sd_bitmap (an OpaquePointer) that nothing writes after init.
public final class Bitmap: @unchecked Sendable {
    let handle: OpaquePointer

    /// Takes ownership of `handle`.
    init(taking handle: OpaquePointer) {
        self.handle = handle
    }

    /// Adopt an `sd_bitmap` handed out by the C core (e.g. by the transfer
    /// loop): the Bitmap owns it from now on and frees it in `deinit`.
    public convenience init(adopting handle: OpaquePointer) {
        self.init(taking: handle)
    }

    deinit {
        sd_bitmap_free(handle)
    }

    /// Width in pixels.
    public var width: Int { Int(sd_bitmap_width(handle)) }
    /// Height in pixels.
    public var height: Int { Int(sd_bitmap_height(handle)) }
    /// Bytes from one row to the next (at least 4 × width).
    public var bytesPerRow: Int { Int(sd_bitmap_stride(handle)) }
    /// Bytes of pixel memory: what the image costs in a memory cache.
    public var cost: Int { Int(sd_bitmap_size(handle)) }

    /// Borrow the pixels without copying; the buffer is valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: sd_bitmap_pixels(handle), count: cost))
    }

    /// True if any pixel is not fully opaque.
    public var hasAlpha: Bool { sd_bitmap_has_alpha(handle) != 0 }

    /// A new transparent bitmap.
    public convenience init(width: Int, height: Int) throws(CoderError) {
        guard width > 0, height > 0, width <= Int(UInt32.max), height <= Int(UInt32.max) else {
            throw CoderError(.invalidArgument)
        }
        var out: OpaquePointer?
        try CoderError.check(sd_bitmap_new(UInt32(width), UInt32(height), &out))
        self.init(taking: out!)
    }

    /// A new bitmap whose pixels are written by `body` (bytesPerRow = width*4).
    public convenience init(
        width: Int, height: Int, initializingWith body: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(CoderError) {
        try self.init(width: width, height: height)
        body(UnsafeMutableRawBufferPointer(start: sd_bitmap_pixels(handle), count: cost))
    }

    /// Resampled to `width` x `height` (up or down, each axis on its own)
    /// with `resampling`'s filter (default Lanczos-3), on the premultiplied
    /// pixels so transparent edges stay clean; within 1 of an exact
    /// double-precision resampler (`sd_bitmap_resample`).
    public func scaled(width: Int, height: Int, resampling: Resampling = .default) throws(CoderError) -> Bitmap {
        guard width > 0, height > 0, width <= Int(UInt32.max), height <= Int(UInt32.max) else {
            throw CoderError(.invalidArgument)
        }
        var out: OpaquePointer?
        try CoderError.check(sd_bitmap_resample(handle, UInt32(width), UInt32(height), resampling.filter.core,
                                                resampling.coreFlags, &out))
        return Bitmap(taking: out!)
    }

    /// The bitmap with an EXIF orientation (1...8) applied.
    public func oriented(_ orientation: Int) throws(CoderError) -> Bitmap {
        var out: OpaquePointer?
        try CoderError.check(sd_bitmap_orient(handle, Int32(orientation), &out))
        return Bitmap(taking: out!)
    }

    /// Encoded as `format` (any whose `capabilities` contain `.encode`):
    /// `sd_encoder` with `options`. See `Bitmap.encode(_:delaysMilliseconds:as:options:)`.
    public func encoded(as format: ImageFormat, options: EncodeOptions = EncodeOptions()) throws(CoderError) -> [UInt8] {
        try Self.encode([self], as: format, options: options)
    }

    /// `frames` (all one size) encoded as `format`: several frames need a
    /// format with `.encodeAnimation`; frame i shows for
    /// `delaysMilliseconds[i]` (nil: 0 each). Throws `.unsupportedFormat`
    /// when this build does not write the format, `.invalidArgument` for
    /// out-of-range options, sizes that differ or a second frame of a still format.
    public static func encode(_ frames: [Bitmap], delaysMilliseconds: [Int]? = nil, as format: ImageFormat,
                              options: EncodeOptions = EncodeOptions()) throws(CoderError) -> [UInt8] {
        guard !frames.isEmpty, delaysMilliseconds.map({ $0.count == frames.count }) ?? true else {
            throw CoderError(.invalidArgument, message: "no frames, or not one delay per frame")
        }
        guard format.isCore, format != .unknown else {
            throw CoderError(.unsupportedFormat, message: "no encoder for \(format.name) in the C core")
        }
        var enc: OpaquePointer?
        do throws(CoderError) {
            try CoderError.check(sd_encoder_new(sd_format(rawValue: UInt32(format.rawValue)), &enc))
        } catch {
            throw CoderError(error.code, message: "no encoder for \(format.name) in this build")
        }
        defer { sd_encoder_free(enc) }
        for (param, value) in options.parameters {
            do throws(CoderError) {
                try CoderError.check(sd_encoder_set(enc, param, Int32(clamping: value)))
            } catch {
                throw CoderError(error.code, message: "encoder option out of range: \(param) = \(value)")
            }
        }
        if let icc = options.iccProfile {
            do throws(CoderError) {
                try icc.withUnsafeBufferPointer { b throws(CoderError) in
                    try CoderError.check(sd_encoder_set_icc_profile(enc, b.baseAddress, b.count))
                }
            } catch {
                throw CoderError(error.code, message: "not an ICC profile the encoder can embed (\(icc.count) bytes)")
            }
        }
        for (i, f) in frames.enumerated() {
            try CoderError.check(sd_encoder_add_frame(enc, f.handle, Int32(clamping: delaysMilliseconds?[i] ?? 0)))
        }
        var buf: UnsafeMutablePointer<UInt8>?
        var len = 0
        try CoderError.check(sd_encoder_finish(enc, &buf, &len))
        return adopt(buf, len)
    }

    /// PNG data (RGBA when there is alpha, RGB otherwise).
    public func pngData(compressionLevel: Int = -1) throws(CoderError) -> [UInt8] {
        try encoded(as: .png, options: EncodeOptions(compressionLevel: compressionLevel))
    }

    /// JPEG data at `quality` 1...100 (alpha dropped).
    public func jpegData(quality: Int = 90, progressive: Bool = false) throws(CoderError) -> [UInt8] {
        guard quality >= 1 else { throw CoderError(.invalidArgument, message: "JPEG quality is 1...100") }
        return try encoded(as: .jpeg, options: EncodeOptions(quality: quality, progressive: progressive))
    }

    /// A still WebP: lossy at `quality` 0...100, or lossless.
    public func webpData(quality: Int = 90, lossless: Bool = false) throws(CoderError) -> [UInt8] {
        try encoded(as: .webP, options: EncodeOptions(quality: quality, lossless: lossless))
    }

    /// A still AVIF: `quality` 0...100 (100: lossless); `speed` 0...10, -1 for libavif's default.
    public func avifData(quality: Int = 80, speed: Int = -1) throws(CoderError) -> [UInt8] {
        try encoded(as: .avif, options: EncodeOptions(quality: quality, speed: speed))
    }

    /// A GIF of frames of one size (animated when more than one): delays in
    /// ms, `loopCount` 0 = forever. Each frame gets its own 255-colour palette.
    public static func gifData(frames: [Bitmap], delaysMilliseconds: [Int], loopCount: Int) throws(CoderError) -> [UInt8] {
        try encode(frames, delaysMilliseconds: delaysMilliseconds, as: .gif, options: EncodeOptions(loopCount: loopCount))
    }

    /// An APNG of frames of one size (each after the first is the rectangle
    /// that changed, replacing it); delays in ms, `loopCount` 0 = forever.
    /// One frame is a plain PNG.
    public static func apngData(frames: [Bitmap], delaysMilliseconds: [Int], loopCount: Int) throws(CoderError) -> [UInt8] {
        try encode(frames, delaysMilliseconds: delaysMilliseconds, as: .png,
                   options: EncodeOptions(loopCount: max(0, loopCount)))
    }

    /// An animated WebP of frames of one size: lossy at `quality` 0...100 or
    /// lossless; delays in ms, `loopCount` 0 = forever.
    public static func webpAnimationData(frames: [Bitmap], delaysMilliseconds: [Int], loopCount: Int,
                                         quality: Int = 90, lossless: Bool = false) throws(CoderError) -> [UInt8] {
        try encode(frames, delaysMilliseconds: delaysMilliseconds, as: .webP,
                   options: EncodeOptions(quality: quality, lossless: lossless, loopCount: loopCount))
    }

    /// An AVIF image sequence of same-sized frames (`quality` and `speed` as
    /// for `avifData`); it plays forever (libavif 0.11 writes no loop count).
    public static func avifAnimationData(frames: [Bitmap], delaysMilliseconds: [Int],
                                         quality: Int = 80, speed: Int = -1) throws(CoderError) -> [UInt8] {
        try encode(frames, delaysMilliseconds: delaysMilliseconds, as: .avif,
                   options: EncodeOptions(quality: quality, speed: speed))
    }

    /// C memory enters Swift in exactly one place: copied, then freed.
    private static func adopt(_ buf: UnsafeMutablePointer<UInt8>?, _ len: Int) -> [UInt8] {
        defer { sd_free(buf) }
        guard let buf else { return [] }
        return Array(UnsafeBufferPointer(start: buf, count: len))
    }
}
