#if Serve
import Foundation
import SDWebImage

/// How the image fills the requested box (imgproxy's resizing types).
public enum ResizingType: String, Sendable, CaseIterable {
    /// Fit inside the box, keeping the aspect ratio.
    case fit
    /// Cover the box and crop the overflow (by the gravity).
    case fill
    /// As `fill`, but never enlarged: a smaller source is cropped to the box's aspect ratio instead.
    case fillDown = "fill-down"
    /// Stretch to the box.
    case force
    /// `fill` when the source and the box are both landscape or both portrait, else `fit`.
    case auto
}

/// Where a crop keeps the image (imgproxy's gravity types; `sm`, smart
/// crop, is refused: no saliency detection here).
public enum Gravity: String, Sendable, CaseIterable {
    case ce, no, so, ea, we, noea, nowe, soea, sowe
}

/// The processing options of one request (imgproxy's names, a subset).
public struct ProcessingOptions: Sendable, Equatable {
    public var resizingType = ResizingType.fit
    /// The box in CSS pixels (0: unbounded on that side).
    public var width = 0, height = 0
    /// Device pixels per CSS pixel: the box in pixels is `width * dpr` by `height * dpr`.
    public var dpr = 1.0
    public var enlarge = false
    public var gravity = Gravity.ce
    /// Gravity offsets in pixels (from the gravity's edge).
    public var gravityX = 0.0, gravityY = 0.0
    /// 1...100; nil: the server's default.
    public var quality: Int?
    /// nil: from `Accept` (`format:auto`, or no extension).
    public var format: OutputFormat?
    /// Under transparent pixels when the output has no alpha (JPEG); nil: white.
    public var background: (r: UInt8, g: UInt8, b: UInt8)?
    public var autoRotate = true
    /// Clockwise quarter turns after the EXIF orientation (imgproxy's `rot`: 0, 90, 180, 270 degrees).
    public var rotate = 0
    /// Mirrored left to right, top to bottom (imgproxy's `fl`), after the rotation.
    public var flipHorizontal = false, flipVertical = false
    /// Gaussian blur of this sigma on the result (imgproxy's `bl`); 0: none.
    public var blurSigma = 0.0
    /// Unsharp mask of this sigma on the result, amount 1 (imgproxy's `sh`); 0: none.
    public var sharpenSigma = 0.0
    /// Blocks of this many pixels a side, each its mean (imgproxy's `pix`); 0: none.
    public var pixelate = 0
    /// The area of the source kept before resizing (imgproxy's `c`): each
    /// side 1 or more in source pixels, below 1 a fraction of the source's,
    /// 0 all of it; where, by its own gravity and offsets (source pixels),
    /// else by `gravity`'s.
    public var crop: (width: Double, height: Double, gravity: Gravity?, x: Double, y: Double)?
    /// The result's largest size in bytes: lossy formats lower their quality to fit (imgproxy's `mb`); nil: none.
    public var maxBytes: Int?
    /// Quality per format (imgproxy's `fq`), before the server's defaults.
    public var formatQuality: [OutputFormat: Int] = [:]
    /// The URL is refused (404) from this Unix time on (imgproxy's `exp`).
    public var expires: Int64?
    /// `Content-Disposition`'s file name, without extension (imgproxy's `fn`); nil: the source's.
    public var filename: String?
    /// `Content-Disposition: attachment` instead of inline (imgproxy's `att`).
    public var attachment = false

    public init() {}

    public static func == (a: Self, b: Self) -> Bool { a.cacheKey == b.cacheKey && a.format == b.format }

    /// The box in pixels.
    public var pixelWidth: Int { Int((Double(width) * dpr).rounded()) }
    public var pixelHeight: Int { Int((Double(height) * dpr).rounded()) }

    /// Every option that changes the pixels, canonical (the result cache's
    /// key, with the source URL and the output format).
    public var cacheKey: String {
        var k = "rt:\(resizingType.rawValue)/w:\(pixelWidth)/h:\(pixelHeight)/el:\(enlarge ? 1 : 0)"
        // offsets as they act: pixels scaled by dpr, fractions as they are
        func offset(_ v: Double) -> Double { abs(v) >= 1 ? v * dpr : v }
        k += "/g:\(gravity.rawValue):\(offset(gravityX)):\(offset(gravityY))/ar:\(autoRotate ? 1 : 0)"
        if rotate != 0 { k += "/rot:\(rotate)" }
        if flipHorizontal || flipVertical { k += "/fl:\(flipHorizontal ? 1 : 0):\(flipVertical ? 1 : 0)" }
        if blurSigma > 0 { k += "/bl:\(blurSigma)" }
        if sharpenSigma > 0 { k += "/sh:\(sharpenSigma)" }
        if pixelate > 1 { k += "/pix:\(pixelate)" }
        if let c = crop { k += "/c:\(c.width):\(c.height):\(c.gravity?.rawValue ?? "-"):\(c.x):\(c.y)" }
        if let mb = maxBytes { k += "/mb:\(mb)" }
        for f in OutputFormat.allCases { if let q = formatQuality[f] { k += "/fq:\(f.rawValue):\(q)" } }
        if let q = quality { k += "/q:\(q)" }
        if let bg = background { k += "/bg:\(bg.r):\(bg.g):\(bg.b)" }
        return k
    }
}
#endif
