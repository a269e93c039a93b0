import Dispatch
import Foundation
import SDSync

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
