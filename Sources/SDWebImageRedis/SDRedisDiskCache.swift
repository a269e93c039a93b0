import CSDSystem
import Foundation
import Logging
import SDCache
import SDWebImage
import SDSync

/// A cache tier's bytes in Redis: the disk-cache protocol on a shared engine,
/// so several processes or machines share what any of them fetched. Under
/// `SDImageCache` (`SDImageRedisCache` builds one) it stores each image's
/// original bytes with its extended data (the HTTP validators and freshness
/// the manager keeps).
///
/// - Keys: `sdwebimage:<namespace>:{<name>}`, `<name>` as `DiskCache` names
///   its files (an MD5 of the key); the braces are a Redis Cluster hash tag,
///   so an entry and its fleet lease live on one shard.
/// - Values: a header (magic, CRC-32 of the rest, time stored, extended-data
///   length), the extended data, the bytes. A value that fails its checks is a
///   miss and is deleted — never a wrong image.
/// - Age: each entry expires in Redis `ttl` seconds after it was stored or
///   touched (`maxDiskAge` semantics). Size: Redis's own `maxmemory` with an
///   LRU policy (`allkeys-lru`); this tier never scans to trim. Values over
///   `maxValueBytes` are not stored (logged once, not an error).
/// - Faults: every call is bounded by `timeout`; with Redis down, slow or
///   answering garbage, reads miss and writes are dropped at once (one warning
///   per outage), and it reconnects by itself.
public final class SDRedisDiskCache: SDDiskCacheProtocol, Sendable {
    /// How the tier talks to Redis.
    public struct Options: Sendable {
        /// Seconds an entry lives after it is stored or touched (default one
        /// week, as `maxDiskAge`); 0 or less: no expiry.
        public var ttl: TimeInterval = 60 * 60 * 24 * 7
        /// Larger values are not stored (default 8 MiB).
        public var maxValueBytes = 8 << 20
        /// Connections in the pool; nil (the default): the shared downloader's
        /// `maxConcurrentDownloads` when the tier is made (6 unless changed),
        /// so every load in flight can reach Redis at once. Set it to your
        /// own loader's concurrency if it differs.
        public var connections: Int?
        /// Bound on connecting, sending and waiting for a reply, in seconds (default 0.5).
        public var timeout: TimeInterval = 0.5
        /// Where the tier's lines go (Redis down or back, a damaged entry, a
        /// value too large): the application's `Logger`. Default: nowhere.
        public var logger: Logger = .sdNoOp
        /// The defaults.
        public init() {}
    }

    /// The Redis this tier uses.
    public let endpoint: RedisEndpoint
    /// Keys are `sdwebimage:<namespace>:…`.
    public let namespace: String
    /// The settings it was made with.
    public let options: Options
    let client: RedisClient
    private let prefix: String
    private var log: Logger { options.logger }
    private let warnedTooLarge = Flag()

    /// A tier on the Redis at `url` (`redis://[user:password@]host[:port][/db]`).
    /// Nothing is sent until the first call: a Redis that is down now is
    /// not an error, only a miss.
    public init(url: String, namespace: String = "default", options: Options = Options()) throws {
        endpoint = try RedisEndpoint(url: url)
        self.namespace = namespace.isEmpty ? "default" : namespace
        self.options = options
        client = RedisClient(endpoint: endpoint,
                             connections: options.connections
                                ?? SDWebImageDownloaderConfig.default.maxConcurrentDownloads,
                             timeout: options.timeout, logger: options.logger)
        prefix = "sdwebimage:\(self.namespace):"
    }

    /// For `SDImageCacheConfig.diskCacheClass`: `cachePath` is the Redis URL
    /// with the namespace as its last path part (`redis://host:6379/0/avatars`,
    /// what `SDImageCache(namespace: "avatars", diskCacheDirectory:
    /// "redis://host:6379/0")` makes); default options.
    public convenience init(cachePath: String) throws {
        var url = cachePath, ns = "default"
        if let slash = cachePath.lastIndex(of: "/"), cachePath[..<slash].filter({ $0 == "/" }).count >= 3 {
            url = String(cachePath[..<slash])
            ns = String(cachePath[cachePath.index(after: slash)...])
        }
        try self.init(url: url, namespace: ns)
    }

    /// The Redis key of a cache key.
    public func redisKey(forKey key: String) -> String { prefix + "{" + DiskCache.fileName(forKey: key) + "}" }

    private func k(_ key: String) -> [UInt8] { Array(redisKey(forKey: key).utf8) }

    // MARK: - values

    private static let magic: [UInt8] = Array("SDR1".utf8)
    private static let headerSize = 4 + 4 + 8 + 4

    static func encode(_ data: Data, extended: Data?, stored: Date) -> [UInt8] {
        let ext = extended ?? Data()
        var body: [UInt8] = []
        body.reserveCapacity(12 + ext.count + data.count)
        withUnsafeBytes(of: UInt64(max(0, stored.timeIntervalSince1970 * 1000)).littleEndian) { body += $0 }
        withUnsafeBytes(of: UInt32(ext.count).littleEndian) { body += $0 }
        body += ext
        body += data
        let crc = body.withUnsafeBytes { sd_system_crc32($0.baseAddress, $0.count) }
        var out = magic
        withUnsafeBytes(of: crc.littleEndian) { out += $0 }
        return out + body
    }

    /// The parts of a stored value; nil when it is not one of ours or is damaged.
    static func decode(_ v: [UInt8]) -> (data: Data, extended: Data?, stored: Date)? {
        guard v.count >= headerSize, Array(v[0..<4]) == magic else { return nil }
        func u32(_ at: Int) -> UInt32 { v[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        let crc = u32(4)
        let actual = v.withUnsafeBytes { sd_system_crc32($0.baseAddress! + 8, v.count - 8) }
        guard crc == actual else { return nil }
        let ms = v[8..<16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let extLen = Int(u32(16))
        guard extLen <= v.count - headerSize else { return nil }
        let ext = extLen > 0 ? Data(v[headerSize..<headerSize + extLen]) : nil
        return (Data(v[(headerSize + extLen)...]), ext, Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// The stored value of `key`, checked; a damaged one is deleted.
    private func load(_ key: String) -> (data: Data, extended: Data?, stored: Date)? {
        guard case .string(let v)? = client.command([Array("GET".utf8), k(key)]) else { return nil }
        if let parts = Self.decode(v) { return parts }
        log.warning("Redis entry for \(redisKey(forKey: key)) is damaged (\(v.count) bytes); dropped")
        _ = client.command([Array("UNLINK".utf8), k(key)])
        return nil
    }

    private func expiry() -> [[UInt8]] {
        options.ttl > 0 ? [Array("PX".utf8), Array(String(Int(options.ttl * 1000)).utf8)] : []
    }

    // MARK: - SDDiskCacheProtocol

    public func containsData(forKey key: String) -> Bool {
        if case .integer(let n)? = client.command([Array("EXISTS".utf8), k(key)]) { return n > 0 }
        return false
    }

    public func data(forKey key: String) -> Data? {
        guard let entry = load(key) else { return nil }
        if entry.extended != nil {
            lastReadExtended.withLock { l in
                if l.count >= 1024 { l.removeAll() }  // reads nobody promoted
                l[key] = entry.extended
            }
        }
        return entry.data
    }

    // A hit promoted to the local disk (`SDImageRedisCache.tiered`) keeps
    // its validators without a second read of the whole value.
    private let lastReadExtended = Locked<[String: Data]>([:])

    func takeExtendedDataOfLastRead(forKey key: String) -> Data? {
        lastReadExtended.withLock { $0.removeValue(forKey: key) }
    }

    public func setData(_ data: Data, forKey key: String, extendedData: Data?) throws {
        if tookShared(forKey: key, bytes: data.count) { return }  // the fleet loader wrote or read these bytes
        let value = Self.encode(data, extended: extendedData, stored: Date())
        guard value.count <= options.maxValueBytes else {
            if warnedTooLarge.setOnce() {
                log.notice("Redis tier: values over \(options.maxValueBytes) bytes are not stored (first: \(value.count) bytes)")
            }
            return
        }
        let reply = client.command([Array("SET".utf8), k(key), value] + expiry())
        if case .error(let e)? = reply { throw RedisError("SET: \(e)") }  // e.g. full under noeviction
    }

    public func extendedData(forKey key: String) -> Data? { load(key)?.extended }

    public func setExtendedData(_ data: Data?, forKey key: String) throws {
        guard let old = load(key) else { throw RedisError("no entry for \(key)") }
        let value = Self.encode(old.data, extended: data, stored: old.stored)
        let reply = client.command([Array("SET".utf8), k(key), value, Array("XX".utf8), Array("KEEPTTL".utf8)])
        if case .error(let e)? = reply { throw RedisError("SET: \(e)") }
    }

    public func touch(forKey key: String) {
        guard options.ttl > 0 else { return }
        _ = client.command([Array("PEXPIRE".utf8), k(key), Array(String(Int(options.ttl * 1000)).utf8)])
    }

    public func removeData(forKey key: String) {
        _ = client.command([Array("UNLINK".utf8), k(key)])
    }

    /// Every key of this namespace, by SCAN (never KEYS: it blocks Redis).
    private func keys() -> [[UInt8]] {
        var cursor = "0", out: [[UInt8]] = []
        repeat {
            guard case .array(let parts)? = client.command("SCAN", cursor, "MATCH", prefix + "*", "COUNT", "1000"),
                  parts.count == 2, case .string(let c) = parts[0], case .array(let found) = parts[1] else { break }
            cursor = String(decoding: c, as: UTF8.self)
            for case .string(let key) in found { out.append(key) }
        } while cursor != "0"
        return out
    }

    public func removeAllData() {
        let all = keys()
        for start in stride(from: 0, to: all.count, by: 500) {
            _ = client.command([Array("UNLINK".utf8)] + all[start..<min(all.count, start + 500)])
        }
    }

    /// Redis expires entries itself and `maxmemory` bounds the size, so only
    /// `maxAge` 0 (remove all) does anything here.
    @discardableResult
    public func removeExpiredData(maxAge: TimeInterval, maxSize: Int, expireType: DiskCacheExpireType) -> Int {
        guard maxAge == 0 else { return 0 }
        let n = totalCount()
        removeAllData()
        return n
    }

    public func entries() -> [DiskCache.Entry] {
        keys().compactMap { key in
            guard case .integer(let bytes)? = client.command([Array("STRLEN".utf8), key]) else { return nil }
            let name = String(decoding: key.dropFirst(prefix.utf8.count), as: UTF8.self)
                .trimmingCharacters(in: CharacterSet(charactersIn: "{}"))
            let now = Date()
            return DiskCache.Entry(name: name, bytes: bytes, accessDate: now, modificationDate: now, changeDate: now)
        }
    }

    public func totalSize() -> Int { entries().reduce(0) { $0 + $1.bytes } }

    public func totalCount() -> Int { keys().count }

    public func filePath(forKey key: String) -> String? { nil }

    /// Commands that failed because Redis could not be reached or answered garbage.
    public var connectionFailures: Int { client.connectionFailures }

    /// The server's `INFO` fields (`used_memory`, `maxmemory`,
    /// `maxmemory_policy`, `keyspace_hits`, `keyspace_misses`,
    /// `evicted_keys`, …), for `sdimage cache info --redis`. Server-wide, not
    /// this namespace's.
    public func serverInfo() throws(RedisError) -> [String: String] {
        switch client.command("INFO") {
        case .string(let text)?:
            var out: [String: String] = [:]
            for line in String(decoding: text, as: UTF8.self).split(whereSeparator: \.isNewline)
            where !line.hasPrefix("#") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                out[String(line[..<colon])] = String(line[line.index(after: colon)...])
            }
            return out
        case .error(let e)?: throw RedisError("INFO: \(e)")
        default: throw RedisError("Redis at \(endpoint.description) did not answer")
        }
    }

    // MARK: - fleet lease (SDRedisFleetLoader; `sdimage serve`'s results)

    /// The Redis key of the fleet lease on `key`: the entry's hash tag, so
    /// both live on one Cluster shard (the scripts touch both).
    public func leaseKey(forKey key: String) -> String {
        prefix + "lease:{" + DiskCache.fileName(forKey: key) + "}"
    }

    /// What one look at an entry and its lease found.
    package enum Lease: Equatable {
        /// The bytes are in Redis.
        case present
        /// No bytes, and now this caller holds the lease.
        case acquired
        /// Another process holds it.
        case held
        /// The owner's fetch failed: everyone fetches alone for a while.
        case fetchYourself
        /// The owner got this status, which says the image is not there
        /// (404, 410): everyone fails alike, without asking, for a while.
        case gone(status: Int)
        /// Redis did not answer (or not sensibly).
        case unavailable
    }

    /// The failure mark an owner leaves instead of its lease.
    static let failedMark = "-"

    /// The mark an owner leaves for a status that says the image is not
    /// there: `-` and the status (`-404`).
    static func goneMark(_ status: Int) -> String { failedMark + String(status) }

    // One round trip, atomic: is the value there, else take the lease.
    private static let acquireScript = """
        if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
        if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 2 end
        local v = redis.call('GET', KEYS[2])
        if v == ARGV[3] then return 3 end
        if v and string.sub(v, 1, 1) == ARGV[3] then
          local status = tonumber(string.sub(v, 2))
          if status and status >= 400 and status < 600 then return 1000 + status end
        end
        return 0
        """
    // Only the owner (its token) may release, renew or mark its lease.
    private static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """
    private static let renewScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
        return 0
        """
    private static let markScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end
        return 0
        """

    private func eval(_ script: String, keys: [String], _ args: [String]) -> RedisReply? {
        client.command([Array("EVAL".utf8), Array(script.utf8), Array(String(keys.count).utf8)]
                       + keys.map { Array($0.utf8) } + args.map { Array($0.utf8) })
    }

    private static func ms(_ t: TimeInterval) -> String { String(max(1, Int(t * 1000))) }

    package func acquire(forKey key: String, token: String, ttl: TimeInterval) -> Lease {
        switch eval(Self.acquireScript, keys: [redisKey(forKey: key), leaseKey(forKey: key)],
                    [token, Self.ms(ttl), Self.failedMark]) {
        case .integer(1)?: return .present
        case .integer(2)?: return .acquired
        case .integer(3)?: return .fetchYourself
        case .integer(let n)? where n >= 1400 && n < 1600: return .gone(status: Int(n - 1000))
        case .integer(0)?: return .held
        default: return .unavailable  // down, or an error reply (no EVAL on this server)
        }
    }

    @discardableResult
    package func release(forKey key: String, token: String) -> Bool {
        if case .integer(1)? = eval(Self.releaseScript, keys: [leaseKey(forKey: key)], [token]) { return true }
        return false
    }

    package func renew(forKey key: String, token: String, ttl: TimeInterval) -> Bool {
        if case .integer(1)? = eval(Self.renewScript, keys: [leaseKey(forKey: key)], [token, Self.ms(ttl)]) { return true }
        return false
    }

    /// Leave the failure mark instead of the lease (the owner only): the
    /// plain one, or with `goneStatus` the one that fails everyone alike.
    package func markFailed(forKey key: String, token: String, ttl: TimeInterval, goneStatus: Int? = nil) {
        let mark = goneStatus.map(Self.goneMark) ?? Self.failedMark
        _ = eval(Self.markScript, keys: [leaseKey(forKey: key)], [token, mark, Self.ms(ttl)])
    }

    /// The whole checked entry in one read.
    package func entry(forKey key: String) -> (data: Data, extended: Data?, stored: Date)? { load(key) }

    /// Store for the fleet: true when the bytes are in Redis for the waiters.
    package func share(_ data: Data, extendedData: Data?, forKey key: String) -> Bool {
        let value = Self.encode(data, extended: extendedData, stored: Date())
        guard value.count <= options.maxValueBytes else { return false }
        guard case .status? = client.command([Array("SET".utf8), k(key), value] + expiry()) else { return false }
        noteShared(forKey: key, bytes: data.count)
        return true
    }

    // The manager stores what a load returned in every tier: bytes the fleet
    // loader just wrote or read need not cross the network again. One note
    // per load, used once.
    private let justShared = Locked<[String: Int]>([:])

    func noteShared(forKey key: String, bytes: Int) {
        justShared.withLock { j in
            if j.count >= 4096 { j.removeAll() }  // notes nobody used (loads that store nothing)
            j[key] = bytes
        }
    }

    private func tookShared(forKey key: String, bytes: Int) -> Bool {
        justShared.withLock { j in
            guard j[key] == bytes else { return false }
            j[key] = nil
            return true
        }
    }
}

/// Set once, from any thread.
final class Flag: Sendable {
    private let set = Locked(false)
    /// True the first time only.
    func setOnce() -> Bool { set.withLock { s in defer { s = true }; return !s } }
}
