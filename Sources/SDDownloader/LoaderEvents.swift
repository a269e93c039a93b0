import CSDCore
import Dispatch
import Foundation
import SDCoders

/// Loop-thread handlers of one transfer (see `DataLoader.submit`).
package struct LoaderEvents: Sendable {
    package var response: (@Sendable (DownloadResponse) -> Void)?
    package var progress: (@Sendable (_ received: Int64, _ expected: Int64) -> Void)?
    package var preview: (@Sendable (Bitmap) -> Void)?
    package var completion: @Sendable (Result<DownloadResult, DownloadError>) -> Void

    package init(completion: @escaping @Sendable (Result<DownloadResult, DownloadError>) -> Void) {
        self.completion = completion
    }
}

/// Something that can be cancelled (a download task, a token).
package protocol Cancellable: AnyObject, Sendable {
    func cancel()
}

/// Bridges Swift task cancellation to a task that may not exist yet: a cancel
/// that comes first is applied when the task is set.
package final class CancelBox<T: Cancellable>: @unchecked Sendable {
    private let lock = NSLock()
    private var task: T?
    private var cancelled = false

    package init() {}

    package func set(_ t: T?) {
        lock.lock()
        task = t
        let c = cancelled
        lock.unlock()
        if c { t?.cancel() }
    }

    package func cancel() {
        lock.lock()
        cancelled = true
        let t = task
        lock.unlock()
        t?.cancel()
    }

    package var value: T? { lock.lock(); defer { lock.unlock() }; return task }
}
