import CSDCore

/// How to encode (`Bitmap.encode`): the C core's `sd_encoder` parameters,
/// typed. A format ignores what it does not use, so one value serves every
/// format; nil keeps the core's default.
public struct EncodeOptions: Sendable, Equatable {
    /// 0...100 (nil: 90). JPEG (0 reads as 1), WebP, AVIF (100 is lossless).
    public var quality: Int?
    /// WebP lossless; AVIF at quality 100.
    public var lossless: Bool
    /// A progressive JPEG.
    public var progressive: Bool
    /// JPEG Huffman tables made for the image (`SD_ENC_OPTIMIZE_CODING`):
    /// the same pixels in a smaller file, for a second pass. Default off.
    public var optimizeCoding = false
    /// PNG/APNG zlib level 0...9 (nil or -1: libpng's default, 6).
    public var compressionLevel: Int?
    /// AVIF speed 0...10, slowest to fastest (nil or -1: libavif's default).
    public var speed: Int?
    /// Times an animation plays, 0 = forever (GIF, APNG, WebP; an AVIF
    /// sequence always plays forever).
    public var loopCount: Int
    /// An ICC profile to embed (`sd_encoder_set_icc_profile`): JPEG APP2,
    /// PNG/APNG iCCP, WebP ICCP, AVIF colr; GIF writes none. For pixels
    /// kept in their source colours (`DecodedImage.iccProfile` after a
    /// `.keepSource` decode); nil for sRGB pixels, which encode untagged.
    public var iccProfile: [UInt8]?

    /// The core's defaults, or the values given.
    public init(quality: Int? = nil, lossless: Bool = false, progressive: Bool = false, compressionLevel: Int? = nil,
                speed: Int? = nil, loopCount: Int = 0) {
        self.quality = quality
        self.lossless = lossless
        self.progressive = progressive
        self.compressionLevel = compressionLevel
        self.speed = speed
        self.loopCount = loopCount
    }

    /// The values given, with a profile to embed (see `iccProfile`).
    public init(quality: Int? = nil, lossless: Bool = false, progressive: Bool = false, compressionLevel: Int? = nil,
                speed: Int? = nil, loopCount: Int = 0, iccProfile: [UInt8]?) {
        self.init(quality: quality, lossless: lossless, progressive: progressive, compressionLevel: compressionLevel,
                  speed: speed, loopCount: loopCount)
        self.iccProfile = iccProfile
    }

    /// Every option as `sd_encoder_param` values: the one mapping.
    var parameters: [(sd_encoder_param, Int)] {
        var p: [(sd_encoder_param, Int)] = [
            (SD_ENC_LOSSLESS, lossless ? 1 : 0), (SD_ENC_PROGRESSIVE, progressive ? 1 : 0), (SD_ENC_LOOP_COUNT, loopCount),
            (SD_ENC_OPTIMIZE_CODING, optimizeCoding ? 1 : 0),
        ]
        if let quality { p.append((SD_ENC_QUALITY, quality)) }
        if let compressionLevel { p.append((SD_ENC_COMPRESSION_LEVEL, compressionLevel)) }
        if let speed { p.append((SD_ENC_SPEED, speed)) }
        return p
    }
}
