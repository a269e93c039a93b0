import Foundation
import SDDownloader
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The downloader's small HTTP cache for `.useHTTPCache`: the last bytes of a
/// URL with their validators (ETag, Last-Modified), least recently used out
/// first, bounded in bytes. A 304 then gives the bytes back without a body.
final class HTTPValidatorCache: @unchecked Sendable {
    struct Entry {
        /// The one validator type (the manager's `.refreshCached` keeps the same).
        let validators: SDWebImageHTTPValidators
        let data: Data
        var etag: String? { validators.etag }
        var lastModified: String? { validators.lastModified }
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
        let validators = SDWebImageHTTPValidators(response: response)
        let noStore = (response.value(forHTTPHeaderField: "Cache-Control") ?? "").lowercased().contains("no-store")
        guard validators.canRevalidate, !noStore, data.count <= capacity / 4 else { return }
        lock.lock()
        defer { lock.unlock() }
        if let old = entries.removeValue(forKey: url) { bytes -= old.entry.data.count }
        tick += 1
        entries[url] = (Entry(validators: validators, data: data), tick)
        bytes += data.count
        while bytes > capacity, let oldest = entries.min(by: { $0.value.tick < $1.value.tick }) {
            entries.removeValue(forKey: oldest.key)
            bytes -= oldest.value.entry.data.count
        }
    }
}

/// The starts of downloads that broke part-way (Nuke keeps the same): the
/// next request for the URL asks only for the rest (Range + If-Range), so a
/// retry after a dropped connection does not fetch the bytes again. Bounded
/// in bytes, oldest out first; an entry is used once.
final class ResumableDataStore: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [URL: (data: ResumableData, tick: UInt64)] = [:]
    private var tick: UInt64 = 0
    private var bytes = 0
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func take(_ url: URL) -> ResumableData? {
        lock.lock()
        defer { lock.unlock() }
        guard let e = entries.removeValue(forKey: url) else { return nil }
        bytes -= e.data.data.count
        return e.data
    }

    func store(_ url: URL, _ data: ResumableData) {
        guard data.data.count <= capacity / 2 else { return }
        lock.lock()
        defer { lock.unlock() }
        if let old = entries.removeValue(forKey: url) { bytes -= old.data.data.count }
        tick += 1
        entries[url] = (data, tick)
        bytes += data.data.count
        while bytes > capacity, let oldest = entries.min(by: { $0.value.tick < $1.value.tick }) {
            entries.removeValue(forKey: oldest.key)
            bytes -= oldest.value.data.data.count
        }
    }
}
