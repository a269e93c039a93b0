import Foundation

/// Bytes that only grow, looked at without copying: `snapshot()` is a `Data`
/// over the bytes so far, and later appends never touch it (they write past
/// its end, or into a new block once this one is full, the old block living
/// on while a snapshot holds it). Following a body this way costs O(body) in
/// copies however often it is looked at; a `Data` handed out and then
/// appended to copies the whole body every time (copy on write).
///
/// Not locked: the owner serialises `append`, `snapshot` and `removeAll`
/// (snapshots themselves may be read on any thread).
// @unchecked: not locked: the owner (SwiftPreviews, under its lock) serialises append, snapshot and removeAll; snapshots are immutable Data.
final class AppendOnlyBytes: @unchecked Sendable {
    /// A block and the one `Data` that owns it, made over all its capacity:
    /// snapshots are slices of that `Data`, so its storage is never uniquely
    /// referenced while a snapshot lives and a write to a snapshot copies
    /// first (a `Data(bytesNoCopy:)` per snapshot would be written in place).
    /// Appends write past every snapshot's end, outside `Data`.
    private struct Block {
        let base: UnsafeMutableRawPointer
        let owner: Data
        init(capacity: Int) {
            base = .allocate(byteCount: capacity, alignment: 16)
            owner = Data(bytesNoCopy: base, count: capacity, deallocator: .custom { p, _ in p.deallocate() })
        }
        var capacity: Int { owner.count }
    }

    private var block: Block?
    private(set) var count = 0
    /// Blocks allocated so far: the copies made, one per doubling.
    private(set) var blocksMade = 0

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let src = bytes.baseAddress, !bytes.isEmpty else { return }
        if count + bytes.count > block?.capacity ?? 0 {
            let grown = Block(capacity: max(count + bytes.count, 2 * (block?.capacity ?? 0), 64 << 10))
            if let old = block, count > 0 { grown.base.copyMemory(from: old.base, byteCount: count) }
            block = grown
            blocksMade += 1
        }
        (block!.base + count).copyMemory(from: src, byteCount: bytes.count)
        count += bytes.count
    }

    /// The bytes so far: a slice sharing the block.
    func snapshot() -> Data {
        guard let block, count > 0 else { return Data() }
        return block.owner.prefix(count)
    }
}
