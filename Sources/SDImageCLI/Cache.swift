import ArgumentParser
import Foundation
import SDWebImage
import SDWebImageRedis

/// `sdimage cache info|clear|trim`.
struct Cache: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect or empty the disk cache.",
        subcommands: [CacheInfo.self, CacheClear.self, CacheTrim.self])
}

struct CacheOptions: ParsableArguments {
    @Option(help: "Cache folder (default: the library's, under $XDG_CACHE_HOME or ~/.cache).")
    var cacheDir: String?

    func open(_ config: SDImageCacheConfig = SDImageCacheConfig()) -> SDImageCache {
        SDImageCache(namespace: "default", diskCacheDirectory: cacheDir, config: config)
    }
}

struct CacheInfo: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "info", abstract: "Entries, bytes, oldest entry, location.")
    @OptionGroup var options: CacheOptions
    @Flag(help: "Machine-readable output.")
    var json = false
    @Option(help: ArgumentHelp("Report the shared tier on this Redis instead (redis://host:port/db): this namespace's entries and bytes, the server's memory, policy and hit rate.", valueName: "url"))
    var redis: String?
    @Option(help: "The Redis tier's namespace (default: default).")
    var namespace = "default"

    func run() throws {
        if let redis { return try redisInfo(redis) }
        let cache = options.open()
        let entries = cache.diskEntries()
        let bytes = entries.reduce(0) { $0 + $1.bytes }
        let oldest = entries.first?.accessDate
        if json {
            var out: [String: Any] = ["path": cache.diskCachePath, "entries": entries.count, "bytes": bytes]
            if let oldest { out["oldest_access"] = ISO8601DateFormatter().string(from: oldest) }
            let data = try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("location  \(cache.diskCachePath)")
        print("entries   \(entries.count)")
        print(String(format: "bytes     %d (%.1f MB)", bytes, Double(bytes) / 1e6))
        print("oldest    \(oldest.map { ISO8601DateFormatter().string(from: $0) } ?? "-") (last access)")
    }
}

extension CacheInfo {
    func redisInfo(_ url: String) throws {
        var o = SDRedisDiskCache.Options()
        o.timeout = 5
        let tier: SDRedisDiskCache
        do { tier = try SDRedisDiskCache(url: url, namespace: namespace, options: o) } catch {
            throw ValidationError("--redis: \(error)")
        }
        let info: [String: String]
        do { info = try tier.serverInfo() } catch {
            FileHandle.standardError.write(Data("sdimage: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let entries = tier.entries()
        let bytes = entries.reduce(0) { $0 + $1.bytes }
        func int(_ k: String) -> Int { Int(info[k] ?? "") ?? 0 }
        let hits = int("keyspace_hits"), misses = int("keyspace_misses")
        let rate = hits + misses > 0 ? Double(hits) / Double(hits + misses) : 0
        if json {
            let out: [String: Any] = [
                "redis": tier.endpoint.description, "namespace": tier.namespace, "entries": entries.count,
                "bytes": bytes, "used_memory": int("used_memory"), "maxmemory": int("maxmemory"),
                "maxmemory_policy": info["maxmemory_policy"] ?? "", "keyspace_hits": hits,
                "keyspace_misses": misses, "hit_rate": (rate * 1000).rounded() / 1000,
                "evicted_keys": int("evicted_keys"), "expired_keys": int("expired_keys"),
            ]
            let data = try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("redis     \(tier.endpoint.description), namespace \(tier.namespace) (Redis \(info["redis_version"] ?? "?"))")
        print("entries   \(entries.count)")
        print(String(format: "bytes     %d (%.1f MB)", bytes, Double(bytes) / 1e6))
        let max = int("maxmemory")
        print(String(format: "memory    %.1f MB used of %@ (policy %@)", Double(int("used_memory")) / 1e6,
                     max == 0 ? "no maxmemory" : String(format: "%.1f MB", Double(max) / 1e6),
                     info["maxmemory_policy"] ?? "?"))
        print(String(format: "hit rate  %.1f%% (%d hits, %d misses, server-wide)", rate * 100, hits, misses))
        print("evicted   \(int("evicted_keys")), expired \(int("expired_keys"))")
    }
}

struct CacheClear: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every entry.")
    @OptionGroup var options: CacheOptions

    func run() throws {
        let cache = options.open()
        let n = cache.totalDiskCount()
        let done = DispatchSemaphore(value: 0)
        cache.clearDisk { done.signal() }
        done.wait()
        print("removed \(n) entries from \(cache.diskCachePath)")
    }
}

struct CacheTrim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim", abstract: "Remove expired entries, then the oldest beyond a size.")
    @OptionGroup var options: CacheOptions
    @Option(help: "Entries not used for this many seconds go (default one week).")
    var maxAge: Double = 7 * 24 * 3600
    @Option(help: "Then, above this many bytes, the oldest go until half is left (0: no limit).")
    var maxSize = 0

    func run() throws {
        let keepAll = SDImageCacheConfig()
        keepAll.maxDiskAge = -1  // count first: opening a cache sweeps with its limits
        let before = options.open(keepAll).totalDiskCount()
        let config = SDImageCacheConfig()
        config.maxDiskAge = maxAge
        config.maxDiskSize = maxSize
        let cache = options.open(config)
        let done = DispatchSemaphore(value: 0)
        cache.deleteOldFiles { done.signal() }
        done.wait()
        print("\(cache.totalDiskCount()) entries left in \(cache.diskCachePath) (\(before) before)")
    }
}
