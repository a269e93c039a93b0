import Foundation
import SDDownloader
import SDSync
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Values by URL, bounded in bytes, the least recently used out first, none
/// over `largest` bytes (one value must not push out all the others): what
/// `LockedBoundedStore` keeps behind its lock.
struct BoundedStore<Value: Sendable>: Sendable {
    private var entries: [URL: (value: Value, tick: UInt64)] = [:]
    private var tick: UInt64 = 0
    private var bytes = 0
    let capacity: Int
    let largest: Int
    let size: @Sendable (Value) -> Int

    init(capacity: Int, largest: Int, size: @escaping @Sendable (Value) -> Int) {
        self.capacity = capacity
        self.largest = largest
        self.size = size
    }

    /// The value, now the most recently used.
    mutating func get(_ url: URL) -> Value? {
        guard let e = entries[url] else { return nil }
        tick += 1
        entries[url] = (e.value, tick)
        return e.value
    }

    /// The value, no longer kept.
    mutating func remove(_ url: URL) -> Value? {
        guard let e = entries.removeValue(forKey: url) else { return nil }
        bytes -= size(e.value)
        return e.value
    }

    /// Keep `value` (replacing the URL's), then drop the oldest past the
    /// capacity; a value over `largest` is not kept.
    mutating func put(_ url: URL, _ value: Value) {
        guard size(value) <= largest else { return }
        _ = remove(url)
        tick += 1
        entries[url] = (value, tick)
        bytes += size(value)
        while bytes > capacity, let oldest = entries.min(by: { $0.value.tick < $1.value.tick }) {
            entries.removeValue(forKey: oldest.key)
            bytes -= size(oldest.value.value)
        }
    }
}

/// A `BoundedStore` behind its own lock.
final class LockedBoundedStore<Value: Sendable>: Sendable {
    private let store: Locked<BoundedStore<Value>>

    init(capacity: Int, largest: Int, size: @escaping @Sendable (Value) -> Int) {
        store = Locked(BoundedStore(capacity: capacity, largest: largest, size: size))
    }

    /// The value, now the most recently used.
    func get(_ url: URL) -> Value? { store.withLock { $0.get(url) } }
    /// The value, no longer kept.
    func take(_ url: URL) -> Value? { store.withLock { $0.remove(url) } }
    /// Keep `value` unless it is over `largest` bytes.
    func put(_ url: URL, _ value: Value) { store.withLock { $0.put(url, value) } }
}

/// The downloader's small HTTP cache for `.useHTTPCache`: the last bytes of a
/// URL with their validators (ETag, Last-Modified), least recently used out
/// first, bounded in bytes (an entry at most a quarter of them). A 304 then
/// gives the bytes back without a body.
final class HTTPValidatorCache: Sendable {
    struct Entry: Sendable {
        /// The one validator type (the manager's `.refreshCached` keeps the same).
        let validators: SDWebImageHTTPValidators
        let data: Data
        var etag: String? { validators.etag }
        var lastModified: String? { validators.lastModified }
    }

    private let store: LockedBoundedStore<Entry>

    init(capacity: Int) { store = LockedBoundedStore(capacity: capacity, largest: capacity / 4) { $0.data.count } }

    func entry(for url: URL) -> Entry? { store.get(url) }

    func store(url: URL, data: Data, response: HTTPURLResponse) {
        let validators = SDWebImageHTTPValidators(response: response)
        let noStore = (response.value(forHTTPHeaderField: "Cache-Control") ?? "").lowercased().contains("no-store")
        guard validators.canRevalidate, !noStore else { return }
        store.put(url, Entry(validators: validators, data: data))
    }
}

/// The starts of downloads that broke part-way (Nuke keeps the same): the
/// next request for the URL asks only for the rest (Range + If-Range), so a
/// retry after a dropped connection does not fetch the bytes again. Bounded
/// in bytes (an entry at most half of them), oldest out first; an entry is
/// used once (`take`).
typealias ResumableDataStore = LockedBoundedStore<ResumableData>

extension LockedBoundedStore where Value == ResumableData {
    convenience init(capacity: Int) { self.init(capacity: capacity, largest: capacity / 2) { $0.data.count } }
}
