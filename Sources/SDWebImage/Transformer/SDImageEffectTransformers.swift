import Foundation
import SDCoders

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
