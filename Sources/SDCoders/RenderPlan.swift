import CSDCore

/// One render, typed: the C core's `sd_render` (sd_render.h), planned once
/// from the source's size and orientation and executed by the decoder —
/// shrinking on load for every resize type and crop. imgproxy's order: the
/// source turned upright (its EXIF orientation unless `autoRotate` is off,
/// then `rotate`, then the flips), cropped (`crop`), scaled by the resize
/// type into the box (`width` x `height` times `dpr`, times the zoom), cut
/// to the box by `gravity`, extended, then padded; extended and padded
/// areas hold `background`.
///
/// Set it as `DecodeOptions.render` (or the `.imageRenderPlan` context
/// option of SDWebImage); it replaces the thumbnail box, the aspect flag,
/// `applyOrientation` and the scale-down budget for that decode.
public struct RenderPlan: Sendable, Hashable, CustomStringConvertible {
    /// How the image meets the box (imgproxy's resizing types).
    public enum ResizingType: Int, Sendable, Hashable, CaseIterable {
        /// Inside the box, aspect kept.
        case fit
        /// Covers the box; the overflow is cut by the gravity.
        case fill
        /// As fill, never enlarged: a smaller source keeps the box's aspect.
        case fillDown
        /// Stretched to the box.
        case force
        /// Fill when source and box have the same orientation, else fit.
        case auto
    }

    /// Where a cut keeps the image, or where an extended image sits, with
    /// offsets inwards from the gravity's edge: 1 or more are CSS pixels
    /// (times dpr; source pixels for the source crop's), below 1 a fraction
    /// of the side. `.focusPoint`'s x and y are the point (0...1) kept in
    /// the middle; `.smart` (the box's cut only) keeps where the scaled
    /// image is busiest — edges and saturated colour, like libvips'
    /// attention.
    public struct Gravity: Sendable, Hashable {
        /// The edge or corner the offsets count from (`sd_gravity_type`).
        public enum Kind: Int, Sendable, Hashable, CaseIterable {
            /// The middle; offsets move right and down.
            case center
            /// The top edge.
            case north
            /// The bottom edge.
            case south
            /// The right edge.
            case east
            /// The left edge.
            case west
            /// The top right corner.
            case northEast
            /// The top left corner.
            case northWest
            /// The bottom right corner.
            case southEast
            /// The bottom left corner.
            case southWest
            /// The point (x, y fractions of the image) kept in the middle.
            case focusPoint
            /// Where the scaled image is busiest (the box's cut only).
            case smart
        }

        /// The edge, corner, point or measure.
        public var kind: Kind
        /// The offset from the edge (or the focus point's x).
        public var x: Double
        /// The offset from the edge (or the focus point's y).
        public var y: Double

        /// A gravity of `kind` with offsets (or a focus point) `x`, `y`.
        public init(_ kind: Kind = .center, x: Double = 0, y: Double = 0) {
            self.kind = kind
            self.x = x
            self.y = y
        }

        /// The middle, no offsets.
        public static let center = Gravity()

        var core: sd_gravity { sd_gravity(type: Int32(kind.rawValue), x: x, y: y) }
    }

    /// The area of the source kept before scaling: each side 1 or more in
    /// source pixels, below 1 a fraction, 0 all of it; where, by its own
    /// gravity (nil: the plan's).
    public struct Crop: Sendable, Hashable {
        /// Source pixels (1 or more), a fraction (below 1), or 0: all.
        public var width: Double
        /// Source pixels (1 or more), a fraction (below 1), or 0: all.
        public var height: Double
        /// Where the area is (offsets in source pixels); nil: the plan's gravity.
        public var gravity: Gravity?

        /// An area of `width` x `height` placed by `gravity`.
        public init(width: Double, height: Double, gravity: Gravity? = nil) {
            self.width = width
            self.height = height
            self.gravity = gravity
        }
    }

    /// Padding in CSS pixels, added last.
    public struct Insets: Sendable, Hashable {
        /// CSS pixels above.
        public var top = 0
        /// CSS pixels to the right.
        public var right = 0
        /// CSS pixels below.
        public var bottom = 0
        /// CSS pixels to the left.
        public var left = 0

        /// Padding on each side.
        public init(top: Int = 0, right: Int = 0, bottom: Int = 0, left: Int = 0) {
            (self.top, self.right, self.bottom, self.left) = (top, right, bottom, left)
        }
    }

    /// The box in CSS pixels; 0 is unbounded on that side.
    public var width = 0, height = 0
    /// How the image meets the box.
    public var resizingType = ResizingType.fit
    /// False: never larger than the source (or its crop).
    public var enlarge = false
    /// Device pixels per CSS pixel (> 0).
    public var dpr = 1.0
    /// The scale's multipliers (> 0).
    public var zoomX = 1.0, zoomY = 1.0
    /// The scaled image at least this large (CSS pixels; enlarging if need be); 0: none.
    public var minWidth = 0, minHeight = 0
    /// The area of the source kept before scaling; nil: all of it.
    public var crop: Crop?
    /// The box's cut (fill, fill-down, auto).
    public var gravity = Gravity.center
    /// Extended to the box, the image placed by this gravity; nil: not extended.
    public var extend: Gravity?
    /// Extended to the box's aspect ratio, placed by this gravity; nil: not.
    public var extendAspectRatio: Gravity?
    /// Added around the result, last (CSS pixels, times dpr).
    public var padding = Insets()
    /// Apply the EXIF orientation first.
    public var autoRotate = true
    /// Degrees clockwise after it: 0, 90, 180, 270.
    public var rotate = 0
    /// Mirrored after the rotation.
    public var flipHorizontal = false, flipVertical = false
    /// 0xAARRGGBB, straight alpha: extended and padded areas (0: transparent).
    public var background: UInt32 = 0
    /// Limits on the result: beyond them the decode fails before allocating
    /// (`.imageTooLarge`, "the result would be …"); 0: none.
    public var maxResultPixels = 0, maxResultSide = 0

    /// Full size, fit, the EXIF orientation applied.
    public init() {}

    /// A box of `width` x `height` pixels met by `resizingType`.
    public init(width: Int, height: Int, resizingType: ResizingType = .fit) {
        self.width = width
        self.height = height
        self.resizingType = resizingType
    }

    /// The box, when this plan is only a fit or a force of it, never
    /// enlarged (what SDWebImage calls a thumbnail box, `SD_DEC_TARGET_*`):
    /// nothing cut, extended, padded, zoomed, turned or flipped; else nil.
    package var box: (width: Int, height: Int)? {
        guard resizingType == .fit || resizingType == .force, !enlarge, dpr == 1, zoomX == 1, zoomY == 1,
              minWidth == 0, minHeight == 0, crop == nil, extend == nil, extendAspectRatio == nil,
              padding == Insets(), rotate == 0, !flipHorizontal, !flipVertical else { return nil }
        return (width, height)
    }

    /// The C core's struct.
    public var core: sd_render {
        var r = sd_render()
        sd_render_init(&r)
        func side(_ v: Int) -> UInt32 { UInt32(clamping: max(0, v)) }
        r.width = side(width)
        r.height = side(height)
        r.resize = Int32(resizingType.rawValue)
        r.enlarge = enlarge ? 1 : 0
        r.dpr = dpr
        r.zoom_x = zoomX
        r.zoom_y = zoomY
        r.min_width = side(minWidth)
        r.min_height = side(minHeight)
        if let crop {
            r.crop_width = crop.width
            r.crop_height = crop.height
            if let g = crop.gravity {
                r.crop_gravity_set = 1
                r.crop_gravity = g.core
            }
        }
        r.gravity = gravity.core
        if let g = extend {
            r.extend = 1
            r.extend_gravity = g.core
        }
        if let g = extendAspectRatio {
            r.extend_aspect = 1
            r.extend_aspect_gravity = g.core
        }
        r.pad_top = side(padding.top)
        r.pad_right = side(padding.right)
        r.pad_bottom = side(padding.bottom)
        r.pad_left = side(padding.left)
        r.auto_rotate = autoRotate ? 1 : 0
        r.rotate = Int32(clamping: rotate)
        r.flip_x = flipHorizontal ? 1 : 0
        r.flip_y = flipVertical ? 1 : 0
        r.background = background
        r.max_result_pixels = Int64(max(0, maxResultPixels))
        r.max_result_side = Int64(max(0, maxResultSide))
        return r
    }

    /// The plan for a source of `width` x `height` stored pixels with EXIF
    /// `orientation`: the result's size, or nil when the plan is refused
    /// (a field out of range, or the result over its limits).
    public func resultSize(sourceWidth: Int, sourceHeight: Int, orientation: Int = 1) -> (width: Int, height: Int)? {
        var r = core
        var p = sd_render_plan()
        guard sourceWidth > 0, sourceHeight > 0,
              sd_render_plan_for(&r, UInt32(clamping: sourceWidth), UInt32(clamping: sourceHeight),
                                 Int32(orientation), &p) == 0 else { return nil }
        return (Int(p.width), Int(p.height))
    }

    /// Every field, canonical: equal plans print the same (cache keys).
    public var description: String {
        func g(_ g: Gravity) -> String { "\(g.kind.rawValue):\(g.x):\(g.y)" }
        var s = "\(resizingType.rawValue):\(width)x\(height):el\(enlarge ? 1 : 0):dpr\(dpr):z\(zoomX):\(zoomY)"
        s += ":min\(minWidth)x\(minHeight):g\(g(gravity)):ar\(autoRotate ? 1 : 0):rot\(rotate)"
        s += ":fl\(flipHorizontal ? 1 : 0)\(flipVertical ? 1 : 0):bg\(background)"
        if let c = crop { s += ":c\(c.width)x\(c.height)" + (c.gravity.map { "@" + g($0) } ?? "") }
        if let e = extend { s += ":ex" + g(e) }
        if let e = extendAspectRatio { s += ":exar" + g(e) }
        if padding != Insets() { s += ":pd\(padding.top),\(padding.right),\(padding.bottom),\(padding.left)" }
        if maxResultPixels > 0 || maxResultSide > 0 { s += ":max\(maxResultPixels),\(maxResultSide)" }
        return s
    }
}
