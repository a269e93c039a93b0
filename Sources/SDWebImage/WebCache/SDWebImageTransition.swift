import Foundation

/// A transition from the image on a view to a new one, SDWebImage's
/// `SDWebImageTransition` without Core Animation: the view is asked to draw
/// the new image at rising alpha (``SDWebImageView/sd_display(_:alpha:)``),
/// frame by frame, on its queue. A newer load on the view stops it.
public struct SDWebImageTransition: Sendable, Equatable {
    /// How alpha rises over the duration.
    public enum Curve: Sendable, Equatable {
        /// Evenly.
        case linear
        /// Slow, fast, slow (smoothstep).
        case easeInOut

        func value(_ t: Double) -> Double {
            switch self {
            case .linear: t
            case .easeInOut: t * t * (3 - 2 * t)
            }
        }
    }

    /// Seconds from the first frame (alpha 0) to the last (alpha 1).
    public var duration: TimeInterval
    /// Frames drawn per second (at least one frame after the first).
    public var framesPerSecond: Double
    /// How alpha rises.
    public var curve: Curve

    /// A transition of `duration` seconds at `framesPerSecond`.
    public init(duration: TimeInterval, framesPerSecond: Double = 60, curve: Curve = .easeInOut) {
        self.duration = max(0, duration)
        self.framesPerSecond = max(1, framesPerSecond)
        self.curve = curve
    }

    /// SDWebImage's `fadeTransition` (0.5 s).
    public static let fade = Self(duration: 0.5)
    /// A cross-fade of `duration` seconds.
    public static func fade(duration: TimeInterval) -> Self { Self(duration: duration) }

    /// The alpha of every frame after the first (which is 0): rising, the last exactly 1.
    public var alphas: [Double] {
        let n = max(1, Int((duration * framesPerSecond).rounded()))
        return (1...n).map { $0 == n ? 1 : curve.value(Double($0) / Double(n)) }
    }
}
