import CSDCore
import Dispatch
import Foundation
import SDCoders
import SDSync

/// Loop-thread handlers of one transfer (see `DataLoader.submit`).
package struct LoaderEvents: Sendable {
    package var response: (@Sendable (DownloadResponse) -> Void)?
    package var progress: (@Sendable (_ received: Int64, _ expected: Int64) -> Void)?
    package var preview: (@Sendable (LoaderPreview) -> Void)?
    package var completion: @Sendable (Result<DownloadResult, DownloadError>) -> Void

    package init(completion: @escaping @Sendable (Result<DownloadResult, DownloadError>) -> Void) {
        self.completion = completion
    }
}

/// What the decode sink made of the body so far.
package enum LoaderPreview: Sendable {
    /// The image so far (a progressive scan, the rows so far).
    case image(Bitmap)
    /// An animation's whole frame `index` (they come in order from 0, only
    /// with `DownloadRequest.animationFrameBytes`), shown `milliseconds`.
    case frame(Bitmap, index: Int, milliseconds: Int, loopCount: Int, format: ImageFormat)
}

/// Something that can be cancelled (a download task, a token).
package protocol Cancellable: AnyObject, Sendable {
    func cancel()
}

/// Bridges Swift task cancellation to a task that may not exist yet: a cancel
/// that comes first is applied when the task is set.
package final class CancelBox<T: Cancellable>: Sendable {
    private let state = Locked<(task: T?, cancelled: Bool)>((nil, false))

    package init() {}

    package func set(_ t: T?) {
        let c = state.withLock { s in s.task = t; return s.cancelled }
        if c { t?.cancel() }
    }

    package func cancel() {
        let t = state.withLock { s in s.cancelled = true; return s.task }
        t?.cancel()
    }

    package var value: T? { state.withLock { $0.task } }
}
