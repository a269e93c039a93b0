import Foundation
import SDCoders

/// An image whose frames come from its coder on demand (SDWebImage's
/// `SDAnimatedImage`): its own bitmap is frame 0; other frames are
/// composited when asked for, or kept after `preloadAllFrames()`. In a memory
/// cache it costs frame 0 plus the frames it keeps; on disk it is the
/// original bytes (`animatedImageData`).
///
/// Subclass it and pass the class as `.animatedImageClass` to have loads
/// produce yours; both initialisers are `required` for that.
// @unchecked: frames loaded so far are under `lock`; the coder is Sendable; the rest is set in init.
open class SDAnimatedImage: SDImage, SDAnimatedImageProvider, @unchecked Sendable {
    /// The frame source.
    public let animatedCoder: any SDAnimatedImageCoder

    /// An incremental image's frame count when it was made (its coder grows on).
    private let arrived: UInt?
    private let lock = NSLock()
    private var loaded: [SDImage?] = []
    private var allLoaded = false

    /// Decode `data` with the first listed coder that is an animated coder
    /// and claims it (a still image works too: one frame).
    public required convenience init?(data: Data, scale: Double = 1, options: SDImageCoderOptions? = nil) {
        var o = options ?? [:]
        o[.decodeScaleFactor] = scale
        for case let c as any SDAnimatedImageCoder in SDImageCodersManager.shared.asked where c.canDecode(from: data) {
            guard let source = type(of: c).init(animatedImageData: data, options: o) else { continue }
            self.init(animatedCoder: source, scale: scale)
            return
        }
        return nil
    }

    /// Frames from `animatedCoder` (nil when it has no frame 0).
    public required convenience init?(animatedCoder: any SDAnimatedImageCoder, scale: Double = 1) {
        self.init(animatedCoder: animatedCoder, scale: scale, isIncremental: false)
    }

    /// Frames from `animatedCoder`; `isIncremental`: a progressive download's
    /// animation so far, whose coder keeps growing (SDWebImage's
    /// `sd_isIncremental` on an animated image): its frame count is what had
    /// arrived when it was made, and a player holds the last frame until more do.
    public init?(animatedCoder: any SDAnimatedImageCoder, scale: Double = 1, isIncremental: Bool) {
        arrived = isIncremental ? animatedCoder.animatedImageFrameCount : nil
        guard let first = animatedCoder.animatedImageFrame(at: 0) else { return nil }
        self.animatedCoder = animatedCoder
        super.init(bitmap: first.bitmap, format: first.format, orientation: first.orientation, scale: scale,
                   isIncremental: isIncremental, sourcePixelWidth: first.sourcePixelWidth,
                   sourcePixelHeight: first.sourcePixelHeight)
    }

    /// Itself, when it has more than one frame (a still image in this class is not animated).
    open override var animatedProvider: (any SDAnimatedImageProvider)? { animatedImageFrameCount > 1 ? self : nil }

    /// Frame 0 and every kept frame.
    open override var cost: Int {
        lock.lock()
        defer { lock.unlock() }
        return bitmap.cost + loaded.reduce(0) { $0 + ($1?.bitmap.cost ?? 0) }
    }

    // MARK: - SDAnimatedImageProvider

    public var animatedImageData: Data? { animatedCoder.animatedImageData }
    /// Frames in the animation, as its coder reports (for an incremental
    /// image: as it reported when the image was made).
    public var animatedImageFrameCount: UInt { arrived ?? animatedCoder.animatedImageFrameCount }
    public var animatedImageLoopCount: UInt { animatedCoder.animatedImageLoopCount }

    public func animatedImageFrame(at index: UInt) -> SDImage? {
        if index == 0 { return SDImage(bitmap: bitmap, format: format, orientation: orientation, scale: scale) }
        lock.lock()
        let kept = Int(index) < loaded.count ? loaded[Int(index)] : nil
        lock.unlock()
        if let kept { return kept }
        return animatedCoder.animatedImageFrame(at: index).map(rescaled)
    }

    public func animatedImageDuration(at index: UInt) -> TimeInterval { animatedCoder.animatedImageDuration(at: index) }

    private func rescaled(_ f: SDImage) -> SDImage {
        f.scale == scale ? f : SDImage(bitmap: f.bitmap, format: f.format, orientation: f.orientation, scale: scale)
    }

    // MARK: - Keeping frames

    /// Decode and keep every frame (SDWebImage's `preloadAllFrames`): playing
    /// then costs no decoding, memory costs every frame.
    open func preloadAllFrames() {
        let n = Int(animatedImageFrameCount)
        guard n > 1 else { return }
        var frames: [SDImage?] = [nil]
        for i in 1..<n { frames.append(animatedCoder.animatedImageFrame(at: UInt(i)).map(rescaled)) }
        lock.lock()
        loaded = frames
        allLoaded = true
        lock.unlock()
    }

    /// Drop the kept frames.
    open func unloadAllFrames() {
        lock.lock()
        loaded = []
        allLoaded = false
        lock.unlock()
        (animatedCoder as? SDImageCoreCoder)?.releaseDecoder()
    }

    /// Every frame is decoded and held (`preloadAllFrames()`).
    public var isAllFramesLoaded: Bool { lock.lock(); defer { lock.unlock() }; return allLoaded }

    public override var description: String {
        "<SDAnimatedImage \(width)x\(height) @\(scale)x \(format) \(animatedImageFrameCount) frames>"
    }
}
