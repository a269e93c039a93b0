import Dispatch
import Foundation
import SDSync

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
