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

/// Where a crop keeps the image (imgproxy's gravity types; `fp` is a focus
/// point, its x and y fractions of the image; `sm`, smart, where the scaled
/// image is busiest — for the box's cut only).
public enum Gravity: String, Sendable, CaseIterable {
    case ce, no, so, ea, we, noea, nowe, soea, sowe, fp, sm

    var kind: RenderPlan.Gravity.Kind {
        switch self {
        case .ce: .center
        case .no: .north
        case .so: .south
        case .ea: .east
        case .we: .west
        case .noea: .northEast
        case .nowe: .northWest
        case .soea: .southEast
        case .sowe: .southWest
        case .fp: .focusPoint
        case .sm: .smart
        }
    }
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
    /// Extended to the box, placed by this gravity (imgproxy's `ex`); nil: not.
    public var extend: (gravity: Gravity, x: Double, y: Double)?
    /// Extended to the box's aspect ratio (imgproxy's `exar`); nil: not.
    public var extendAspectRatio: (gravity: Gravity, x: Double, y: Double)?
    /// CSS pixels added around the result (imgproxy's `pd`), times dpr.
    public var padding = (top: 0, right: 0, bottom: 0, left: 0)
    /// The scaled image at least this large, CSS pixels (imgproxy's `mw`, `mh`); 0: none.
    public var minWidth = 0, minHeight = 0
    /// The scale's multipliers (imgproxy's `z`).
    public var zoom = (x: 1.0, y: 1.0)

    public init() {}

    /// The render these options describe, for the decoder (the result
    /// limits are the server's, set by the renderer).
    public var renderPlan: RenderPlan {
        func g(_ t: Gravity, _ x: Double, _ y: Double) -> RenderPlan.Gravity { RenderPlan.Gravity(t.kind, x: x, y: y) }
        let types: [ResizingType: RenderPlan.ResizingType] = [.fit: .fit, .fill: .fill, .fillDown: .fillDown,
                                                               .force: .force, .auto: .auto]
        var p = RenderPlan(width: width, height: height, resizingType: types[resizingType] ?? .fit)
        p.enlarge = enlarge
        p.dpr = dpr
        (p.zoomX, p.zoomY) = zoom
        (p.minWidth, p.minHeight) = (minWidth, minHeight)
        p.gravity = g(gravity, gravityX, gravityY)
        if let c = crop { p.crop = RenderPlan.Crop(width: c.width, height: c.height, gravity: c.gravity.map { g($0, c.x, c.y) }) }
        p.extend = extend.map { g($0.gravity, $0.x, $0.y) }
        p.extendAspectRatio = extendAspectRatio.map { g($0.gravity, $0.x, $0.y) }
        p.padding = RenderPlan.Insets(top: padding.top, right: padding.right, bottom: padding.bottom, left: padding.left)
        p.autoRotate = autoRotate
        p.rotate = rotate
        (p.flipHorizontal, p.flipVertical) = (flipHorizontal, flipVertical)
        if let bg = background { p.background = 0xff00_0000 | UInt32(bg.r) << 16 | UInt32(bg.g) << 8 | UInt32(bg.b) }
        return p
    }

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
        if let e = extend { k += "/ex:\(e.gravity.rawValue):\(offset(e.x)):\(offset(e.y))" }
        if let e = extendAspectRatio { k += "/exar:\(e.gravity.rawValue):\(offset(e.x)):\(offset(e.y))" }
        if padding != (0, 0, 0, 0) {
            k += "/pd:\(Double(padding.top) * dpr):\(Double(padding.right) * dpr):\(Double(padding.bottom) * dpr):\(Double(padding.left) * dpr)"
        }
        if minWidth > 0 || minHeight > 0 { k += "/min:\(Double(minWidth) * dpr):\(Double(minHeight) * dpr)" }
        if zoom != (1, 1) { k += "/z:\(zoom.x):\(zoom.y)" }
        if let mb = maxBytes { k += "/mb:\(mb)" }
        for f in OutputFormat.allCases { if let q = formatQuality[f] { k += "/fq:\(f.rawValue):\(q)" } }
        if let q = quality { k += "/q:\(q)" }
        if let bg = background { k += "/bg:\(bg.r):\(bg.g):\(bg.b)" }
        return k
    }
}
#endif
