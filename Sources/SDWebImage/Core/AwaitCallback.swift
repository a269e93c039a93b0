import Foundation
import SDSync

/// Await a callback-style call. The value also passes through a lock, so
/// ThreadSanitizer sees the hand-off from the thread that produced it to the
/// task that awaits it: it does not always see the Swift runtime's own (a
/// continuation resumed on a dispatch thread), and then reports the value's
/// memory — an image decoded on the cache's read queue — as a race.
package func awaitCallback<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) async -> T {
    let box = HandOff<T>()
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        start { value in
            box.put(value)
            c.resume()
        }
    }
    return box.take()
}

private final class HandOff<T: Sendable>: Sendable {
    private let value = Locked<T?>(nil)
    func put(_ v: T) { value.set(v) }
    func take() -> T { value.current! }
}
