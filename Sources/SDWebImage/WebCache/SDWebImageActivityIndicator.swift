import Dispatch
import Foundation
import SDSync

/// A spinning arc (SDWebImage's `SDWebImageActivityIndicator`): twelve
/// frames a turn, ticked by a clock (default 12 frames a second; tests give
/// a manual one), drawn as a premultiplied `size`×`size` overlay.
public final class SDWebImageActivityIndicator: DrawnIndicator {
    let core = IndicatorCore()
    private let clock: any SDAnimatedImagePlayerClock
    private let color: SDWebImageIndicatorColor
    /// The overlay's side in pixels.
    public let size: Int

    /// An arc `size` pixels across in `color`, turning on `clock`.
    public init(size: Int = 32, color: SDWebImageIndicatorColor = SDWebImageIndicatorColor(0x60, 0x60, 0x60),
                clock: any SDAnimatedImagePlayerClock = SDAnimatedImageDisplayClock(framesPerSecond: 12)) {
        self.clock = clock
        self.color = color
        self.size = max(4, size)
    }

    /// Whether the indicator is showing.
    public var isAnimating: Bool { core.state.withLock { $0.running } }
    /// The frame shown (0...11).
    public var frameIndex: Int { core.state.withLock { $0.frame } }

    public func startAnimatingIndicator() {
        core.state.withLock { $0.running = true; $0.frame = 0 }
        core.redraw(render)
        clock.start { [weak self] in
            guard let self else { return }
            self.core.state.withLock { $0.frame = ($0.frame + 1) % 12 }
            self.core.redraw(self.render)
        }
    }

    public func stopAnimatingIndicator() {
        clock.stop()
        core.state.withLock { $0.running = false }
        core.redraw(render)
    }

    private func render() -> SDImage? {
        let n = size, frame = frameIndex
        let start = Double(frame) / 12 * 2 * .pi
        let (r0, r1) = (Double(n) * 0.30, Double(n) * 0.46)
        let c = Double(n) / 2
        return (try? Bitmap(width: n, height: n) { px in
            for y in 0..<n {
                for x in 0..<n {
                    let dx = Double(x) + 0.5 - c, dy = Double(y) + 0.5 - c
                    let d = (dx * dx + dy * dy).squareRoot()
                    // a ring, anti-aliased at both edges; the arc covers 3/4 of a turn from `start`
                    let edge = min(1, max(0, d - r0 + 0.5)) * min(1, max(0, r1 - d + 0.5))
                    var a = atan2(dy, dx) - start
                    while a < 0 { a += 2 * .pi }
                    let cover = edge * (a <= 1.5 * .pi ? 1 : 0)
                    let alpha = UInt32((cover * 255).rounded())
                    let i = (y * n + x) * 4
                    px[i] = UInt8(UInt32(color.b) * alpha / 255)
                    px[i + 1] = UInt8(UInt32(color.g) * alpha / 255)
                    px[i + 2] = UInt8(UInt32(color.r) * alpha / 255)
                    px[i + 3] = UInt8(alpha)
                }
            }
        }).map { SDImage(bitmap: $0) }
    }
}
