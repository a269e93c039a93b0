import Foundation
import SDDownloader
import SDSync
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Values by URL, bounded in bytes, the least recently used out first: what
/// the two stores below keep, each behind its own lock.
struct BoundedStore<Value: Sendable>: Sendable {
    private var entries: [URL: (value: Value, tick: UInt64)] = [:]
    private var tick: UInt64 = 0
    private var bytes = 0
    let capacity: Int
    let size: @Sendable (Value) -> Int

    init(capacity: Int, size: @escaping @Sendable (Value) -> Int) {
        self.capacity = capacity
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

    /// Keep `value` (replacing the URL's), then drop the oldest past the capacity.
    mutating func put(_ url: URL, _ value: Value) {
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

/// The downloader's small HTTP cache for `.useHTTPCache`: the last bytes of a
/// URL with their validators (ETag, Last-Modified), least recently used out
/// first, bounded in bytes. A 304 then gives the bytes back without a body.
final class HTTPValidatorCache: Sendable {
    struct Entry: Sendable {
        /// The one validator type (the manager's `.refreshCached` keeps the same).
        let validators: SDWebImageHTTPValidators
        let data: Data
        var etag: String? { validators.etag }
        var lastModified: String? { validators.lastModified }
    }

    private let store: Locked<BoundedStore<Entry>>
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        store = Locked(BoundedStore(capacity: capacity) { $0.data.count })
    }

    func entry(for url: URL) -> Entry? { store.withLock { $0.get(url) } }

    func store(url: URL, data: Data, response: HTTPURLResponse) {
        let validators = SDWebImageHTTPValidators(response: response)
        let noStore = (response.value(forHTTPHeaderField: "Cache-Control") ?? "").lowercased().contains("no-store")
        guard validators.canRevalidate, !noStore, data.count <= capacity / 4 else { return }
        store.withLock { $0.put(url, Entry(validators: validators, data: data)) }
    }
}

/// The starts of downloads that broke part-way (Nuke keeps the same): the
/// next request for the URL asks only for the rest (Range + If-Range), so a
/// retry after a dropped connection does not fetch the bytes again. Bounded
/// in bytes, oldest out first; an entry is used once.
final class ResumableDataStore: Sendable {
    private let store: Locked<BoundedStore<ResumableData>>
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        store = Locked(BoundedStore(capacity: capacity) { $0.data.count })
    }

    func take(_ url: URL) -> ResumableData? { store.withLock { $0.remove(url) } }

    func store(_ url: URL, _ data: ResumableData) {
        guard data.data.count <= capacity / 2 else { return }
        store.withLock { $0.put(url, data) }
    }
}
