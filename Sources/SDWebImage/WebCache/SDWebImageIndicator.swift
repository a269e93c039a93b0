import Dispatch
import Foundation
import SDSync

/// What a view shows while it loads (SDWebImage's `SDWebImageIndicator`):
/// the view layer starts it when a load with a URL begins, passes it the
/// fraction of bytes as they arrive, and stops it when the load ends (image,
/// failure or cancel) — every call on the view's queue. Set one with
/// ``SDWebImageView/sd_imageIndicator``.
public protocol SDWebImageIndicator: AnyObject, Sendable {
    /// A load began.
    func startAnimatingIndicator()
    /// The load ended.
    func stopAnimatingIndicator()
    /// `progress` (0...1) of the bytes arrived; the default ignores it.
    func updateIndicatorProgress(_ progress: Double)
}

extension SDWebImageIndicator {
    public func updateIndicatorProgress(_ progress: Double) {}
}

/// An opaque colour for the built-in indicators.
public struct SDWebImageIndicatorColor: Sendable, Equatable {
    /// Red, green and blue, 0...255.
    public var r, g, b: UInt8
    /// The colour `r`, `g`, `b`.
    public init(_ r: UInt8, _ g: UInt8, _ b: UInt8) { self.r = r; self.g = g; self.b = b }
}

/// The built-in indicators' common part: each draws itself into an overlay
/// image handed to the view's ``SDWebImageView/sd_displayIndicator(_:)``
/// (nil when stopped) — the same hook style as ``SDWebImageView/sd_display(_:)``,
/// so any toolkit draws it over the image as it draws images.
final class IndicatorCore: Sendable {
    struct State {
        var draw: (@Sendable (SDImage?) -> Void)?
        var running = false
        var progress = 0.0
        var frame = 0
    }
    let state = Locked(State())

    /// Where the overlays go: set by the view when the indicator is attached.
    var draw: (@Sendable (SDImage?) -> Void)? {
        get { state.withLock { $0.draw } }
        set { state.withLock { $0.draw = newValue } }
    }

    func redraw(_ render: () -> SDImage?) {
        let (draw, running) = state.withLock { ($0.draw, $0.running) }
        draw?(running ? render() : nil)
    }
}

/// An indicator that draws its own overlay (the built-in ones).
protocol DrawnIndicator: SDWebImageIndicator {
    var core: IndicatorCore { get }
}

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

/// A bar filling with the bytes loaded (SDWebImage's
/// `SDWebImageProgressIndicator`): `size`×`height` pixels, the filled part
/// in `color` over a translucent track.
public final class SDWebImageProgressIndicator: DrawnIndicator {
    let core = IndicatorCore()
    private let height: Int
    private let color: SDWebImageIndicatorColor
    /// The bar's width in pixels.
    public let size: Int

    /// A bar `size` pixels wide and `height` high.
    public init(size: Int = 64, height: Int = 4, color: SDWebImageIndicatorColor = SDWebImageIndicatorColor(0x30, 0x80, 0xF0)) {
        self.size = max(4, size)
        self.height = max(1, height)
        self.color = color
    }

    /// Whether the indicator is showing.
    public var isAnimating: Bool { core.state.withLock { $0.running } }
    /// The fraction shown.
    public var progress: Double { core.state.withLock { $0.progress } }

    public func startAnimatingIndicator() {
        core.state.withLock { $0.running = true; $0.progress = 0 }
        core.redraw(render)
    }

    public func stopAnimatingIndicator() {
        core.state.withLock { $0.running = false }
        core.redraw(render)
    }

    public func updateIndicatorProgress(_ progress: Double) {
        core.state.withLock { $0.progress = min(1, max(0, progress)) }
        core.redraw(render)
    }

    private func render() -> SDImage? {
        let w = size, h = height, filled = Int((progress * Double(w)).rounded())
        return (try? Bitmap(width: w, height: h) { px in
            for y in 0..<h {
                for x in 0..<w {
                    let i = (y * w + x) * 4
                    if x < filled {
                        px[i] = color.b; px[i + 1] = color.g; px[i + 2] = color.r; px[i + 3] = 255
                    } else {  // the track: black at 25 %
                        px[i] = 0; px[i + 1] = 0; px[i + 2] = 0; px[i + 3] = 64
                    }
                }
            }
        }).map { SDImage(bitmap: $0) }
    }
}
