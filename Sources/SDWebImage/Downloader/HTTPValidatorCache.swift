import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The downloader's small HTTP cache for `.useHTTPCache`: the last bytes of a
/// URL with their validators (ETag, Last-Modified), least recently used out
/// first, bounded in bytes. A 304 then gives the bytes back without a body.
final class HTTPValidatorCache: @unchecked Sendable {
    struct Entry {
        let etag: String?
        let lastModified: String?
        let data: Data
    }

    private let lock = NSLock()
    private var entries: [URL: (entry: Entry, tick: UInt64)] = [:]
    private var tick: UInt64 = 0
    private var bytes = 0
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func entry(for url: URL) -> Entry? {
        lock.lock()
        defer { lock.unlock() }
        guard let e = entries[url] else { return nil }
        tick += 1
        entries[url] = (e.entry, tick)
        return e.entry
    }

    func store(url: URL, data: Data, response: HTTPURLResponse) {
        let etag = response.value(forHTTPHeaderField: "ETag")
        let modified = response.value(forHTTPHeaderField: "Last-Modified")
        let noStore = (response.value(forHTTPHeaderField: "Cache-Control") ?? "").lowercased().contains("no-store")
        guard etag != nil || modified != nil, !noStore, data.count <= capacity / 4 else { return }
        lock.lock()
        defer { lock.unlock() }
        if let old = entries.removeValue(forKey: url) { bytes -= old.entry.data.count }
        tick += 1
        entries[url] = (Entry(etag: etag, lastModified: modified, data: data), tick)
        bytes += data.count
        while bytes > capacity, let oldest = entries.min(by: { $0.value.tick < $1.value.tick }) {
            entries.removeValue(forKey: oldest.key)
            bytes -= oldest.value.entry.data.count
        }
    }
}
