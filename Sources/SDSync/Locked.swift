import Foundation

/// A value behind a lock, for state several threads share: the one place the
/// Swift modules vouch for a lock-guarded variable with `@unchecked
/// Sendable`, so the types that hold one are checked by the compiler.
/// An `NSLock` (pthread), which ThreadSanitizer understands (Swift's
/// `Mutex` is a futex on Linux, which it does not).
// @unchecked: `lock` guards `value`, the only stored variable; `withLock` is the only way to it.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// `body` with the value, under the lock. `body` must not take this lock again.
    @discardableResult
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// The value now (a copy, read under the lock).
    package var current: Value { withLock { $0 } }

    /// Replace the value.
    package func set(_ newValue: Value) { withLock { $0 = newValue } }
}
