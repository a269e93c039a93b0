import Foundation
import SDCoders
import SDDownloader

/// Previews from a progressive coder of the user's: the loop hands each piece
/// of the body over (copied, on the loop thread); one coder instance per
/// download (SDWebImage's test28) is fed all the data so far on `work`, at
/// most one pending update at a time, and its image goes to the subscribers
/// that asked for previews. The C core's own previews need none of this.
final class SwiftPreviews: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private var scheduled = false
    private var coder: (any SDProgressiveImageCoder)?
    private var noCoder = false
    let options: SDImageLoaderDecodeOptions

    init(_ options: SDImageLoaderDecodeOptions) { self.options = options }

    /// Loop thread: record; true when an update should be scheduled.
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        data.append(contentsOf: bytes)
        if scheduled { return false }
        scheduled = true
        return true
    }

    /// `work`: the coder's image for the data so far.
    func update() -> SDImage? {
        lock.lock()
        let now = data
        scheduled = false
        lock.unlock()
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
        guard live, let image = previews.update() else { return }
        let preview = image.isIncremental ? image
            : SDImage(bitmap: image.bitmap, format: image.format, orientation: image.orientation, scale: image.scale,
                      isIncremental: true)
        for h in hs where h.options.progressive && h.options.decodesLike(previews.options) {
            guard let c = h.completed else { continue }
            h.queue.async { c(preview, nil, nil, false) }
        }
    }
}
