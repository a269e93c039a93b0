import Foundation

/// The list behind SDWebImage's three managers (caches, loaders, coders):
/// objects in priority order, lowest first, shared between threads. The
/// last one added is asked first; identity (`===`) finds an entry.
package final class PriorityList<Element: Sendable>: Sendable {
    private let list: Locked<[Element]>

    package init(_ elements: [Element]) { list = Locked(elements) }

    /// Lowest priority first (a copy).
    package var all: [Element] {
        get { list.current }
        set { list.set(newValue) }
    }

    /// Add `element` with the highest priority; `moving`: where it was
    /// listed already, it leaves its old place (else it is listed twice).
    package func add(_ element: Element, moving: Bool = false) {
        list.withLock { l in
            if moving { l.removeAll { Self.same($0, element) } }
            l.append(element)
        }
    }

    /// Remove every entry that is `element` (by identity).
    package func remove(_ element: Element) {
        list.withLock { l in l.removeAll { Self.same($0, element) } }
    }

    private static func same(_ a: Element, _ b: Element) -> Bool { (a as AnyObject) === (b as AnyObject) }
}
