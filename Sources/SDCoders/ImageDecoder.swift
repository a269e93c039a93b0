import CSDCore

/// An image format: the ones the C core recognises (`sd_format`, mirrored
/// once: some it decodes, the others it names when it refuses them), and
/// any a user's coder brings — like SDWebImage's extensible `SDImageFormat`,
/// a format is a number: `ImageFormat(rawValue: 1000)` and up are yours
/// (`ImageFormat.firstCustomRawValue`); the core's stay below 1000.
public struct ImageFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible, CaseIterable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Not recognised (or not sniffed yet).
    public static let unknown = ImageFormat(rawValue: 0)
    /// JPEG (baseline and progressive; decoded).
    public static let jpeg = ImageFormat(rawValue: 1)
    /// PNG, APNG included (decoded).
    public static let png = ImageFormat(rawValue: 2)
    /// GIF, still or animated (decoded).
    public static let gif = ImageFormat(rawValue: 3)
    /// WebP, still or animated (decoded).
    public static let webP = ImageFormat(rawValue: 4)
    /// AVIF, still or a sequence (`capabilities` says what this build does with it).
    public static let avif = ImageFormat(rawValue: 5)
    /// HEIC/HEIF (`capabilities` says what this build does with it).
    public static let heic = ImageFormat(rawValue: 6)
    /// JPEG XL (`capabilities` says what this build does with it).
    public static let jpegXL = ImageFormat(rawValue: 7)
    /// BMP (`capabilities` says what this build does with it).
    public static let bmp = ImageFormat(rawValue: 8)
    /// TIFF (`capabilities` says what this build does with it).
    public static let tiff = ImageFormat(rawValue: 9)
    /// SVG (`capabilities` says what this build does with it).
    public static let svg = ImageFormat(rawValue: 10)
    /// ICO (`capabilities` says what this build does with it).
    public static let ico = ImageFormat(rawValue: 11)
    /// The core's formats, read from its registry (custom ones are not listed).
    public static let allCases: [ImageFormat] = (0..<coreCount).map { ImageFormat(rawValue: $0) }
    /// Where formats of your own start.
    public static let firstCustomRawValue = 1000
    /// One of the core's formats (else a custom one, or an unassigned number).
    public var isCore: Bool { (0..<Self.coreCount).contains(rawValue) }
    /// How many formats the C core knows: `sd_format_name` names each, and
    /// "unknown" past the last (so a format added to the core needs no Swift).
    private static let coreCount: Int = {
        var n = 1
        while n < firstCustomRawValue, String(cString: sd_format_name(sd_format(rawValue: UInt32(n)))) != "unknown" { n += 1 }
        return n
    }()

    /// The format the first bytes of a file say (`sd_sniff_format`); `.unknown` if none.
    public init(sniffing bytes: UnsafeRawBufferPointer) {
        self.init(rawValue: Int(sd_sniff_format(bytes.baseAddress, bytes.count).rawValue))
    }

    /// What this build can do with the format (`sd_capability`).
    public struct Capabilities: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Decodes whole files.
        public static let decode = Capabilities(rawValue: SD_CAP_DECODE.rawValue)
        /// Decodes as bytes arrive, without buffering the file first.
        public static let incremental = Capabilities(rawValue: SD_CAP_INCREMENTAL.rawValue)
        /// Renders previews of a partial file (progressive JPEG scans, Adam7 passes).
        public static let scanPreviews = Capabilities(rawValue: SD_CAP_SCAN_PREVIEWS.rawValue)
        /// Decodes straight to a smaller size (JPEG's DCT scaling) rather than scaling afterwards.
        public static let downscale = Capabilities(rawValue: SD_CAP_DOWNSCALE.rawValue)
        /// Decodes every frame of an animation.
        public static let animation = Capabilities(rawValue: SD_CAP_ANIMATION.rawValue)
        /// Encodes (`Bitmap`'s encoders).
        public static let encode = Capabilities(rawValue: SD_CAP_ENCODE.rawValue)
        /// Encodes animations (several frames).
        public static let encodeAnimation = Capabilities(rawValue: SD_CAP_ENCODE_ANIMATION.rawValue)
        /// Encodes alpha (without it, pixels are composited over black).
        public static let encodeAlpha = Capabilities(rawValue: SD_CAP_ENCODE_ALPHA.rawValue)
        /// Lossy: `EncodeOptions.quality` trades size for fidelity.
        public static let encodeQuality = Capabilities(rawValue: SD_CAP_ENCODE_QUALITY.rawValue)
    }

    private var c: sd_format { sd_format(rawValue: UInt32(rawValue)) }
    /// What the C core can do with it (none for a custom format: its coder says).
    public var capabilities: Capabilities { isCore ? Capabilities(rawValue: sd_format_capabilities(c)) : [] }
    /// "JPEG", "PNG", "GIF", … as the core names it; "format N" for a custom one.
    public var name: String { isCore ? String(cString: sd_format_name(c)) : "format \(rawValue)" }
    /// "image/jpeg", …; nil for `.unknown` and custom formats.
    public var mimeType: String? { isCore ? sd_format_mime(c).map { String(cString: $0) } : nil }
    /// The format a file name extension names ("jpg", "webp", "jxl", "svg";
    /// any case), or nil: a core format's lowercase name or MIME subtype, and
    /// the usual short forms (jpg, tif, heif).
    public init?(fileExtension: String) {
        let ext = fileExtension.lowercased()
        let aliases: [String: ImageFormat] = ["jpg": .jpeg, "tif": .tiff, "apng": .png, "heif": .heic, "hif": .heic]
        if let f = aliases[ext] { self = f; return }
        let match = Self.allCases.first { f in
            guard f != .unknown else { return false }
            let subtype = f.mimeType?.split(separator: "/").last.map { String($0.split(separator: "+")[0]) }
            return f.description == ext || subtype == ext
        }
        guard let match else { return nil }
        self = match
    }

    /// Lowercase name ("jpeg", "webp"), as logs and keys print it.
    public var description: String { self == .unknown ? "unknown" : String(name.lowercased().filter { $0 != " " }) }
}

/// How to decode: thumbnail size, byte budget, orientation, limits.
public struct DecodeOptions: Sendable, Equatable {
    /// Thumbnail box in upright pixels (`nil` = full size). Never upscales.
    public var thumbnailPixelSize: (width: Int, height: Int)?
    /// Fit inside the box keeping the aspect ratio (SDWebImage's
    /// `imagePreserveAspectRatio`, default true); false fills it.
    public var preserveAspectRatio = true
    /// Byte budget for the decoded bitmap (SDWebImage's scale-down-large-images
    /// limit); 0 = none. See `DecodeOptions.defaultScaleDownLimitBytes`.
    public var scaleDownLimitBytes = 0
    /// Apply the EXIF orientation (default) or only report it.
    public var applyOrientation = true
    /// Render progressive JPEG previews at scan boundaries.
    public var progressivePreviews = false
    /// Minimum milliseconds between two previews.
    public var previewIntervalMilliseconds = Int(SD_DEFAULT_PREVIEW_INTERVAL_MS)
    /// Limits on the source image: beyond them decoding fails with `.imageTooLarge`.
    public var maxPixels = Int(SD_DEFAULT_MAX_PIXELS)
    /// Longest side the source may have (beyond: `.imageTooLarge`).
    public var maxDimension = Int(SD_DEFAULT_MAX_DIMENSION)
    /// Codec working memory one decode may use, in bytes (libjpeg's
    /// coefficient buffers of a progressive file; beyond: `.imageTooLarge`).
    /// Every decode in flight also draws on the process-wide
    /// `ImageDecoder.memoryBudget`.
    public var maxCodecMemory = Int(SD_DEFAULT_MAX_MEMORY)
    /// An animation decodes its first frame only (SDWebImage's `.decodeFirstFrameOnly`).
    public var firstFrameOnly = false
    /// Frames an animation may have (beyond: `.imageTooLarge`).
    public var maxFrames = Int(SD_DEFAULT_MAX_FRAMES)
    /// Bytes of composited frames an animation keeps to answer `frame(at:)`
    /// out of order without recompositing (0: only the working canvas, so
    /// playing forward still costs one frame decode per frame). nil: the
    /// C core's default (`SD_DEFAULT_FRAME_CACHE_BYTES`), or the layer
    /// above's (an animated image's frame source keeps none).
    public var frameCacheBytes: Int?
    /// The formats this decode takes (nil: every format the core decodes).
    /// Data of another format is declined (`.unsupportedFormat`; a download
    /// then hands its bytes to the coder that claims the format).
    public var formats: Set<ImageFormat>?
    /// How the decoded pixels are brought to the thumbnail box or the
    /// scale-down budget (default: Lanczos-3 after shrinking on load to 2x).
    public var resampling = Resampling.default
    /// Colours converted to sRGB (default) or left as stored.
    public var colorManagement = ColorManagement.convertToSRGB
    /// A render (crop, resize type, gravity, extend, padding, turns) the
    /// decoder executes, shrinking on load at its scale; it replaces
    /// `thumbnailPixelSize`, `preserveAspectRatio`, `applyOrientation` and
    /// `scaleDownLimitBytes`. nil: those.
    public var render: RenderPlan?
    /// A progressive JPEG read for a reduced size may stop before its end
    /// once the scans still to come can move no output sample by more than
    /// this many levels (`SD_DEC_SETTLE_LEVELS`): the image is then complete
    /// at its size (`ImageDecoder.isSettled`). 0, the default: only when
    /// nothing can change it (the output is the whole file's).
    public var settleLevels = 0

    /// The scale-down budget SDWebImage's `scaleDownLargeImages` uses, in bytes of decoded bitmap.
    public static let defaultScaleDownLimitBytes = Int(SD_DEFAULT_SCALE_DOWN_BYTES)

    /// Every default: full size, orientation applied, the core's limits.
    public init() {}

    /// These options within the caps of `limits`: each source limit is the
    /// smaller of the two (a downloader applies its config's caps so).
    public func capped(by limits: DecodeLimits) -> DecodeOptions {
        var o = self
        o.maxPixels = min(maxPixels, limits.maxPixels)
        o.maxDimension = min(maxDimension, limits.maxDimension)
        o.maxCodecMemory = min(maxCodecMemory, limits.maxCodecMemory)
        return o
    }

    /// Longest side at most `size`, aspect kept.
    public static func thumbnail(maxPixelSize size: Int) -> DecodeOptions {
        var o = DecodeOptions()
        o.thumbnailPixelSize = (size, size)
        return o
    }

    /// Equal when every option is.
    public static func == (a: DecodeOptions, b: DecodeOptions) -> Bool {
        a.thumbnailPixelSize?.width == b.thumbnailPixelSize?.width
            && a.thumbnailPixelSize?.height == b.thumbnailPixelSize?.height
            && a.preserveAspectRatio == b.preserveAspectRatio
            && a.scaleDownLimitBytes == b.scaleDownLimitBytes
            && a.applyOrientation == b.applyOrientation
            && a.progressivePreviews == b.progressivePreviews
            && a.previewIntervalMilliseconds == b.previewIntervalMilliseconds
            && a.maxPixels == b.maxPixels && a.maxDimension == b.maxDimension
            && a.maxCodecMemory == b.maxCodecMemory
            && a.firstFrameOnly == b.firstFrameOnly && a.maxFrames == b.maxFrames
            && a.frameCacheBytes == b.frameCacheBytes && a.formats == b.formats
            && a.resampling == b.resampling && a.colorManagement == b.colorManagement
            && a.render == b.render
    }

    /// Every option as the C core's `sd_decoder_param` values: the one
    /// mapping, used for an `sd_decoder` here and for the decode sink's
    /// request parameters in SDDownloader.
    public var coreParameters: [(sd_decoder_param, Int64)] {
        var p: [(sd_decoder_param, Int64)] = []
        if let size = thumbnailPixelSize {
            p.append((SD_DEC_TARGET_WIDTH, Int64(max(0, size.width))))
            p.append((SD_DEC_TARGET_HEIGHT, Int64(max(0, size.height))))
        }
        p.append((SD_DEC_PRESERVE_ASPECT, preserveAspectRatio ? 1 : 0))
        p.append((SD_DEC_MAX_BYTES, Int64(max(0, scaleDownLimitBytes))))
        p.append((SD_DEC_APPLY_ORIENTATION, applyOrientation ? 1 : 0))
        p.append((SD_DEC_PREVIEWS, progressivePreviews ? 1 : 0))
        p.append((SD_DEC_PREVIEW_INTERVAL_MS, Int64(max(0, previewIntervalMilliseconds))))
        p.append((SD_DEC_MAX_PIXELS, Int64(max(0, maxPixels))))
        p.append((SD_DEC_MAX_DIMENSION, Int64(max(0, maxDimension))))
        p.append((SD_DEC_MAX_MEMORY, Int64(max(0, maxCodecMemory))))
        p.append((SD_DEC_FIRST_FRAME_ONLY, firstFrameOnly ? 1 : 0))
        p.append((SD_DEC_MAX_FRAMES, Int64(max(0, maxFrames))))
        if let bytes = frameCacheBytes { p.append((SD_DEC_FRAME_CACHE_BYTES, Int64(max(0, bytes)))) }
        p.append((SD_DEC_RESAMPLE_FILTER, Int64(resampling.filter.rawValue)))
        p.append((SD_DEC_RESAMPLE_LINEAR, resampling.linearLight ? 1 : 0))
        p.append((SD_DEC_SHRINK_ON_LOAD_MARGIN, Int64(resampling.shrinkOnLoadMargin)))
        p.append((SD_DEC_COLOR_MANAGE, colorManagement == .convertToSRGB ? 1 : 0))
        if settleLevels > 0 { p.append((SD_DEC_SETTLE_LEVELS, Int64(min(255, settleLevels)))) }
        if let formats {
            // bit per core format; an empty set still declines everything (bit 63, no format)
            let mask = formats.reduce(Int64(1) << 62) { m, f in f.isCore && f.rawValue < 62 ? m | Int64(1) << f.rawValue : m }
            p.append((SD_DEC_FORMATS, mask))
        }
        return p
    }
}

/// A finished decode: the bitmap plus what the file said about itself.
public struct DecodedImage: Sendable {
    /// The pixels: premultiplied ARGB32 in native byte order.
    public let bitmap: Bitmap
    /// The source's format.
    public let format: ImageFormat
    /// The EXIF orientation of the source (applied unless told otherwise).
    public let orientation: Int
    /// Source size as stored in the file.
    public let sourceWidth: Int
    /// Source height as stored in the file.
    public let sourceHeight: Int
    /// Progressive JPEG or Adam7 PNG.
    public let isProgressive: Bool
    /// False when the input ended early: missing parts are grey (JPEG) or transparent (PNG).
    public let isComplete: Bool
    /// Non-fatal data warnings (e.g. libjpeg's corrupt-data warnings).
    public let warnings: Int
    /// Frames in the file (1 for a still image; `bitmap` is frame 0).
    public let frameCount: Int
    /// Times an animation plays (0 = forever; 1 for a still image).
    public let loopCount: Int
    /// The file is an animation (GIF, APNG, animated WebP), whatever its frame count.
    public let isAnimated: Bool
    /// Where the source's colours came from (the pixels are sRGB unless
    /// decoded with `.keepSource`, or `.cmyk`/`.hdr`, which are not converted).
    public let sourceColorSpace: SourceColorSpace
    /// The ICC profile the pixels are in, as the file stored it, when they
    /// were decoded with `.keepSource`; nil when converted to sRGB or the
    /// file had none.
    public let iccProfile: [UInt8]?

    /// A decode result from its parts (for coders of your own).
    public init(bitmap: Bitmap, format: ImageFormat, orientation: Int, sourceWidth: Int, sourceHeight: Int,
                isProgressive: Bool, isComplete: Bool, warnings: Int,
                frameCount: Int = 1, loopCount: Int = 1, isAnimated: Bool = false,
                sourceColorSpace: SourceColorSpace = .sRGB, iccProfile: [UInt8]? = nil) {
        self.sourceColorSpace = sourceColorSpace
        self.iccProfile = iccProfile
        self.bitmap = bitmap
        self.format = format
        self.orientation = orientation
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.isProgressive = isProgressive
        self.isComplete = isComplete
        self.warnings = warnings
        self.frameCount = frameCount
        self.loopCount = loopCount
        self.isAnimated = isAnimated
    }
}

/// Caps on the images a component decodes, whatever each request asks:
/// `SDWebImageDownloaderConfig.decodeLimits` (ours). The defaults are the
/// C core's; `.server` is `sd_request_use_server_preset`'s.
public struct DecodeLimits: Sendable, Equatable {
    /// Source pixels (width x height) at most.
    public var maxPixels = Int(SD_DEFAULT_MAX_PIXELS)
    /// Source width or height at most.
    public var maxDimension = Int(SD_DEFAULT_MAX_DIMENSION)
    /// Codec working memory per decode, in bytes.
    public var maxCodecMemory = Int(SD_DEFAULT_MAX_MEMORY)

    /// The C core's defaults: 2^28 pixels, 65535 a side, 1 GiB of codec memory.
    public init() {}

    /// Given caps.
    public init(maxPixels: Int, maxDimension: Int, maxCodecMemory: Int) {
        self.maxPixels = maxPixels
        self.maxDimension = maxDimension
        self.maxCodecMemory = maxCodecMemory
    }

    /// For untrusted URLs: 40 megapixels, 8192 pixels a side, 256 MiB of
    /// codec memory (the C core's `SD_SERVER_*` values, read from its header).
    public static let server = DecodeLimits(maxPixels: Int(SD_SERVER_MAX_PIXELS), maxDimension: Int(SD_SERVER_MAX_DIMENSION),
                                            maxCodecMemory: Int(SD_SERVER_MAX_MEMORY))
}

/// Incremental decoder: push bytes as they arrive, take snapshots, finish.
///
/// Wraps one C `sd_decoder`. Not thread-safe: use it from one thread (or
/// actor) at a time. Decoding never re-reads earlier bytes.
public final class ImageDecoder {
    let handle: OpaquePointer

    /// The process-wide memory budget every decode in flight draws on, in
    /// bytes (`sd_set_decode_memory_budget`): canvases and codec memory are
    /// charged before they are allocated, and a decode that does not fit
    /// fails at once with `.outOfMemory` while the others go on. Default:
    /// half of the machine's (or the cgroup's) memory, at least 256 MiB;
    /// setting 0 restores it.
    public static var memoryBudget: Int {
        get {
            var budget: Int64 = 0
            sd_decode_memory(&budget, nil)
            return Int(budget)
        }
        set { _ = sd_set_decode_memory_budget(Int64(max(0, newValue))) }
    }

    /// Bytes of `memoryBudget` held by decodes in flight now.
    public static var memoryInUse: Int {
        var used: Int64 = 0
        sd_decode_memory(nil, &used)
        return Int(used)
    }

    /// A decoder with `options`; throws if the core refuses one of them.
    public init(options: DecodeOptions = DecodeOptions()) throws(CoderError) {
        var out: OpaquePointer?
        try CoderError.check(sd_decoder_new(&out))
        handle = out!
        for (p, v) in options.coreParameters {
            try CoderError.check(sd_decoder_set(handle, p, v))
        }
        if var render = options.render?.core {
            try CoderError.check(sd_decoder_set_render(handle, &render))
        }
    }

    deinit {
        sd_decoder_free(handle)
    }

    var message: String { String(cString: sd_decoder_message(handle)) }

    private func info(_ p: sd_decoder_param) -> Int? {
        var v: Int64 = 0
        return sd_decoder_get(handle, p, &v) == 0 ? Int(v) : nil
    }

    /// Feed the next bytes (any chunk size, in order).
    public func push(_ bytes: UnsafeRawBufferPointer) throws(CoderError) {
        try CoderError.check(sd_decoder_push(handle, bytes.baseAddress, bytes.count), message)
    }

    /// Feed the next bytes (any chunk size, in order).
    public func push(_ bytes: [UInt8]) throws(CoderError) {
        let rc = bytes.withUnsafeBytes { sd_decoder_push(handle, $0.baseAddress, $0.count) }
        try CoderError.check(rc, message)
    }

    /// The format, once the first bytes were seen.
    public var format: ImageFormat? { info(SD_DEC_INFO_FORMAT).flatMap(ImageFormat.init(rawValue:)) }
    /// Source size, once the header was parsed.
    public var sourceSize: (width: Int, height: Int)? {
        guard let w = info(SD_DEC_INFO_WIDTH), let h = info(SD_DEC_INFO_HEIGHT) else { return nil }
        return (w, h)
    }
    /// Size of the bitmap that will come out (after thumbnailing and orientation).
    public var outputSize: (width: Int, height: Int)? {
        guard let w = info(SD_DEC_INFO_OUTPUT_WIDTH), let h = info(SD_DEC_INFO_OUTPUT_HEIGHT) else { return nil }
        return (w, h)
    }
    /// The EXIF orientation (1–8), once it is known.
    public var orientation: Int? { info(SD_DEC_INFO_ORIENTATION) }
    /// Progressive JPEG or Adam7 PNG, once the header was parsed.
    public var isProgressive: Bool? { info(SD_DEC_INFO_PROGRESSIVE).map { $0 != 0 } }
    /// Completed progressive scans (JPEG) or Adam7 passes (PNG).
    public var completedScans: Int { info(SD_DEC_INFO_SCANS) ?? 0 }
    /// True once the decoder stopped before the end of its input because the
    /// rest cannot move the output at its size past `DecodeOptions.settleLevels`
    /// (`SD_DEC_INFO_SETTLED`): `finish()` gives a complete image.
    public var isSettled: Bool { info(SD_DEC_INFO_SETTLED) == 1 }
    /// Previews rendered so far; grows by one per new preview.
    public var previewCount: Int { info(SD_DEC_INFO_PREVIEWS) ?? 0 }

    /// Frames that can be rendered now (an animation's grow as bytes arrive;
    /// a still image's one frame counts after `finish`).
    public var frameCount: Int { info(SD_DEC_INFO_FRAME_COUNT) ?? 0 }
    /// Times the animation plays (0 = forever; 1 for a still image), once the header is known.
    public var loopCount: Int? { info(SD_DEC_INFO_LOOP_COUNT) }
    /// The file is an animation, once the header says so.
    public var isAnimated: Bool? { info(SD_DEC_INFO_ANIMATED).map { $0 != 0 } }

    /// How long frame `index` is shown, in seconds (browsers' rule: 10 ms or
    /// less shows for 100 ms; 0 for a still image); nil if there is no such frame yet.
    public func frameDuration(at index: Int) -> Double? {
        var v: Int64 = 0
        guard index >= 0, index <= Int(UInt32.max),
              sd_decoder_frame_get(handle, UInt32(index), SD_FRAME_DURATION_MS, &v) == 0 else { return nil }
        return Double(v) / 1000
    }

    /// Frame `index`'s duration as the file stores it, in milliseconds (GIF:
    /// 10 x delay; APNG: 1000 x num / den; WebP: as stored), before the
    /// browsers' rule `frameDuration(at:)` applies; nil if no such frame yet.
    public func storedFrameDuration(at index: Int) -> Int? {
        var v: Int64 = 0
        guard index >= 0, index <= Int(UInt32.max),
              sd_decoder_frame_get(handle, UInt32(index), SD_FRAME_STORED_DURATION_MS, &v) == 0 else { return nil }
        return Int(v)
    }

    /// Frame `index` composited on the canvas, at the output size; nil while
    /// it is not complete or when there is no such frame.
    public func frame(at index: Int) throws(CoderError) -> Bitmap? {
        guard index >= 0, index <= Int(UInt32.max) else { return nil }
        var out: OpaquePointer?
        let rc = sd_decoder_frame(handle, UInt32(index), &out)
        if rc == SD_EAGAIN.rawValue || rc == SD_EOI.rawValue { return nil }
        try CoderError.check(rc, message)
        return Bitmap(taking: out!)
    }

    /// The image as decoded so far, or nil when there is nothing to show yet.
    public func snapshot() throws(CoderError) -> Bitmap? {
        var out: OpaquePointer?
        let rc = sd_decoder_snapshot(handle, &out)
        if rc == SD_EAGAIN.rawValue { return nil }
        try CoderError.check(rc, message)
        return Bitmap(taking: out!)
    }

    private var inputEnded = false

    /// Declare the end of input without taking the result (a still image's
    /// frame, `frame(at: 0)`, is available from here until `finish`).
    public func endInput() throws(CoderError) {
        guard !inputEnded else { return }
        try CoderError.check(sd_decoder_finish(handle), message)
        inputEnded = true
    }

    /// End of input: finish and hand over the result (frame 0 of an animation).
    public func finish() throws(CoderError) -> DecodedImage {
        try endInput()
        var out: OpaquePointer?
        try CoderError.check(sd_decoder_take_bitmap(handle, &out), message)
        return DecodedImage(
            bitmap: Bitmap(taking: out!),
            format: format ?? .unknown,
            orientation: orientation ?? 1,
            sourceWidth: sourceSize?.width ?? 0,
            sourceHeight: sourceSize?.height ?? 0,
            isProgressive: isProgressive ?? false,
            isComplete: info(SD_DEC_INFO_COMPLETE) == 1,
            warnings: info(SD_DEC_INFO_WARNINGS) ?? 0,
            frameCount: max(1, frameCount),
            loopCount: loopCount ?? 1,
            isAnimated: isAnimated ?? false,
            sourceColorSpace: info(SD_DEC_INFO_COLOR_SPACE).flatMap(SourceColorSpace.init(rawValue:)) ?? .sRGB,
            iccProfile: keepsSourceColors ? iccProfile : nil)
    }

    /// Decoding with `.keepSource` (`SD_DEC_COLOR_MANAGE` 0).
    var keepsSourceColors: Bool {
        var v: Int64 = 1
        return sd_decoder_get(handle, SD_DEC_COLOR_MANAGE, &v) == 0 && v == 0
    }

    /// The ICC profile embedded in the file, as stored (nil: none, or the header is not in yet).
    public var iccProfile: [UInt8]? {
        var p: UnsafePointer<UInt8>?
        var n = 0
        guard sd_decoder_icc_profile(handle, &p, &n) == 0, let p, n > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }

    /// One-shot decode of a whole buffer.
    public static func decode(
        _ bytes: UnsafeRawBufferPointer, options: DecodeOptions = DecodeOptions()
    ) throws(CoderError) -> DecodedImage {
        let d = try ImageDecoder(options: options)
        try d.push(bytes)
        return try d.finish()
    }

    /// One-shot decode of a whole buffer.
    public static func decode(_ bytes: [UInt8], options: DecodeOptions = DecodeOptions()) throws(CoderError) -> DecodedImage {
        let d = try ImageDecoder(options: options)
        try d.push(bytes)
        return try d.finish()
    }
}
