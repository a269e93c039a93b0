import Dispatch
import Foundation
import SDSync

/// A weak reference to a view that can cross queues (the view itself is
/// only touched on its queue).
// @unchecked: one weak reference (loaded and stored atomically by the runtime); the view itself is only touched on its queue.
final class WeakView: @unchecked Sendable {
    weak var view: (any SDWebImageView)?
    init(_ view: any SDWebImageView) { self.view = view }
}

/// One load's operation, stored on the view until the load finishes: the
/// store and the removal are ordered by this lock, so a load that ended
/// before its start call returned (a memory hit) leaves nothing behind.
final class ViewLoadToken: Sendable {
    private struct State {
        var op: SDWebImageCombinedOperation?
        var finished = false
        var answered = false  // the final result went out (a cancel by key answers at once)
        var byKey = false     // cancelled by key: its answer counts as current
    }
    private let state = Locked(State())

    /// Cancelled by key (before the operation is): whichever answer comes
    /// first shows the delayed placeholder, though a newer load began.
    var cancelledByKey: Bool {
        get { state.withLock { $0.byKey } }
        set { state.withLock { $0.byKey = newValue } }
    }

    /// Whether a result may still go out; the first final one closes the load.
    func deliverable(finished final: Bool) -> Bool {
        state.withLock { s in
            if s.answered { return false }
            if final { s.answered = true }
            return true
        }
    }

    func started(_ op: SDWebImageCombinedOperation, state viewState: SDWebImageViewState, key: String) {
        state.withLock { s in
            guard !s.finished else { return }
            s.op = op
            viewState.setOperation(op, forKey: key)
        }
    }

    func finish(state viewState: SDWebImageViewState, key: String) {
        state.withLock { s in
            s.finished = true
            if let op = s.op { viewState.removeOperation(op, forKey: key) }
            s.op = nil
        }
    }
}

extension SDWebImageView {
    /// The URL of the latest `sd_setImage` on the view.
    public var sd_imageURL: URL? { sd_webImageState.imageURL }
    /// The operation key of the latest `sd_setImage` on the view.
    public var sd_latestOperationKey: String? { sd_webImageState.latestOperationKey }
    /// The state of the latest load on the view (SDWebImage's `sd_imageLoadState`).
    public var sd_imageLoadState: SDWebImageLoadState? {
        sd_imageLoadState(forKey: sd_latestOperationKey)
    }
    /// The state of the load under `key` (SDWebImage's `sd_imageLoadStateForKey:`).
    public func sd_imageLoadState(forKey key: String?) -> SDWebImageLoadState? {
        key.flatMap { sd_webImageState.loadState(forKey: $0) }
    }
    /// The progress of the current load (bytes; SDWebImage's `sd_imageProgress`).
    public var sd_imageProgress: SDWebImageProgress { sd_webImageState.imageProgress }
    /// The transition for images from the network and from an asynchronous
    /// disk query (SDWebImage's rule: not memory hits, not disk hits with
    /// `.queryMemoryDataSync`/`.queryDiskDataSync`; always with
    /// `.forceTransition`); nil: none.
    public var sd_imageTransition: SDWebImageTransition? {
        get { sd_webImageState.imageTransition }
        set { sd_webImageState.imageTransition = newValue }
    }

    /// What the view shows while it loads (SDWebImage's `sd_imageIndicator`):
    /// started when a load with a URL begins, given the fraction of bytes,
    /// stopped when the load ends. A built-in one
    /// (``SDWebImageActivityIndicator``, ``SDWebImageProgressIndicator``)
    /// draws into ``sd_displayIndicator(_:)``. Set it on ``sd_viewQueue``.
    public var sd_imageIndicator: (any SDWebImageIndicator)? {
        get { sd_webImageState.indicator }
        set {
            let state = sd_webImageState
            if let old = state.indicator {
                old.stopAnimatingIndicator()
                (old as? any DrawnIndicator)?.core.draw = nil
            }
            if let drawn = newValue as? any DrawnIndicator {
                let weakView = WeakView(self)
                let queue = sd_viewQueue
                drawn.core.draw = { overlay in queue.async { weakView.view?.sd_displayIndicator(overlay) } }
            }
            state.indicator = newValue
        }
    }

    /// Load `url` through the manager and show it on the view (SDWebImage's
    /// `sd_setImage(with:placeholderImage:options:context:progress:completed:)`
    /// and its shorter forms): the view's previous load with the same
    /// operation key is cancelled, the placeholder shows at once (nil clears
    /// the view; with `.delayPlaceholder` only when the load fails), previews
    /// show as they arrive with `.progressiveLoad`, the image (or its
    /// animation, or the view's transition to it) when it comes. `completed`
    /// runs on the view's queue once the load finished.
    public func sd_setImage(with url: URL?, placeholderImage: SDImage? = nil, options: SDWebImageOptions = [],
                            context: SDWebImageContext? = nil, progress: SDImageLoaderProgressBlock? = nil,
                            completed: SDExternalCompletionBlock? = nil) {
        sd_internalSetImage(with: url, placeholderImage: placeholderImage, options: options, context: context,
                            setImageBlock: nil, progress: progress) { image, _, error, cacheType, finished, url in
            if finished || options.contains(.avoidAutoSetImage) { completed?(image, error, cacheType, url) }
        }
    }

    /// The core of `sd_setImage` (SDWebImage's `sd_internalSetImageWithURL`):
    /// `setImageBlock` puts images on the view instead of ``sd_display(_:)``
    /// (then animations are not played for you); `completed` also gets the
    /// data and the previews (`finished == false`) and runs on the view's
    /// queue. Returns the load (nil when there was nothing to load).
    @discardableResult
    public func sd_internalSetImage(with url: URL?, placeholderImage: SDImage?, options: SDWebImageOptions,
                                    context: SDWebImageContext?, setImageBlock: SDSetImageBlock?,
                                    progress: SDImageLoaderProgressBlock?,
                                    completed: SDInternalCompletionBlock?) -> SDWebImageCombinedOperation? {
        let state = sd_webImageState
        let key = (context?[.setImageOperationKey] as? String) ?? String(describing: type(of: self))
        let failureImage = context?[.failureImage] as? SDImage
        // .fitView: the view's pixel size is the thumbnail box, its scale the image's
        var sized = context ?? [:]
        var box: CGSize?
        if case .fitView = state.imageSizing, sized[.imageThumbnailPixelSize] == nil, let size = sd_viewSize,
           size.width > 0, size.height > 0 {
            let scale = sd_scaleFactor > 0 ? sd_scaleFactor : 1
            let b = CGSize(width: (size.width * CGFloat(scale)).rounded(.up), height: (size.height * CGFloat(scale)).rounded(.up))
            sized[.imageThumbnailPixelSize] = b
            if sized[.imageScaleFactor] == nil { sized[.imageScaleFactor] = scale }
            box = b
        }
        // kept only for a load .fitView sized (the one sd_viewSizeDidChange may repeat): the
        // record holds the caller's blocks until the view's next sd_setImage or its end
        state.lastLoad = url.flatMap { url in
            box.map { ViewLoadRecord(url: url, placeholder: placeholderImage, options: options, context: context,
                                     setImageBlock: setImageBlock, progress: progress, completed: completed, box: $0) }
        }
        // the previous load under the key is answered (cancelled) now, before this one's first step
        if !options.contains(.avoidAutoCancelImage) { sd_cancelImageLoadOperation(withKey: key) }
        let generation = state.begin(key: key, url: url)
        let queue = sd_viewQueue
        let weakView = WeakView(self)
        let transition = state.imageTransition
        let placeholder = placeholderImage

        if !options.contains(.delayPlaceholder) {
            queue.async {
                guard let view = weakView.view, view.sd_webImageState.isCurrent(generation, key: key) else { return }
                view.sd_show(placeholder, data: nil, cacheType: .none, url: nil, generation: generation,
                             transition: nil, setImageBlock: setImageBlock, then: nil)
            }
        }
        guard let url, !url.absoluteString.isEmpty else {
            queue.async {
                guard let view = weakView.view else { return }
                if options.contains(.delayPlaceholder) || failureImage != nil,
                   view.sd_webImageState.isCurrent(generation, key: key) {
                    view.sd_show(failureImage ?? placeholder, data: nil, cacheType: .none, url: nil, generation: generation,
                                 transition: nil, setImageBlock: setImageBlock, then: nil)
                }
                completed?(nil, nil, SDWebImageError(.invalidURL, "the image URL is nil or empty"), .none, true, url)
            }
            return nil
        }

        state.imageProgress.update(completed: 0, total: 0)
        state.setLoadState(SDWebImageLoadState(url: url, progress: state.imageProgress, generation: generation), forKey: key)
        let indicator = state.indicator
        indicator?.startAnimatingIndicator()
        let manager = (context?[.customManager] as? SDWebImageManager) ?? .shared
        var ctx = sized
        if ctx[.callbackQueue] == nil { ctx[.callbackQueue] = queue }  // results land on the view's queue
        // as SDWebImage passes it down: the view's operation key, not the manager itself
        ctx[.setImageOperationKey] = key
        ctx[.customManager] = nil
        let token = ViewLoadToken()
        let progressBlock: SDImageLoaderProgressBlock = { [weak state] received, expected, imageURL in
            if let state, state.isCurrent(generation, key: key) {  // weak: the view's end must end its state
                state.imageProgress.update(completed: Int64(received), total: Int64(expected))
                if let indicator, expected > 0 {
                    let fraction = min(1, Double(received) / Double(expected))
                    queue.async {
                        if state.isCurrent(generation, key: key) { indicator.updateIndicatorProgress(fraction) }
                    }
                }
            }
            progress?(received, expected, imageURL)
        }
        let result = ViewLoadResult(view: weakView, queue: queue, key: key, generation: generation, url: url, options: options,
                                    placeholder: placeholder, failureImage: failureImage, transition: transition, token: token,
                                    setImageBlock: setImageBlock, completed: completed)
        state.setPending(result, forKey: key)
        let op = manager.loadImage(with: url, options: options, context: ctx, progress: progressBlock) {
            image, data, error, cacheType, finished, imageURL in
            queue.async { result.deliver(image, data, error, cacheType, finished, imageURL) }
        }
        if let op { token.started(op, state: state, key: key) }
        return op
    }

    /// Put `image` on the view for load `generation` (on the view's queue):
    /// the animation of whatever was shown stops; an animated image plays;
    /// `transition` fades it in frame by frame; `then` runs when it is on.
    /// A progressive download's animation grows in the player already
    /// playing it (SDWebImage's progressive `SDAnimatedImageView`), and its
    /// final image plays on from the frame on screen.
    func sd_show(_ image: SDImage?, data: Data?, cacheType: SDImageCacheType, url: URL?, generation: UInt64,
                 transition: SDWebImageTransition?, setImageBlock: SDSetImageBlock?, then: (@Sendable () -> Void)?) {
        let state = sd_webImageState
        state.shownImage = image
        let previous = setImageBlock == nil && state.isShown(generation) ? state.animationPlayer : nil
        if let previous, let image, previous.update(with: image) {
            then?()  // the same animation, more of it: the player shows it
            return
        }
        let player: SDAnimatedImagePlayer? = setImageBlock == nil && sd_playsAnimatedImages && image?.sd_isAnimated == true
            ? image.flatMap { SDAnimatedImagePlayer(image: $0, clock: sd_makeAnimationClock()) } : nil
        // the whole animation after its progressive preview: on from the frame shown
        var onScreen: SDImage?
        if let player, let previous, (previous.provider as? SDImage)?.isIncremental == true,
           previous.currentFrameIndex < player.totalFrameCount, let frame = previous.currentFrame {
            player.seekToFrame(at: previous.currentFrameIndex, loopCount: previous.currentLoopCount)
            onScreen = frame
        }
        state.show(generation, player: player)?.stopPlaying()
        if let setImageBlock {
            setImageBlock(image, data, cacheType, url)
            then?()
            return
        }
        if let onScreen {
            sd_display(onScreen)
            sd_play(player, generation: generation)
            then?()
            return
        }
        guard let transition, image != nil else {
            sd_display(image)
            sd_play(player, generation: generation)
            then?()
            return
        }
        sd_display(image, alpha: 0)
        let alphas = transition.alphas
        let step = transition.duration / Double(alphas.count)
        let weakView = WeakView(self)
        let queue = sd_viewQueue
        let boxed = player.map(PlayerBox.init)
        @Sendable func frame(_ i: Int) {
            guard let view = weakView.view, view.sd_webImageState.isShown(generation) else {
                then?()  // a newer image replaced it: the transition is over
                return
            }
            view.sd_display(image, alpha: alphas[i])
            if i + 1 < alphas.count {
                queue.asyncAfter(deadline: .now() + step) { frame(i + 1) }
            } else {
                view.sd_play(boxed?.player, generation: generation)
                then?()
            }
        }
        queue.asyncAfter(deadline: .now() + step) { frame(0) }
    }

    /// Play `player`'s frames on the view while load `generation` is shown.
    func sd_play(_ player: SDAnimatedImagePlayer?, generation: UInt64) {
        guard let player else { return }
        let weakView = WeakView(self)
        let queue = sd_viewQueue
        let id = ObjectIdentifier(player)  // the handler must not keep its player alive
        player.animationFrameHandler = { _, frame in
            queue.async {
                guard let view = weakView.view, view.sd_webImageState.isShown(generation),
                      let playing = view.sd_webImageState.animationPlayer, ObjectIdentifier(playing) == id else { return }
                view.sd_display(frame)
            }
        }
        player.startPlaying()
    }

    /// Tell the view's loads that ``sd_viewSize`` (or ``sd_scaleFactor``)
    /// changed, on ``sd_viewQueue``: with ``SDWebImageViewState/imageSizing``
    /// `.fitView(reloadAbove:)`, a view now larger than its latest load by
    /// more than that factor on either side loads the same URL again at the
    /// new size (same options, context and completion), the image on screen
    /// as its placeholder; smaller, or within the factor, nothing happens.
    /// Returns whether a load started.
    @discardableResult
    public func sd_viewSizeDidChange() -> Bool {
        let state = sd_webImageState
        guard case .fitView(let above) = state.imageSizing, let last = state.lastLoad, let box = last.box,
              let size = sd_viewSize else { return false }
        let scale = CGFloat(sd_scaleFactor > 0 ? sd_scaleFactor : 1)
        guard size.width * scale > box.width * CGFloat(above) || size.height * scale > box.height * CGFloat(above) else {
            return false
        }
        sd_internalSetImage(with: last.url, placeholderImage: state.shownImage ?? last.placeholder, options: last.options,
                            context: last.context, setImageBlock: last.setImageBlock, progress: last.progress,
                            completed: last.completed)
        return true
    }

    // MARK: operations (SDWebImage's UIView+WebCacheOperation)

    /// The load running under `key`, if any.
    public func sd_imageLoadOperation(forKey key: String?) -> (any SDWebImageOperation)? {
        key.flatMap { sd_webImageState.operation(forKey: $0) }
    }

    /// Keep `operation` under `key` (replacing what was there, without
    /// cancelling it); nil removes the key.
    public func sd_setImageLoadOperation(_ operation: (any SDWebImageOperation)?, forKey key: String?) {
        guard let key else { return }
        sd_webImageState.setOperation(operation, forKey: key)
    }

    /// Cancel the load under `key` and forget it. Its completion gets
    /// `cancelled` (with `.delayPlaceholder` the placeholder shows first) on
    /// ``sd_viewQueue`` — in this call when made there — before any step of a
    /// load started after this call, as SDWebImage answers a cancelled load
    /// synchronously.
    public func sd_cancelImageLoadOperation(withKey key: String?) {
        guard let key else { return }
        let state = sd_webImageState
        let pending = state.takePending(forKey: key)
        pending?.token.cancelledByKey = true
        state.removeOperation(forKey: key)?.cancel()
        pending?.deliverCancelled()  // the downloader may answer later, from its own queue
    }

    /// Forget the load under `key` without cancelling it.
    public func sd_removeImageLoadOperation(withKey key: String?) {
        guard let key else { return }
        _ = sd_webImageState.removeOperation(forKey: key)
    }

    /// Cancel the latest load on the view (its completion gets `cancelled`;
    /// with `.delayPlaceholder` the placeholder shows).
    public func sd_cancelCurrentImageLoad() {
        sd_cancelImageLoadOperation(withKey: sd_latestOperationKey ?? String(describing: type(of: self)))
    }
}

/// What one load does with a result, on the view's queue.
struct ViewLoadResult: Sendable {
    let view: WeakView
    let queue: SDCallbackQueue
    let key: String
    let generation: UInt64
    let url: URL
    let options: SDWebImageOptions
    let placeholder: SDImage?
    let failureImage: SDImage?
    let transition: SDWebImageTransition?
    let token: ViewLoadToken
    let setImageBlock: SDSetImageBlock?
    let completed: SDInternalCompletionBlock?

    /// The answer of a load cancelled by key counts as current (a newer load
    /// on the key began after the cancel).
    func deliver(_ image: SDImage?, _ data: Data?, _ error: (any Error)?, _ cacheType: SDImageCacheType,
                 _ finished: Bool, _ imageURL: URL?) {
        guard let view = view.view else { return }  // gone: its loads were cancelled
        guard token.deliverable(finished: finished) else { return }  // answered already (cancelled by key)
        let state = view.sd_webImageState
        let current = (image == nil && token.cancelledByKey) || state.isCurrent(generation, key: key)
        if finished {
            token.finish(state: state, key: key)
            _ = state.takePending(forKey: key, generation: generation)
            if current {
                state.imageProgress.finish()
                state.indicator?.stopAnimatingIndicator()
                if var s = state.loadState(forKey: key), s.generation == generation {
                    s.isFinished = true
                    s.error = image == nil ? (error as? SDWebImageError ?? SDWebImageError(.badImageData, "\(error.map { "\($0)" } ?? "no image")")) : nil
                    state.setLoadState(s, forKey: key)
                }
            }
        }
        // a failure (not a cancel) shows the failure image when there is one
        let failed = finished && image == nil && error != nil && (error as? SDWebImageError)?.code != .cancelled
        let onFailure = failed ? failureImage : nil
        let notSet = !current || (image != nil && options.contains(.avoidAutoSetImage))
            || (image == nil && onFailure == nil && !options.contains(.delayPlaceholder))
        let completed = self.completed
        if notSet {
            completed?(image, data, error, cacheType, finished, imageURL)
            return
        }
        // SDWebImage's rule: network images fade, and images from an asynchronous
        // disk query; memory hits and .queryMemoryDataSync/.queryDiskDataSync
        // disk hits do not (all do with .forceTransition)
        let fades = options.contains(.forceTransition) || cacheType == .none
            || (cacheType == .disk && options.isDisjoint(with: [.queryMemoryDataSync, .queryDiskDataSync]))
        let fade = finished && image != nil && fades ? transition : nil
        let wait = fade != nil && options.contains(.waitTransition)
        var then: (@Sendable () -> Void)?
        if wait { then = { @Sendable in completed?(image, data, error, cacheType, finished, imageURL) } }
        view.sd_show(image ?? onFailure ?? placeholder, data: data, cacheType: cacheType, url: imageURL, generation: generation,
                     transition: fade, setImageBlock: setImageBlock, then: then)
        if !wait { completed?(image, data, error, cacheType, finished, imageURL) }
    }
}

extension ViewLoadResult {
    /// Cancelled by key: answered on the view's queue (at once when the caller
    /// is on it), ahead of whatever a newer load queues after this call.
    func deliverCancelled() {
        queue.async {
            deliver(nil, nil, SDWebImageError(.cancelled, "the load was cancelled"), .none, true, url)
        }
    }
}

/// What the latest `sd_setImage` on a view asked for: loaded again when a
/// `.fitView` view grows (`box`: the pixel size it was loaded at; nil when
/// the view had no size, or the context gave its own).
struct ViewLoadRecord: Sendable {  // only for .fitView loads: it keeps the caller's blocks
    let url: URL
    let placeholder: SDImage?
    let options: SDWebImageOptions
    let context: SDWebImageContext?
    let setImageBlock: SDSetImageBlock?
    let progress: SDImageLoaderProgressBlock?
    let completed: SDInternalCompletionBlock?
    let box: CGSize?
}

/// A player that crosses to the view's queue inside a transition.
final class PlayerBox: Sendable {
    let player: SDAnimatedImagePlayer
    init(_ player: SDAnimatedImagePlayer) { self.player = player }
}
