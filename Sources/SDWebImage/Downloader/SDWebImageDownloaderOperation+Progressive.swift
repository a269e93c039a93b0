import Foundation
import SDCoders
import SDDownloader

/// A download decoded in Swift (a coder of the user's is listed): the loop
/// hands each piece of the body over (copied, on the loop thread). The first
/// bytes are sniffed once: when no coder claims them the transfer stops (as
/// the C decoder refuses a body that is not an image, instead of reading it
/// to the size limit). With previews asked for, one progressive coder
/// instance per download (SDWebImage's test28) is fed all the data so far on
/// `work` (shared, not copied: `AppendOnlyBytes`), at most one pending update
/// at a time, and its image goes to the subscribers that asked. (A download
/// the C core decodes has its previews from the core: `AnimationSoFar`.)
// @unchecked: every stored `var` is read and written under `lock`; the coder is used on `work` only, one update at a time.
final class SwiftPreviews: @unchecked Sendable {
    /// Bytes enough for every coder's magic-number check.
    static let sniffBytes = 256
    private let lock = NSLock()
    private let data = AppendOnlyBytes()  // shared with the coder without a copy per update
    private var scheduled = false
    private var sniffed = false
    let previews: Bool
    private var coder: (any SDProgressiveImageCoder)?
    private var noCoder = false
    let options: SDImageLoaderDecodeOptions

    init(_ options: SDImageLoaderDecodeOptions, previews: Bool) {
        self.options = options
        self.previews = previews
    }

    /// Blocks the followed body was copied into (one per doubling).
    var bodyBlocks: Int { lock.lock(); defer { lock.unlock() }; return data.blocksMade }

    /// Loop thread: record; true when an update (a sniff or a preview) should be scheduled.
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if previews || data.count < Self.sniffBytes {
            data.append(previews ? bytes : UnsafeRawBufferPointer(rebasing: bytes.prefix(Self.sniffBytes - data.count)))
        }
        if scheduled || (!previews && (sniffed || data.count < Self.sniffBytes)) { return false }
        scheduled = true
        return true
    }

    /// `work`, once enough bytes are in: nil, or why no coder will decode them.
    func refusal() -> SDWebImageError? {
        lock.lock()
        if sniffed || data.count < Self.sniffBytes { lock.unlock(); return nil }
        sniffed = true
        let head = data.snapshot().prefix(Self.sniffBytes)
        lock.unlock()
        if options.coder != nil || options.codersManager.canDecode(from: head) { return nil }
        return SDImageCodersManager.noCoder(for: ImageFormat(data: head))
    }

    /// `work`: the coder's image for the data so far.
    func update() -> SDImage? {
        lock.lock()
        let now = data.snapshot()
        scheduled = false
        lock.unlock()
        guard previews else { return nil }
        if coder == nil && !noCoder {
            let o = options.coderOptions
            if let c = options.coder {
                if let p = c as? any SDProgressiveImageCoder { coder = type(of: p).init(incrementalWithOptions: o) }
            } else if let c = options.codersManager.asked.lazy.compactMap({ $0 as? any SDProgressiveImageCoder })
                        .first(where: { $0.canIncrementalDecode(from: now) }) {
                coder = type(of: c).init(incrementalWithOptions: o)
            }
            // undecided until the coders can tell (a few bytes in)
            if coder == nil && now.count >= 64 { noCoder = true }
        }
        guard let coder else { return nil }
        coder.updateIncrementalData(now, finished: false)
        return coder.incrementalDecodedImage(options: options.coderOptions)
    }
}

extension SDWebImageDownloaderOperation {
    /// The body observer for `swiftPreviews`.
    func observeBody(_ previews: SwiftPreviews) -> @Sendable (UnsafeRawBufferPointer) -> Void {
        { [weak self] bytes in
            guard previews.append(bytes), let self else { return }
            work.async { self.deliverPreview(previews) }
        }
    }

    private func deliverPreview(_ previews: SwiftPreviews) {
        lock.lock()
        let live = state == .executing
        let hs = handlers
        lock.unlock()
        guard live else { return }
        if let refused = previews.refusal() {
            lock.lock()
            if pendingError == nil { pendingError = refused }
            let t = task
            lock.unlock()
            t?.cancel()
            return
        }
        guard let image = previews.update() else { return }
        let preview = image.isIncremental ? image
            : SDImage(bitmap: image.bitmap, format: image.format, orientation: image.orientation, scale: image.scale,
                      isIncremental: true)
        for h in hs where h.options.progressive && h.options.decodesLike(previews.options) {
            guard let c = h.completed else { continue }
            h.queue.async { c(preview, nil, nil, false) }
        }
    }
}
