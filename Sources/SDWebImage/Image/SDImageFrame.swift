import Foundation

/// One frame of an animation and how long it shows (SDWebImage's `SDImageFrame`).
public final class SDImageFrame: Sendable {
    /// The frame's pixels, composited (what shows on screen).
    public let image: SDImage
    /// Seconds, the effective duration (browsers' rule already applied).
    public let duration: TimeInterval

    /// A frame shown for `duration` seconds (negative counts as 0).
    public init(image: SDImage, duration: TimeInterval) {
        self.image = image
        self.duration = max(0, duration)
    }

    /// SDWebImage's spelling of `init(image:duration:)`.
    public static func frame(with image: SDImage, duration: TimeInterval) -> SDImageFrame {
        SDImageFrame(image: image, duration: duration)
    }
}

/// Where an animation's frames come from, on demand (SDWebImage's
/// `SDAnimatedImageProvider`). An `SDImage` with a provider is animated: its
/// own bitmap is frame 0, the rest are composited when asked for, so an
/// animation is never decoded into memory whole. Coders of animated formats
/// (GIF, APNG, WebP) provide it; `SDImage.animatedImage(with:)` makes one
/// from frames in memory.
public protocol SDAnimatedImageProvider: AnyObject, Sendable {
    /// The encoded bytes the frames come from (nil when made in memory).
    var animatedImageData: Data? { get }
    /// Frames in the animation (frame 0 included).
    var animatedImageFrameCount: UInt { get }
    /// Times the animation plays; 0 = forever.
    var animatedImageLoopCount: UInt { get }
    /// Frame `index` fully composited, or nil when it cannot be produced.
    func animatedImageFrame(at index: UInt) -> SDImage?
    /// Seconds frame `index` shows.
    func animatedImageDuration(at index: UInt) -> TimeInterval
}

/// Frames held in memory (`SDImage.animatedImage(with:loopCount:)`).
final class SDFramesProvider: SDAnimatedImageProvider {
    let frames: [SDImageFrame]
    let loopCount: UInt

    init(frames: [SDImageFrame], loopCount: UInt) {
        self.frames = frames
        self.loopCount = loopCount
    }

    var animatedImageData: Data? { nil }
    var animatedImageFrameCount: UInt { UInt(frames.count) }
    var animatedImageLoopCount: UInt { loopCount }
    func animatedImageFrame(at index: UInt) -> SDImage? { index < frames.count ? frames[Int(index)].image : nil }
    func animatedImageDuration(at index: UInt) -> TimeInterval { index < frames.count ? frames[Int(index)].duration : 0 }
    /// Every frame's pixels: what the animation costs in a memory cache.
    var cost: Int { frames.reduce(0) { $0 + $1.image.bitmap.cost } }
}

extension SDImage {
    /// An animated image from frames of one pixel size (SDWebImage's
    /// `SDImageCoderHelper.animatedImage(with:)`); frame 0 is the image's own
    /// bitmap. nil for no frames or frames of different sizes. One frame
    /// gives a still image.
    public static func animatedImage(with frames: [SDImageFrame], loopCount: UInt = 0) -> SDImage? {
        guard let first = frames.first?.image else { return nil }
        guard frames.allSatisfy({ $0.image.width == first.width && $0.image.height == first.height }) else {
            return nil
        }
        if frames.count == 1 { return first }
        return SDImage(bitmap: first.bitmap, format: first.format, orientation: first.orientation, scale: first.scale,
                       sourcePixelWidth: first.sourcePixelWidth, sourcePixelHeight: first.sourcePixelHeight,
                       animatedProvider: SDFramesProvider(frames: frames, loopCount: loopCount))
    }

    /// The frames of an animated image, composited and with their durations
    /// (SDWebImage's `SDImageCoderHelper.frames(from:)`); nil for a still image.
    public static func frames(from image: SDImage) -> [SDImageFrame]? {
        guard let p = image.animatedProvider else { return nil }
        if let mem = p as? SDFramesProvider { return mem.frames }
        var out: [SDImageFrame] = []
        for i in 0..<p.animatedImageFrameCount {
            guard let f = p.animatedImageFrame(at: i) else { return nil }
            out.append(SDImageFrame(image: f, duration: p.animatedImageDuration(at: i)))
        }
        return out
    }

    /// An animation (SDWebImage's `sd_isAnimated`).
    public var sd_isAnimated: Bool { animatedProvider != nil }
    /// Frames: 1 for a still image.
    public var sd_imageFrameCount: Int { animatedProvider.map { Int($0.animatedImageFrameCount) } ?? 1 }
    /// Times the animation plays (0 = forever); 1 for a still image, as the C
    /// core reports it (SDWebImage leaves a still's at 0; it means nothing there).
    public var sd_imageLoopCount: Int { animatedProvider.map { Int($0.animatedImageLoopCount) } ?? 1 }
    /// Seconds one loop lasts (0 for a still image), as `UIImage.duration`.
    public var duration: TimeInterval {
        guard let p = animatedProvider else { return 0 }
        return (0..<p.animatedImageFrameCount).reduce(0) { $0 + p.animatedImageDuration(at: $1) }
    }
}
