import Dispatch
import Foundation
import SDSync

/// Watches a PSI memory-pressure file and calls `handler` with the `some
/// avg10` percentage whenever it is at or above `threshold`, every
/// `interval` seconds (PSI's averages move every 2 s). Polling a few bytes of
/// procfs costs microseconds; PSI triggers would need privileges this
/// process may not have.
// @unchecked: the timer (not Sendable) is made in init and only cancelled; the rest is `let`.
package final class MemoryPressureMonitor: @unchecked Sendable {
    private let timer: DispatchSourceTimer
    private let done = Locked(0)

    /// Looks at the file completed so far (each with its handler call, if
    /// any): a test waits for one that began after it wrote the file,
    /// rather than for a time.
    package var polls: Int { done.withLock { $0 } }

    package init(file: String, threshold: Double, interval: TimeInterval,
                 handler: @escaping @Sendable (Double) -> Void) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
        let ms = max(10, Int(interval * 1000))
        timer.schedule(deadline: .now() + .milliseconds(ms), repeating: .milliseconds(ms), leeway: .milliseconds(ms / 10))
        let done = done
        timer.setEventHandler {
            defer { done.withLock { $0 += 1 } }
            guard let text = SystemMemory.read(file), let p = SystemMemory.pressure(fromPSI: text), p >= threshold
            else { return }
            handler(p)
        }
        timer.resume()
    }

    deinit { timer.cancel() }
}
