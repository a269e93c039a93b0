import Foundation
import SDCoders
import SDSync

/// The frames of a progressive animated download so far, as the C core's
/// decode sink sends them (`LoaderPreview.frame`): the frame source of every
/// "animation so far" one download shows — one per download, as SDWebImage
/// uses one coder (test28) — so the bytes are decoded once, by the sink.
/// An image made from it keeps the frame count it had when made
/// (`SDAnimatedImage(animatedCoder:scale:isIncremental:)`); a player holds
/// its last frame until a newer image brings more.
///
/// It is made from frames, not from bytes: it decodes no data and encodes
/// nothing, and `init(animatedImageData:options:)` answers nil.
final class AnimationSoFar: SDAnimatedImageCoder {
    private struct Frames {
        var images: [SDImage] = []
        var seconds: [TimeInterval] = []
        var loopCount: UInt = 0
        var stopped = false  // a frame was skipped (a dropped partial): no more
    }
    private let frames = Locked(Frames())

    init() {}

    init?(animatedImageData data: Data?, options: SDImageCoderOptions?) { nil }

    /// Frame `index` arrived (they come in order from 0). The frame count
    /// when it extends the animation, nil when it does not (a frame was
    /// skipped: the animation so far ends at the last one in order).
    func add(_ bitmap: Bitmap, index: Int, milliseconds: Int, loopCount: Int, format: ImageFormat) -> Int? {
        frames.withLock { f in
            guard !f.stopped, index == f.images.count else { f.stopped = true; return nil }
            f.images.append(SDImage(bitmap: bitmap, format: format))
            f.seconds.append(Double(max(0, milliseconds)) / 1000)
            f.loopCount = UInt(max(0, loopCount))
            return f.images.count
        }
    }

    // MARK: - SDAnimatedImageProvider

    var animatedImageData: Data? { nil }
    var animatedImageFrameCount: UInt { frames.withLock { UInt($0.images.count) } }
    var animatedImageLoopCount: UInt { frames.withLock { $0.loopCount } }

    func animatedImageFrame(at index: UInt) -> SDImage? {
        frames.withLock { index < $0.images.count ? $0.images[Int(index)] : nil }
    }

    func animatedImageDuration(at index: UInt) -> TimeInterval {
        frames.withLock { index < $0.seconds.count ? $0.seconds[Int(index)] : 0 }
    }

    // MARK: - SDImageCoder: not a coder of bytes

    func canDecode(from data: Data?) -> Bool { false }
    func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage? { nil }
    func canEncode(to format: SDImageFormat) -> Bool { false }
    func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data? { nil }
}
