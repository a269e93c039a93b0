import Dispatch
import Foundation
import SDSync

/// A view that shows images loaded through ``SDWebImageManager``: SDWebImage's
/// `UIView+WebCache` for any Linux toolkit (GTK, SDL, a terminal UI, a game
/// engine). Adopt it with a stored state object, the queue that is the
/// view's main thread, and a way to show an image:
///
///     final class Cell: SDWebImageView {
///         let sd_webImageState = SDWebImageViewState()
///         var sd_viewQueue: SDCallbackQueue { uiQueue }
///         func sd_display(_ image: SDImage?) { texture = image; redraw() }
///     }
///     cell.sd_setImage(with: url, placeholderImage: placeholder)
///
/// Everything that touches the view (placeholder, previews, the image, the
/// frames of a transition or an animation) runs on ``sd_viewQueue``; call
/// the `sd_` methods there too, so a new load and the results of the old one
/// are ordered. A view asked for image A and then, before A arrived, for B
/// ends on B and never shows A (each load on a view carries a generation;
/// a result of an older one is dropped on the view's queue).
public protocol SDWebImageView: AnyObject {
    /// The view's loads, URL and progress: a stored property the view owns
    /// (`let sd_webImageState = SDWebImageViewState()`). When the view goes,
    /// the state goes, and its loads are cancelled.
    var sd_webImageState: SDWebImageViewState { get }
    /// The view's own thread (Linux toolkits each have their main loop): a
    /// serial queue with the `.safeExecute` policy runs a result at once when
    /// it is already there, as SDWebImage's `dispatch_main_async_safe`.
    var sd_viewQueue: SDCallbackQueue { get }
    /// Show `image` (nil: nothing). Called on ``sd_viewQueue``.
    func sd_display(_ image: SDImage?)
    /// Show `image` at `alpha` (0...1) over what is shown: the frames of an
    /// ``SDWebImageTransition``. The default shows it once, when `alpha` is 1.
    func sd_display(_ image: SDImage?, alpha: Double)
    /// Whether an animated image plays on the view (default true); false
    /// shows its first frame.
    var sd_playsAnimatedImages: Bool { get }
    /// The clock an animated image plays on (default: a display clock at
    /// 60 Hz); tests give a manual one.
    func sd_makeAnimationClock() -> any SDAnimatedImagePlayerClock
    /// The view's size in its own units (GTK's allocation, SDL's window
    /// points), read on ``sd_viewQueue`` when a load starts and by
    /// ``sd_viewSizeDidChange()``; nil (the default) while it has none. With
    /// ``SDWebImageViewState/imageSizing`` `.fitView` it sizes the load.
    var sd_viewSize: CGSize? { get }
    /// Pixels per unit of ``sd_viewSize`` (GTK's
    /// `gtk_widget_get_scale_factor`, SDL's drawable width over window
    /// width): 2 on a HiDPI screen. Default 1.
    var sd_scaleFactor: Double { get }
    /// Show an activity indicator's overlay over the image (nil: none), on
    /// ``sd_viewQueue``: what the built-in indicators draw (see
    /// ``sd_imageIndicator``). The default ignores it.
    func sd_displayIndicator(_ overlay: SDImage?)
}

extension SDWebImageView {
    public func sd_display(_ image: SDImage?, alpha: Double) {
        if alpha >= 1 { sd_display(image) }
    }
    public var sd_playsAnimatedImages: Bool { true }
    public func sd_makeAnimationClock() -> any SDAnimatedImagePlayerClock { SDAnimatedImageDisplayClock() }
    public var sd_viewSize: CGSize? { nil }
    public var sd_scaleFactor: Double { 1 }
    public func sd_displayIndicator(_ overlay: SDImage?) {}
}

/// How a view sizes what it loads (Coil's `ViewSizeResolver`, Glide's
/// `DownsampleStrategy`, Kingfisher's `DownsamplingImageProcessor`).
public enum SDWebImageViewSizing: Sendable, Equatable {
    /// The image as it comes (SDWebImage's behaviour; the default).
    case original
    /// Decoded no larger than the view: its ``SDWebImageView/sd_viewSize``
    /// times ``SDWebImageView/sd_scaleFactor`` becomes the load's
    /// `.imageThumbnailPixelSize` (and so part of its cache key) and the
    /// scale factor its `.imageScaleFactor`; a context that gives either
    /// keeps its own. A view without a size yet loads the original. When
    /// the view grows past `reloadAbove` times the size it loaded at (either
    /// side), ``SDWebImageView/sd_viewSizeDidChange()`` loads again at the
    /// new size, the image on screen staying until the new one replaces it.
    /// To do so the view keeps such a load's completion and progress blocks
    /// until its next `sd_setImage` (or its end): capture the view weakly in them.
    case fitView(reloadAbove: Double = 1.25)
}

/// What `UIView+WebCache` keeps on the view: the loads by operation key,
/// the URL, the progress, the transition and the animation playing. Owned
/// by the view (``SDWebImageView/sd_webImageState``); its end cancels the
/// view's loads and stops its animation.
public final class SDWebImageViewState: Sendable {
    private struct State {
        var operations: [String: any SDWebImageOperation] = [:]
        var pending: [String: ViewLoadResult] = [:]  // each key's load not finished yet
        var generations: [String: UInt64] = [:]
        var nextGeneration: UInt64 = 0
        var _imageURL: URL?
        var _latestKey: String?
        var _transition: SDWebImageTransition?
        var _player: SDAnimatedImagePlayer?
        var shown: UInt64 = 0  // the generation whose image (or frames) the view shows
        var _sizing: SDWebImageViewSizing = .original
        var _lastLoad: ViewLoadRecord?  // what the latest sd_setImage asked for, to load again when the view grows
        var _shownImage: SDImage?       // what the latest result put on the view
        var _indicator: (any SDWebImageIndicator)?
        var loadStates: [String: SDWebImageLoadState] = [:]
    }
    private let state = Locked(State())

    /// The progress of the current load (SDWebImage's `sd_imageProgress`).
    public let imageProgress = SDWebImageProgress()

    /// An empty state.
    public init() {}

    deinit {
        let (ops, player) = state.withLock { s in (Array(s.operations.values), s._player) }
        for op in ops { op.cancel() }
        player?.stopPlaying()
    }

    private func locked<T>(_ body: (inout State) -> T) -> T { state.withLock(body) }

    /// The URL of the latest `sd_setImage` (also while it loads).
    public var imageURL: URL? { locked { s in s._imageURL } }
    /// The operation key of the latest `sd_setImage`.
    public var latestOperationKey: String? { locked { s in s._latestKey } }
    /// The transition for images that come from the network (or any, with `.forceTransition`).
    public var imageTransition: SDWebImageTransition? {
        get { locked { s in s._transition } }
        set { locked { s in s._transition = newValue } }
    }
    /// The player of the animated image on the view, if one plays.
    public var animationPlayer: SDAnimatedImagePlayer? { locked { s in s._player } }
    /// How loads on the view are sized (default `.original`, SDWebImage's).
    public var imageSizing: SDWebImageViewSizing {
        get { locked { s in s._sizing } }
        set { locked { s in s._sizing = newValue } }
    }

    /// The load state under `key` (SDWebImage's `sd_imageLoadStateForKey:`).
    public func loadState(forKey key: String) -> SDWebImageLoadState? { locked { s in s.loadStates[key] } }
    func setLoadState(_ new: SDWebImageLoadState?, forKey key: String) { locked { s in s.loadStates[key] = new } }

    var indicator: (any SDWebImageIndicator)? {
        get { locked { s in s._indicator } }
        set { locked { s in s._indicator = newValue } }
    }

    var lastLoad: ViewLoadRecord? {
        get { locked { s in s._lastLoad } }
        set { locked { s in s._lastLoad = newValue } }
    }
    var shownImage: SDImage? {
        get { locked { s in s._shownImage } }
        set { locked { s in s._shownImage = newValue } }
    }

    // MARK: operations (UIView+WebCacheOperation)

    func operation(forKey key: String) -> (any SDWebImageOperation)? { locked { s in s.operations[key] } }

    func setOperation(_ op: (any SDWebImageOperation)?, forKey key: String) {
        locked { s in s.operations[key] = op }
    }

    /// Remove the operation of `key`, returning it (to cancel outside the lock).
    func removeOperation(forKey key: String) -> (any SDWebImageOperation)? {
        locked { s in s.operations.removeValue(forKey: key) }
    }

    /// Remove `op` under `key` only if it is still the one stored (a finished
    /// older load must not drop the newer one's).
    func removeOperation(_ op: any SDWebImageOperation, forKey key: String) {
        locked { s in
            if let cur = s.operations[key], cur === op { s.operations.removeValue(forKey: key) }
        }
    }

    /// The load under `key` that has not finished: a cancel by key answers it at once.
    func setPending(_ result: ViewLoadResult?, forKey key: String) { locked { s in s.pending[key] = result } }

    /// Forget the pending load of `key` if it is load `generation`'s; returns what was taken.
    func takePending(forKey key: String, generation: UInt64? = nil) -> ViewLoadResult? {
        locked { s in
            guard let p = s.pending[key], generation == nil || p.generation == generation else { return nil }
            s.pending[key] = nil
            return p
        }
    }

    // MARK: generations: which load may still touch the view

    /// A new load on `key`: its generation, the URL and key recorded.
    func begin(key: String, url: URL?) -> UInt64 {
        locked { s in
            s.nextGeneration += 1
            s.generations[key] = s.nextGeneration
            s._imageURL = url
            s._latestKey = key
            return s.nextGeneration
        }
    }

    func isCurrent(_ generation: UInt64, key: String) -> Bool { locked { s in s.generations[key] == generation } }

    /// The view now shows what load `generation` set; an animation of an
    /// earlier one stops. Returns the player that was replaced.
    func show(_ generation: UInt64, player: SDAnimatedImagePlayer?) -> SDAnimatedImagePlayer? {
        locked { s in
            s.shown = generation
            let old = s._player
            s._player = player
            return old === player ? nil : old
        }
    }

    func isShown(_ generation: UInt64) -> Bool { locked { s in s.shown == generation } }
}

/// Where a view's load under one operation key is (SDWebImage's
/// `SDWebImageLoadState`): its URL, the view's progress, and once it ended,
/// whether it failed and how.
public struct SDWebImageLoadState: Sendable {
    /// The URL asked for.
    public let url: URL
    /// The view's byte progress (``SDWebImageView/sd_imageProgress``).
    public let progress: SDWebImageProgress
    /// The load ended (an image, a failure or a cancel).
    public internal(set) var isFinished = false
    /// Why it failed (`.cancelled` when cancelled); nil while it runs or when it succeeded.
    public internal(set) var error: SDWebImageError?
    let generation: UInt64  // the load it describes
}

/// The bytes of a view's current load, SDWebImage's `NSProgress` with the
/// same property names; thread-safe (Foundation's `Progress` on Linux is
/// not, and KVO does not exist: `onChange` is the observer).
public final class SDWebImageProgress: Sendable {
    private struct State {
        var total: Int64 = 0
        var completed: Int64 = 0
        var handler: (@Sendable (_ completed: Int64, _ total: Int64) -> Void)?
    }
    private let state = Locked(State())

    /// Nothing loaded yet.
    public init() {}

    /// The expected bytes; 0 while unknown (1 once a load of unknown size finished).
    public var totalUnitCount: Int64 { state.withLock { $0.total } }
    /// The bytes so far (equal to `totalUnitCount` once the load finished).
    public var completedUnitCount: Int64 { state.withLock { $0.completed } }
    /// `completedUnitCount / totalUnitCount`, 0 while the total is unknown.
    public var fractionCompleted: Double {
        state.withLock { s in s.total > 0 ? min(1, Double(s.completed) / Double(s.total)) : 0 }
    }
    /// Called after every change, on the thread that made it (a background
    /// queue while bytes arrive, the view's queue at the start and the end).
    public var onChange: (@Sendable (_ completed: Int64, _ total: Int64) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    func update(completed c: Int64, total t: Int64) {
        let h = state.withLock { s in
            s.completed = max(0, c)
            s.total = max(0, t)
            return s.handler
        }
        h?(max(0, c), max(0, t))
    }

    /// The load finished: complete, whatever was known of its size.
    func finish() {
        let (c, t, h) = state.withLock { s in
            if s.total <= 0 { s.total = 1 }
            s.completed = s.total
            return (s.completed, s.total, s.handler)
        }
        h?(c, t)
    }
}

extension SDWebImageOptions {
    /// UI: show the placeholder only when the load fails or is cancelled, not while it runs.
    public static let delayPlaceholder = Self(rawValue: 1 << 8)
    /// UI: do not set the image on the view; the completion block gets it.
    public static let avoidAutoSetImage = Self(rawValue: 1 << 10)
    /// UI: run the view's transition for images from the caches too.
    public static let forceTransition = Self(rawValue: 1 << 17)
    /// UI: a new load on the view does not cancel the previous one with the
    /// same operation key (both complete; only the newest sets the view).
    public static let avoidAutoCancelImage = Self(rawValue: 1 << 24)
    /// UI: call the completion block after the transition ended, not when it starts.
    public static let waitTransition = Self(rawValue: 1 << 25)
}

extension SDWebImageContextOption {
    /// `String`: the view's operation key for this load (default: the view's
    /// type name). Loads with different keys on one view do not cancel each
    /// other (a button's image and its background image, say).
    public static let setImageOperationKey: Self = "setImageOperationKey"
    /// `SDWebImageManager`: load through this manager instead of `.shared`.
    public static let customManager: Self = "customManager"
    /// `SDImage`: shown when the load fails (Kingfisher's `.onFailureImage`,
    /// Coil's and Glide's `error`), in place of the placeholder; not when it
    /// is cancelled. Without it the placeholder stays, as in SDWebImage.
    public static let failureImage: Self = "failureImage"
}

/// `(image, error, cacheType, imageURL)`: the completion of `sd_setImage`,
/// on the view's queue.
public typealias SDExternalCompletionBlock = @Sendable (_ image: SDImage?, _ error: (any Error)?,
                                                         _ cacheType: SDImageCacheType, _ imageURL: URL?) -> Void

/// How `sd_internalSetImage` puts an image on the view instead of
/// ``SDWebImageView/sd_display(_:)``: `(image, data, cacheType, imageURL)`,
/// on the view's queue.
public typealias SDSetImageBlock = @Sendable (_ image: SDImage?, _ data: Data?, _ cacheType: SDImageCacheType,
                                              _ imageURL: URL?) -> Void
