import CSDCore
import Synchronization

/// The C core keeps freed canvases and response bodies of 64 KiB and more in a
/// bounded, process-wide pool (`sd_bitmap_pool_limit`), so the next decode or
/// transfer of about that size finds its pages already mapped.
extension Bitmap {
    /// Bytes the pool holds idle right now.
    public static var poolBytes: Int { Int(sd_bitmap_pool_bytes()) }

    /// Frees every block the pool holds idle, keeping its limit: what a memory
    /// cache does under memory pressure after dropping its own images.
    /// Returns the bytes given back.
    @discardableResult
    public static func trimPool() -> Int {
        poolTrims.add(1, ordering: .relaxed)
        return Int(sd_bitmap_pool_trim())
    }

    /// How many times `trimPool` ran in this process (for tests).
    package static var poolTrimCount: Int { poolTrims.load(ordering: .relaxed) }
}

private let poolTrims = Atomic<Int>(0)
