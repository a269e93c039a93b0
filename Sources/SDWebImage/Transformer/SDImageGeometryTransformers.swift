import Foundation
import SDCoders

/// Resize to a size in pixels, with a scale mode.
public struct SDImageResizingTransformer: SDImageTransformer {
    /// The output size in pixels (rounded).
    public let size: CGSize
    /// How the image fills `size`: stretched, fitted (letterboxed, transparent bars) or filled (cropped).
    public let scaleMode: SDImageScaleMode
    /// The filter (up and down alike; default Lanczos-3).
    public let resampling: Resampling
    /// Resize to `size` with `scaleMode`, resampled with `resampling`.
    public init(size: CGSize, scaleMode: SDImageScaleMode, resampling: Resampling = .default) {
        self.size = size
        self.scaleMode = scaleMode
        self.resampling = resampling
    }
    public var transformerKey: String {
        /// "SDImageResizingTransformer({w,h},mode)", as SDWebImage spells it
        /// (plus the resampling when it is not the default).
        let key = String(format: "SDImageResizingTransformer({%f,%f},%d)", Double(size.width), Double(size.height),
                         scaleMode.rawValue)
        return resampling == .default ? key : key.dropLast() + ",\(resampling))"
    }
    /// The render that makes this result from a source (a force, a fit
    /// extended to the box with transparent bars, a centred fill; enlarging
    /// as the transformer does): what a load decodes to, shrinking on load.
    var plan: RenderPlan? {
        let w = Int(size.width.rounded()), h = Int(size.height.rounded())
        guard w > 0, h > 0 else { return nil }
        var p = RenderPlan(width: w, height: h,
                           resizingType: scaleMode == .fill ? .force : scaleMode == .aspectFit ? .fit : .fill)
        p.enlarge = true
        if scaleMode == .aspectFit { p.extend = .center }
        return p
    }

    /// The image resized; nil for an empty size.
    public func transformedImage(with image: SDImage, forKey key: String) -> SDImage? {
        let w = Int(size.width.rounded()), h = Int(size.height.rounded())
        guard w > 0, h > 0 else { return nil }
        let sx = Double(w) / Double(image.width), sy = Double(h) / Double(image.height)
        switch scaleMode {
        case .fill:
            return (try? image.bitmap.scaled(width: w, height: h, resampling: resampling)).map { Pixels.image(image, $0) }
        case .aspectFit:
            let s = min(sx, sy)
            let fw = max(1, Int((Double(image.width) * s).rounded())), fh = max(1, Int((Double(image.height) * s).rounded()))
            guard let fitted = try? image.bitmap.scaled(width: fw, height: fh, resampling: resampling) else { return nil }
            return Pixels.make(w, h) { d in Pixels.blit(fitted, into: d, w, h, at: (w - fw) / 2, (h - fh) / 2) }
                .map { Pixels.image(image, $0) }
        case .aspectFill:
            let s = max(sx, sy)
            let fw = max(w, Int((Double(image.width) * s).rounded())), fh = max(h, Int((Double(image.height) * s).rounded()))
            guard let filled = try? image.bitmap.scaled(width: fw, height: fh, resampling: resampling),
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
