import Foundation
import SDCoders
import SDSync

/// The built-in coders: each is the C core's decoder (and encoder) for its
/// formats, in SDWebImage's three roles — the shared instance decodes whole
/// data, an incremental instance (`init(incrementalWithOptions:)`) follows a
/// download, an animated instance (`init?(animatedImageData:options:)`) is
/// the frame source of one `SDAnimatedImage`, compositing frames on demand.
/// An incremental instance of an animated format is a frame source too, over
/// the bytes so far: its images are animations whose frame count grows as
/// frames complete (SDWebImage's progressive animated decode).
///
/// An animation's frame source keeps only the working canvas (not the C
/// core's 64 MiB frame cache) unless `.decodeCoreOptions` names a frame
/// cache (`decoderOptions`).
///
/// The built-ins are derived from the C core's codec rows
/// (`ImageFormat.capabilities`): `SDImageCoreCoder(format:)` is the coder of
/// one format, and the coders manager lists one per format this build
/// decodes or encodes — SDWebImage's names (`SDImageGIFCoder`, …) for the
/// formats that have one, so a format added to the core needs no Swift.
/// `SDImageCoreCoder()` itself answers for every format the core decodes.
// @unchecked: `lock` guards the decoders and the incremental state; the rest is immutable.
public class SDImageCoreCoder: SDProgressiveImageCoder, SDAnimatedImageCoder, @unchecked Sendable {
    /// What an instance decodes and encodes, and whether it animates.
    struct Claim: Sendable {
        var decodes: Set<ImageFormat>
        var encodes: Set<ImageFormat>
        /// An animation decodes to all its frames (false: the first frame only).
        var animates: Bool

        /// The core's own answer for `format`.
        init(format: ImageFormat) {
            let caps = format.capabilities
            decodes = caps.contains(.decode) ? [format] : []
            encodes = caps.contains(.encode) ? [format] : []
            animates = caps.contains(.animation)
        }

        init(decodes: Set<ImageFormat>, encodes: Set<ImageFormat>, animates: Bool) {
            self.decodes = decodes
            self.encodes = encodes
            self.animates = animates
        }
    }

    /// The claim of this class's instances: every format the core decodes
    /// and encodes, animated; SDWebImage's named subclasses narrow it.
    class var claim: Claim { everyFormat }
    /// Read once from the C core: every incremental instance starts from it.
    private static let everyFormat = Claim(decodes: Set(ImageFormat.allCases.filter { $0.capabilities.contains(.decode) }),
                                           encodes: Set(ImageFormat.allCases.filter { $0.capabilities.contains(.encode) }),
                                           animates: true)

    /// This instance's claim (a class's, or one format's: `init(format:)`).
    let claim: Claim
    /// Formats this coder decodes.
    public var decodableFormats: Set<ImageFormat> { claim.decodes }
    /// Formats this coder encodes.
    public var encodableFormats: Set<ImageFormat> { claim.encodes }
    /// The formats it decodes: it claims no other data.
    public var claimedFormats: Set<SDImageFormat>? { claim.decodes }

    private let lock = NSLock()
    private let options: SDImageCoderOptions
    // incremental role
    private var incremental: ImageDecoder?
    private var incrementalData: Data?
    private var pushed = 0
    private var incrementalEnded = false
    // animated role: the bytes, and a decoder fed all of them (made on demand)
    private let data: Data?
    private var frames: ImageDecoder?
    private var frameFacts: (count: Int, loops: Int)?
    /// Frame 0 when it was decoded before this frame source existed.
    private var firstFrame: SDImage?

    /// The shared, stateless instance.
    public required init() {
        claim = Self.claim
        options = [:]
        data = nil
        isolation = nil
    }

    /// Where whole-data decodes run: sandboxed worker processes (nil: here).
    /// An isolating coder decodes once the bytes are in (nothing streams
    /// into a decoder in this process), to the first frame.
    public let isolation: DecoderIsolation?

    private static let lastIsolating = Locked<SDImageCoreCoder?>(nil)

    /// The one isolating coder of `isolation` (made once, so loads that
    /// decode alike share a decode: the coder is part of that likeness).
    /// What the downloader and the image cache use for their
    /// `decoderIsolation`; pass it as `.imageCoder` to decode alike.
    public static func isolating(_ isolation: DecoderIsolation) -> SDImageCoreCoder {
        lastIsolating.withLock { last in
            if let last, last.isolation === isolation { return last }
            let c = SDImageCoreCoder(isolation: isolation)
            last = c
            return c
        }
    }

    /// A coder for every core format whose decodes run in `isolation`'s
    /// sandboxed workers (`SDWebImageDownloaderConfig.server()`'s, `sdimage
    /// serve --isolate-decoders`).
    public init(isolation: DecoderIsolation) {
        claim = Self.claim
        options = [:]
        data = nil
        self.isolation = isolation
    }

    /// The coder of one format, as the C core's codec row describes it: it
    /// decodes, encodes and animates what `format.capabilities` says.
    public init(format: ImageFormat) {
        claim = Claim(format: format)
        options = [:]
        data = nil
        isolation = nil
    }

    /// A progressive decoder: feed it with `updateIncrementalData(_:finished:)`.
    public required init(incrementalWithOptions options: SDImageCoderOptions?) {
        claim = Self.claim
        self.options = options ?? [:]
        data = nil
        isolation = nil
    }

    /// A frame source over `data`; nil when the bytes are not one of this coder's
    /// formats or do not decode.
    public required init?(animatedImageData data: Data?, options: SDImageCoderOptions?) {
        claim = Self.claim
        isolation = nil
        guard let data, claim.decodes.contains(ImageFormat(data: data)) else { return nil }
        self.options = options ?? [:]
        self.data = data
        lock.lock()
        defer { lock.unlock() }
        guard (try? framesDecoder()) != nil else { return nil }
    }

    /// A frame source whose first frame was already decoded elsewhere (the
    /// download's streamed decode): nothing is decoded until frame 1 is asked for.
    required init(animatedImageData data: Data, options: SDImageCoderOptions, frameCount: Int, loopCount: Int, claim: Claim) {
        self.claim = claim
        self.options = options
        self.data = data
        isolation = nil
        frameFacts = (frameCount, loopCount)
    }

    // MARK: - SDImageCoder

    public func canDecode(from data: Data?) -> Bool {
        claim.decodes.contains(ImageFormat(data: data))
    }

    public func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage? {
        guard let data else { return nil }
        return try? decode(data, options: options ?? [:]).image
    }

    /// Whether this coder writes `format` (`.undefined` means PNG).
    public func canEncode(to format: SDImageFormat) -> Bool {
        claim.encodes.contains(format == .undefined ? .png : format)
    }

    public func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data? {
        guard let image, canEncode(to: format) || format == .undefined else { return nil }
        return try? SDImageEncoding.encode(image, format: format, options: options ?? [:])
    }

    /// The decode every built-in path uses: the C core's words on failure, and
    /// whether the data was whole (a cache read treats a short file as a miss).
    func decode(_ data: Data, options: SDImageCoderOptions) throws(CoderError) -> (image: SDImage, complete: Bool) {
        let format = ImageFormat(data: data)
        guard claim.decodes.contains(format) else {
            throw CoderError(.unsupportedFormat, message: "\(type(of: self)) does not decode \(format) data")
        }
        let o = decoderOptions(options)
        if let isolation {  // a still, made in a worker
            let r: Result<DecodedImage, CoderError> = data.withUnsafeBytes { raw in
                Result { () throws(CoderError) in
                    try isolation.decode(raw, options: o, cancellation: options[.decodeCancellation] as? DecodeCancellation)
                }
            }
            let d = try r.get()
            return (SDImage(decoded: d, scale: options.scaleFactor), d.isComplete)
        }
        let animates = !o.firstFrameOnly
        let decoder = try ImageDecoder(options: o)
        let result: Result<DecodedImage, CoderError> = data.withUnsafeBytes { raw in
            Result { () throws(CoderError) in
                try decoder.push(raw)
                return try decoder.finish()
            }
        }
        let d = try result.get()
        guard d.bitmap.width > 0, d.bitmap.height > 0 else { throw CoderError(.corruptData, message: "the image has no pixels") }
        return (image(from: d, data: data, options: options, decoder: animates ? decoder : nil), d.isComplete)
    }

    /// The image for a decode already made (streamed during the download, or
    /// `decode`): an animation becomes an `SDAnimatedImage` whose frames come
    /// from a new frame source of this coder's class.
    func image(from d: DecodedImage, data: Data, options: SDImageCoderOptions, decoder: ImageDecoder? = nil) -> SDImage {
        let scale = options.scaleFactor
        let still = SDImage(decoded: d, scale: scale)
        guard claim.animates, d.isAnimated, d.frameCount > 1, !options.decodeOptions.firstFrameOnly else {
            return still
        }
        let source = Self(animatedImageData: data, options: options, frameCount: d.frameCount, loopCount: d.loopCount,
                          claim: claim)
        source.frames = decoder
        source.firstFrame = still
        return SDAnimatedImage(animatedCoder: source, scale: scale) ?? still
    }

    /// The C options of a whole-data decode or a frame source: a still coder
    /// decodes the first frame; an animation keeps only its working canvas
    /// unless the options name a frame cache (the image is what a memory cache
    /// holds; a player buffers ahead itself).
    func decoderOptions(_ options: SDImageCoderOptions) -> DecodeOptions {
        var o = options.decodeOptions
        if !claim.animates { o.firstFrameOnly = true }
        if o.frameCacheBytes == nil { o.frameCacheBytes = 0 }
        return o
    }

    /// The frame cache of this frame source's decoder, in bytes.
    var frameCacheBytes: Int { decoderOptions(options).frameCacheBytes ?? 0 }

    /// The decoder that has all the bytes (caller holds `lock`).
    private func framesDecoder() throws(CoderError) -> ImageDecoder {
        if let frames { return frames }
        guard let data else { throw CoderError(.badState, message: "not a frame source") }
        let d = try ImageDecoder(options: decoderOptions(options))
        let r: Result<Void, CoderError> = data.withUnsafeBytes { raw in
            Result { () throws(CoderError) in
                try d.push(raw)
                try d.endInput()
            }
        }
        try r.get()
        if frameFacts == nil { frameFacts = (max(1, d.frameCount), d.loopCount ?? 1) }
        frames = d
        return d
    }

    // MARK: - SDAnimatedImageProvider

    public var animatedImageData: Data? {
        lock.lock()
        defer { lock.unlock() }
        return data ?? incrementalData
    }

    /// The decoder frames come from: the incremental one while this is an
    /// incremental instance (caller holds `lock`).
    private func source() -> ImageDecoder? {
        if data == nil { return incremental }
        return try? framesDecoder()
    }

    /// Frames in the animation (1 for a still image; 0 without data).
    public var animatedImageFrameCount: UInt {
        lock.lock()
        defer { lock.unlock() }
        if let f = frameFacts { return UInt(f.count) }
        return UInt(source()?.frameCount ?? 0)
    }

    public var animatedImageLoopCount: UInt {
        lock.lock()
        defer { lock.unlock() }
        if let f = frameFacts { return UInt(max(0, f.loops)) }
        if data == nil { return UInt(max(0, incremental?.loopCount ?? 1)) }
        _ = try? framesDecoder()
        return UInt(max(0, frameFacts?.loops ?? 1))
    }

    public func animatedImageFrame(at index: UInt) -> SDImage? {
        lock.lock()
        defer { lock.unlock() }
        if index == 0, let firstFrame { return firstFrame }
        guard let d = source(), let bitmap = try? d.frame(at: Int(index)) else { return nil }
        let frame = SDImage(bitmap: bitmap, format: d.format ?? .unknown, orientation: d.orientation ?? 1,
                            scale: options.scaleFactor, sourcePixelWidth: d.sourceSize?.width ?? 0,
                            sourcePixelHeight: d.sourceSize?.height ?? 0)
        // an incremental source makes an image per update, each asking for frame 0
        if index == 0 && data == nil { firstFrame = frame }
        return frame
    }

    public func animatedImageDuration(at index: UInt) -> TimeInterval {
        lock.lock()
        defer { lock.unlock() }
        return source()?.frameDuration(at: Int(index)) ?? 0
    }

    /// Drop the decoder (it is made again from the bytes when a frame is asked for).
    func releaseDecoder() {
        lock.lock()
        frames = nil
        lock.unlock()
    }

    // MARK: - SDProgressiveImageCoder

    /// Whether the bytes are a format this coder decodes as they arrive.
    public func canIncrementalDecode(from data: Data?) -> Bool {
        canDecode(from: data) && ImageFormat(data: data).capabilities.contains(.incremental)
    }

    public func updateIncrementalData(_ data: Data?, finished: Bool) {
        lock.lock()
        defer { lock.unlock() }
        guard let data, !incrementalEnded else { return }
        incrementalData = data
        if incremental == nil {
            var o = decoderOptions(options)
            o.progressivePreviews = true
            o.previewIntervalMilliseconds = 0
            incremental = try? ImageDecoder(options: o)
        }
        guard let d = incremental else { return }
        if data.count > pushed {
            let ok: Bool = data.withUnsafeBytes { raw in
                (try? d.push(UnsafeRawBufferPointer(rebasing: raw[pushed...]))) != nil
            }
            pushed = data.count
            if !ok { incremental = nil; incrementalEnded = true; return }
        }
        if finished {
            incrementalEnded = true
            if (try? d.endInput()) == nil { incremental = nil }
        }
    }

    /// The image so far: a preview of the first frame; once an animation's
    /// first frame is complete, an `SDAnimatedImage` over this coder (marked
    /// incremental until the data is finished) with the frames complete so far.
    public func incrementalDecodedImage(options: SDImageCoderOptions?) -> SDImage? {
        let scale = (options ?? self.options).scaleFactor
        lock.lock()
        let animates = !decoderOptions(self.options).firstFrameOnly
        let animation = incremental.map { animates && $0.isAnimated == true && $0.frameCount > 0 } ?? false
        let ended = incrementalEnded
        lock.unlock()
        if animation, let image = SDAnimatedImage(animatedCoder: self, scale: scale, isIncremental: !ended) {
            return image
        }
        lock.lock()
        defer { lock.unlock() }
        guard let d = incremental else { return nil }
        if incrementalEnded, let bitmap = try? d.frame(at: 0) {
            return SDImage(bitmap: bitmap, format: d.format ?? .unknown, orientation: d.orientation ?? 1, scale: scale,
                           sourcePixelWidth: d.sourceSize?.width ?? 0, sourcePixelHeight: d.sourceSize?.height ?? 0)
        }
        guard let bitmap = try? d.snapshot() else { return nil }
        return SDImage(bitmap: bitmap, format: d.format ?? .unknown, scale: scale, isIncremental: true)
    }
}
