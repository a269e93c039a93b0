import Dispatch
import Foundation
import SDCache
import SDCoders

/// Key → weak image, for `shouldUseWeakMemoryCache`. Dead entries are swept
/// now and then on insert, so the table stays about as big as what is alive.
// @unchecked: `table` and `sweepAt` are under `lock`; a Box's weak image is loaded atomically by the runtime.
final class WeakImageTable: @unchecked Sendable {
    private final class Box { weak var image: SDImage?; init(_ i: SDImage) { image = i } }
    private let lock = NSLock()
    private var table: [String: Box] = [:]
    private var sweepAt = 64

    func set(_ image: SDImage, forKey key: String) {
        lock.lock()
        table[key] = Box(image)
        if table.count >= sweepAt {
            table = table.filter { $0.value.image != nil }
            sweepAt = max(64, table.count * 2)
        }
        lock.unlock()
    }

    func value(forKey key: String) -> SDImage? {
        lock.lock(); defer { lock.unlock() }
        return table[key]?.image
    }

    func remove(forKey key: String) { lock.lock(); table[key] = nil; lock.unlock() }
    func removeAll() { lock.lock(); table = [:]; lock.unlock() }
}
