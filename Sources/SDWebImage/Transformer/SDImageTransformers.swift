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

/// Pixel work shared by the transformers: 32-bit premultiplied ARGB, stride = width * 4.
enum Pixels {
    /// A new image of the same format, orientation and scale.
    static func image(_ from: SDImage, _ bitmap: Bitmap) -> SDImage {
        SDImage(bitmap: bitmap, format: from.format, orientation: from.orientation, scale: from.scale,
                sourcePixelWidth: from.sourcePixelWidth, sourcePixelHeight: from.sourcePixelHeight)
    }

    static func make(_ width: Int, _ height: Int, _ body: (UnsafeMutablePointer<UInt32>) -> Void) -> Bitmap? {
        try? Bitmap(width: width, height: height) { raw in body(raw.bindMemory(to: UInt32.self).baseAddress!) }
    }

    static func read<R>(_ b: Bitmap, _ body: (UnsafePointer<UInt32>, Int) -> R) -> R {
        b.withUnsafeBytes { raw in body(raw.bindMemory(to: UInt32.self).baseAddress!, b.bytesPerRow / 4) }
    }

    /// Copy `src` (w x h) into `dst` at (x, y), clipped.
    static func blit(_ src: Bitmap, into dst: UnsafeMutablePointer<UInt32>, _ dw: Int, _ dh: Int, at x: Int, _ y: Int) {
        read(src) { s, sStride in
            for row in 0..<src.height {
                let ty = y + row
                guard ty >= 0, ty < dh else { continue }
                for col in 0..<src.width {
                    let tx = x + col
                    if tx >= 0 && tx < dw { dst[ty * dw + tx] = s[row * sStride + col] }
                }
            }
        }
    }

    static func crop(_ b: Bitmap, x: Int, y: Int, width: Int, height: Int) -> Bitmap? {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(b.width, x + width), y1 = min(b.height, y + height)
        guard x1 > x0, y1 > y0 else { return nil }
        return read(b) { s, stride in
            make(x1 - x0, y1 - y0) { d in
                for row in 0..<(y1 - y0) {
                    (d + row * (x1 - x0)).update(from: s + (y0 + row) * stride + x0, count: x1 - x0)
                }
            }
        }
    }
}

/// Resize to a size in pixels, with a scale mode.
public struct SDImageResizingTransformer: SDImageTransformer {
    /// The output size in pixels (rounded).
    public let size: CGSize
    /// How the image fills `size`: stretched, fitted (letterboxed, transparent bars) or filled (cropped).
    public let scaleMode: SDImageScaleMode
    /// Resize to `size` with `scaleMode`.
    public init(size: CGSize, scaleMode: SDImageScaleMode) {
        self.size = size
        self.scaleMode = scaleMode
    }
    public var transformerKey: String {
        /// "SDImageResizingTransformer({w,h},mode)", as SDWebImage spells it.
        String(format: "SDImageResizingTransformer({%f,%f},%d)", Double(size.width), Double(size.height), scaleMode.rawValue)
    }
    /// The image resized; nil for an empty size.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        let w = Int(size.width.rounded()), h = Int(size.height.rounded())
        guard w > 0, h > 0 else { return nil }
        let sx = Double(w) / Double(image.width), sy = Double(h) / Double(image.height)
        switch scaleMode {
        case .fill:
            return (try? image.bitmap.scaled(width: w, height: h)).map { Pixels.image(image, $0) }
        case .aspectFit:
            let s = min(sx, sy)
            let fw = max(1, Int((Double(image.width) * s).rounded())), fh = max(1, Int((Double(image.height) * s).rounded()))
            guard let fitted = try? image.bitmap.scaled(width: fw, height: fh) else { return nil }
            return Pixels.make(w, h) { d in Pixels.blit(fitted, into: d, w, h, at: (w - fw) / 2, (h - fh) / 2) }
                .map { Pixels.image(image, $0) }
        case .aspectFill:
            let s = max(sx, sy)
            let fw = max(w, Int((Double(image.width) * s).rounded())), fh = max(h, Int((Double(image.height) * s).rounded()))
            guard let filled = try? image.bitmap.scaled(width: fw, height: fh),
                  let cropped = Pixels.crop(filled, x: (fw - w) / 2, y: (fh - h) / 2, width: w, height: h) else { return nil }
            return Pixels.image(image, cropped)
        }
    }
}

/// Crop to a rectangle in pixels (clipped to the image).
public struct SDImageCroppingTransformer: SDImageTransformer {
    /// The rectangle kept, in pixels from the top-left corner.
    public let rect: CGRect
    /// Crop to `rect`.
    public init(rect: CGRect) { self.rect = rect }
    public var transformerKey: String {
        /// "SDImageCroppingTransformer({x,y,w,h})".
        String(format: "SDImageCroppingTransformer({%f,%f,%f,%f})", Double(rect.origin.x), Double(rect.origin.y),
               Double(rect.size.width), Double(rect.size.height))
    }
    /// The part inside `rect`; nil if it lies outside the image.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        Pixels.crop(image.bitmap, x: Int(rect.origin.x), y: Int(rect.origin.y), width: Int(rect.size.width),
                    height: Int(rect.size.height)).map { Pixels.image(image, $0) }
    }
}

/// Mirror horizontally and/or vertically.
public struct SDImageFlippingTransformer: SDImageTransformer {
    /// Mirror left to right.
    public let horizontal: Bool
    /// Mirror top to bottom.
    public let vertical: Bool
    /// Flip in either or both directions (both: a half turn).
    public init(horizontal: Bool, vertical: Bool) {
        self.horizontal = horizontal
        self.vertical = vertical
    }
    /// "SDImageFlippingTransformer(h,v)" with 0/1 flags.
    public var transformerKey: String { "SDImageFlippingTransformer(\(horizontal ? 1 : 0),\(vertical ? 1 : 0))" }
    /// The image mirrored.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        // EXIF orientations: 2 = mirror horizontally, 4 = mirror vertically, 3 = both (rotate 180)
        let o = horizontal && vertical ? 3 : horizontal ? 2 : vertical ? 4 : 1
        return (try? image.bitmap.oriented(o)).map { Pixels.image(image, $0) }
    }
}

/// Rotate by a multiple of 90° (angle in radians, counter-clockwise like
/// SDWebImage; other angles give nil).
public struct SDImageRotationTransformer: SDImageTransformer {
    /// Radians, counter-clockwise; a multiple of π/2 (other angles give no image).
    public let angle: Double
    /// SDWebImage's flag for growing the canvas to fit; quarter turns always fit exactly.
    public let fitSize: Bool
    /// Rotate by `angle` radians.
    public init(angle: Double, fitSize: Bool = true) {
        self.angle = angle
        self.fitSize = fitSize
    }
    /// "SDImageRotationTransformer(angle,fit)".
    public var transformerKey: String { String(format: "SDImageRotationTransformer(%f,%d)", angle, fitSize ? 1 : 0) }
    /// The image turned; nil for an angle that is not a quarter turn.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        let quarters = angle / (Double.pi / 2)
        guard abs(quarters - quarters.rounded()) < 1e-6 else { return nil }
        let q = ((Int(quarters.rounded()) % 4) + 4) % 4
        // EXIF 8 = the stored image is turned 90° counter-clockwise to display, 6 = clockwise
        let o = [1, 8, 3, 6][q]
        return (try? image.bitmap.oriented(o)).map { Pixels.image(image, $0) }
    }
}

/// Round the corners (radius in pixels), with an optional border.
public struct SDImageRoundCornerTransformer: SDImageTransformer {
    /// Corner radius in pixels (at most half the shorter side).
    public let cornerRadius: Double
    /// Width of the border drawn inside the edge, in pixels (0: none).
    public let borderWidth: Double
    /// The border's color (nil: no border).
    public let borderColor: SDColor?
    /// Round the corners by `radius`, with an optional border; outside the corners is transparent.
    public init(radius: Double, borderWidth: Double = 0, borderColor: SDColor? = nil) {
        cornerRadius = radius
        self.borderWidth = borderWidth
        self.borderColor = borderColor
    }
    public var transformerKey: String {
        /// "SDImageRoundCornerTransformer(radius,width,color)".
        String(format: "SDImageRoundCornerTransformer(%f,%f,%@)", cornerRadius, borderWidth, borderColor?.hex ?? "nil")
    }
    /// The image with rounded corners (and border).
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        let w = image.width, h = image.height
        let r = min(cornerRadius, Double(min(w, h)) / 2)
        let border = borderColor.map { $0.premultiplied }
        let bw = max(0, borderWidth)
        return Pixels.read(image.bitmap) { s, stride in
            Pixels.make(w, h) { d in
                for y in 0..<h {
                    for x in 0..<w {
                        let px = s[y * stride + x]
                        // distance from the shape's edge (negative inside), sampled at the pixel centre
                        let cx = Double(x) + 0.5, cy = Double(y) + 0.5
                        let dx = max(r - cx, cx - (Double(w) - r), 0), dy = max(r - cy, cy - (Double(h) - r), 0)
                        let outside = r > 0 && dx > 0 && dy > 0 ? (dx * dx + dy * dy).squareRoot() - r
                            : -min(cx, cy, Double(w) - cx, Double(h) - cy)
                        let coverage = min(1, max(0, 0.5 - outside))
                        var out = px
                        if let border, bw > 0, outside > -bw - 0.5 {
                            let b = min(1, max(0, outside + bw + 0.5))  // 1 inside the border band
                            out = Self.mix(px, border, b)
                        }
                        d[y * w + x] = Self.scale(out, coverage)
                    }
                }
            }
        }.map { Pixels.image(image, $0) }
    }

    /// a * (1 - t) + b * t, per premultiplied channel.
    static func mix(_ a: UInt32, _ b: UInt32, _ t: Double) -> UInt32 {
        var out: UInt32 = 0
        for shift in stride(from: 0, through: 24, by: 8) {
            let ca = Double((a >> UInt32(shift)) & 255), cb = Double((b >> UInt32(shift)) & 255)
            out |= UInt32((ca * (1 - t) + cb * t).rounded()) << UInt32(shift)
        }
        return out
    }

    static func scale(_ p: UInt32, _ t: Double) -> UInt32 {
        t >= 1 ? p : t <= 0 ? 0 : mix(0, p, t)
    }
}

/// Tint: the color over the image, keeping the image's alpha (source-atop).
public struct SDImageTintTransformer: SDImageTransformer {
    /// The tint; its alpha is how strongly it replaces each pixel's color.
    public let tintColor: SDColor
    /// Tint with `color`, keeping each pixel's alpha.
    public init(color: SDColor) { tintColor = color }
    /// "SDImageTintTransformer(#rrggbbaa)".
    public var transformerKey: String { "SDImageTintTransformer(\(tintColor.hex))" }
    /// The image tinted.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        let w = image.width, h = image.height
        let ta = min(1, max(0, tintColor.alpha))
        let tr = tintColor.red * 255, tg = tintColor.green * 255, tb = tintColor.blue * 255
        return Pixels.read(image.bitmap) { s, stride in
            Pixels.make(w, h) { d in
                for y in 0..<h {
                    for x in 0..<w {
                        let p = s[y * stride + x]
                        let a = Double(p >> 24) / 255
                        func ch(_ shift: UInt32, _ t: Double) -> UInt32 {
                            let c = Double((p >> shift) & 255)
                            return UInt32((c * (1 - ta) + t * a * ta).rounded()) << shift
                        }
                        d[y * w + x] = (p & 0xFF00_0000) | ch(16, tr) | ch(8, tg) | ch(0, tb)
                    }
                }
            }
        }.map { Pixels.image(image, $0) }
    }
}

/// Blur: three box passes each way (close to a gaussian of the radius), in
/// premultiplied space so transparent edges stay clean.
public struct SDImageBlurTransformer: SDImageTransformer {
    /// Blur radius in pixels (a Gaussian of sigma radius/2, approximated by three box passes).
    public let blurRadius: Double
    /// Blur by `radius` pixels; 0 returns the image unchanged.
    public init(radius: Double) { blurRadius = radius }
    /// "SDImageBlurTransformer(radius)".
    public var transformerKey: String { String(format: "SDImageBlurTransformer(%f)", blurRadius) }
    /// The image blurred.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        let w = image.width, h = image.height
        // box size for 3 passes approximating a gaussian of sigma = radius / 2
        let sigma = max(0, blurRadius) / 2
        let r = max(0, Int((((12 * sigma * sigma / 3) + 1).squareRoot() - 1) / 2 + 0.5))
        guard r > 0 else { return image }
        var buf = Pixels.read(image.bitmap) { s, stride in
            (0..<h).flatMap { y in (0..<w).map { x in s[y * stride + x] } }
        }
        var tmp = buf
        for _ in 0..<3 {
            Self.box(&buf, &tmp, w, h, r, horizontal: true)
            Self.box(&tmp, &buf, w, h, r, horizontal: false)
        }
        return Pixels.make(w, h) { d in buf.withUnsafeBufferPointer { d.update(from: $0.baseAddress!, count: w * h) } }
            .map { Pixels.image(image, $0) }
    }

    /// One running-sum box pass (edges clamp), src -> dst.
    static func box(_ src: inout [UInt32], _ dst: inout [UInt32], _ w: Int, _ h: Int, _ r: Int, horizontal: Bool) {
        let lines = horizontal ? h : w, len = horizontal ? w : h
        let step = horizontal ? 1 : w
        let n = Double(2 * r + 1)
        for line in 0..<lines {
            let base = horizontal ? line * w : line
            var sum = [Double](repeating: 0, count: 4)
            func add(_ p: UInt32, _ sign: Double) {
                sum[0] += sign * Double(p & 255); sum[1] += sign * Double((p >> 8) & 255)
                sum[2] += sign * Double((p >> 16) & 255); sum[3] += sign * Double(p >> 24)
            }
            func at(_ i: Int) -> UInt32 { src[base + min(len - 1, max(0, i)) * step] }
            for i in -r...r { add(at(i), 1) }
            for i in 0..<len {
                dst[base + i * step] = UInt32((sum[0] / n).rounded()) | UInt32((sum[1] / n).rounded()) << 8
                    | UInt32((sum[2] / n).rounded()) << 16 | UInt32((sum[3] / n).rounded()) << 24
                add(at(i - r), -1)
                add(at(i + r + 1), 1)
            }
        }
    }
}

/// Several transformers in order; the key joins theirs with `-`.
public struct SDImagePipelineTransformer: SDImageTransformer {
    /// Applied in order, each to the previous one's output.
    public let transformers: [any SDImageTransformer]
    /// Chain `transformers`.
    public init(transformers: [any SDImageTransformer]) { self.transformers = transformers }
    /// The members' keys joined with "-".
    public var transformerKey: String { transformers.map(\.transformerKey).joined(separator: "-") }
    /// Every transformer in turn; nil as soon as one gives nil.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        var current = image
        for t in transformers {
            guard let next = t.transformedImage(with: current, forKey: key) else { return nil }
            current = next
        }
        return current
    }
}
