import Dispatch
import Foundation
import SDCache
import SDCoders
import SDSync

/// Key → weak image, for `shouldUseWeakMemoryCache`. Dead entries are swept
/// now and then on insert, so the table stays about as big as what is alive.
final class WeakImageTable: Sendable {
    private struct Box { weak var image: SDImage? }
    private struct State {
        var table: [String: Box] = [:]
        var sweepAt = 64
    }
    private let state = Locked(State())

    func set(_ image: SDImage, forKey key: String) {
        state.withLock { s in
            s.table[key] = Box(image: image)
            if s.table.count >= s.sweepAt {
                s.table = s.table.filter { $0.value.image != nil }
                s.sweepAt = max(64, s.table.count * 2)
            }
        }
    }

    func value(forKey key: String) -> SDImage? { state.withLock { $0.table[key]?.image } }

    func remove(forKey key: String) { state.withLock { $0.table[key] = nil } }
    func removeAll() { state.withLock { $0.table = [:] } }
}
