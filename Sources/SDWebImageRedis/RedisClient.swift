import CHiredis
import Dispatch
import Foundation
import Logging

/// Where a Redis is: `redis://[user:password@]host[:port][/db]` (`rediss://`
/// needs a hiredis built with TLS, which Debian's 0.14 is not: refused).
public struct RedisEndpoint: Sendable, Equatable {
    /// Host name or address.
    public var host: String
    /// TCP port (default 6379).
    public var port: Int
    /// Database number (`SELECT`), default 0.
    public var database: Int
    /// ACL user (Redis 6+), with `password`.
    public var username: String?
    /// `AUTH` password.
    public var password: String?

    /// Parse a `redis://` URL; throws `RedisError` saying what is wrong.
    public init(url: String) throws(RedisError) {
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased() else {
            throw RedisError("not a Redis URL: \(url)")
        }
        if scheme == "rediss" { throw RedisError("rediss:// (TLS) needs a hiredis with TLS support; this one has none") }
        guard scheme == "redis" else { throw RedisError("not a redis:// URL: \(url)") }
        guard let h = c.host, !h.isEmpty else { throw RedisError("no host in \(url)") }
        host = h
        port = c.port ?? 6379
        let path = c.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard path.isEmpty || Int(path) != nil else { throw RedisError("the database must be a number: \(url)") }
        database = Int(path) ?? 0
        username = c.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding }
        password = c.password?.removingPercentEncoding
    }

    /// `host:port/db`, without credentials (for messages).
    public var description: String { "\(host):\(port)/\(database)" }
}

/// A Redis failure: unreachable, timed out, a protocol error, or an error reply.
public struct RedisError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let description: String
    /// An error with its message.
    public init(_ description: String) { self.description = description }
}

/// One reply, copied out of hiredis.
enum RedisReply {
    case string([UInt8])
    case integer(Int)
    case array([RedisReply])
    case null
    case status(String)
    case error(String)

    init(_ r: UnsafePointer<redisReply>) {
        switch Int32(r.pointee.type) {
        case REDIS_REPLY_STRING:
            self = .string(r.pointee.len > 0 ? Array(UnsafeRawBufferPointer(start: r.pointee.str, count: r.pointee.len)) : [])
        case REDIS_REPLY_INTEGER: self = .integer(Int(r.pointee.integer))
        case REDIS_REPLY_ARRAY:
            var items: [RedisReply] = []
            for i in 0..<r.pointee.elements { if let e = r.pointee.element[i] { items.append(RedisReply(e)) } }
            self = .array(items)
        case REDIS_REPLY_STATUS: self = .status(String(cString: r.pointee.str))
        case REDIS_REPLY_ERROR: self = .error(String(cString: r.pointee.str))
        default: self = .null
        }
    }
}

/// A pool of synchronous hiredis connections: every call is bounded by
/// `timeout` (connect, send and reply). A Redis that is down costs a load
/// nothing but one fast failure: after a connection error the client waits
/// (0.25 s, doubling to 5 s) before it tries to connect again, answers
/// failure at once meanwhile, and logs one warning per outage and one line
/// when it is back. Thread-safe.
// @unchecked: `lock` guards the idle connections and the outage state; a hiredis context is used by one thread at a time (taken from `idle`, given back).
final class RedisClient: @unchecked Sendable {
    let endpoint: RedisEndpoint
    let timeout: TimeInterval
    private let lock = NSLock()
    private var idle: [UnsafeMutablePointer<redisContext>] = []
    private let slots: DispatchSemaphore
    private var down = false
    private var retryAt: UInt64 = 0
    private var backoff: UInt64 = 250_000_000
    private var failures = 0
    private let log: Logger

    /// Connections at most (commands in flight at once).
    let connections: Int

    init(endpoint: RedisEndpoint, connections: Int, timeout: TimeInterval, logger: Logger = .sdNoOp) {
        log = logger
        self.endpoint = endpoint
        self.timeout = timeout
        self.connections = max(1, connections)
        slots = DispatchSemaphore(value: self.connections)
        Self.ignoreSIGPIPE
    }

    /// hiredis writes with plain write(2): a Redis that closed the connection
    /// would kill the process with SIGPIPE. Ignored once, unless the program
    /// installed a handler of its own.
    private static let ignoreSIGPIPE: Void = {
        var old = sigaction()
        if sigaction(SIGPIPE, nil, &old) == 0 && old.__sigaction_handler.sa_handler == nil {
            signal(SIGPIPE, SIG_IGN)
        }
    }()

    deinit {
        for c in idle { redisFree(c) }
    }

    /// Commands that failed because Redis could not be reached or answered garbage.
    var connectionFailures: Int { lock.lock(); defer { lock.unlock() }; return failures }

    private var tv: timeval {
        let us = Int(max(0.001, timeout) * 1_000_000)
        return timeval(tv_sec: us / 1_000_000, tv_usec: Int(us % 1_000_000))
    }

    private func connect() -> Result<UnsafeMutablePointer<redisContext>, RedisError> {
        guard let c = redisConnectWithTimeout(endpoint.host, Int32(endpoint.port), tv) else {
            return .failure(RedisError("out of memory"))
        }
        if c.pointee.err != 0 {
            let msg = Self.message(c)
            redisFree(c)
            return .failure(RedisError(msg))
        }
        redisSetTimeout(c, tv)
        var setup: [[String]] = []
        if let p = endpoint.password { setup.append(endpoint.username.map { ["AUTH", $0, p] } ?? ["AUTH", p]) }
        if endpoint.database != 0 { setup.append(["SELECT", String(endpoint.database)]) }
        for args in setup {
            switch Self.run(c, args.map { Array($0.utf8) }) {
            case .success(.error(let e)):
                redisFree(c)
                return .failure(RedisError("\(args[0]): \(e)"))
            case .failure(let e):
                redisFree(c)
                return .failure(e)
            default: break
            }
        }
        return .success(c)
    }

    private static func message(_ c: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: c.pointee.errstr) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    /// One command on one connection; `.failure` when the connection broke.
    private static func run(_ c: UnsafeMutablePointer<redisContext>, _ args: [[UInt8]]) -> Result<RedisReply, RedisError> {
        var flat: [UInt8] = []
        flat.reserveCapacity(args.reduce(0) { $0 + $1.count + 1 })
        var offsets: [Int] = []
        for a in args {
            offsets.append(flat.count)
            flat += a
            flat.append(0)
        }
        let lengths = args.map(\.count)
        let raw: UnsafeMutableRawPointer? = flat.withUnsafeBufferPointer { buf in
            let base = UnsafeRawPointer(buf.baseAddress!).assumingMemoryBound(to: CChar.self)
            var argv: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return argv.withUnsafeMutableBufferPointer { av in
                lengths.withUnsafeBufferPointer { lv in
                    redisCommandArgv(c, Int32(args.count), av.baseAddress, lv.baseAddress)
                }
            }
        }
        guard let raw else { return .failure(RedisError(message(c))) }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        return .success(RedisReply(UnsafePointer(reply)))
    }

    /// Run a command; nil when Redis is down, slow or answered garbage (the
    /// caller carries on without it). An error reply is a reply.
    func command(_ args: [[UInt8]]) -> RedisReply? {
        guard slots.wait(timeout: .now() + timeout) == .success else { return nil }
        defer { slots.signal() }
        lock.lock()
        var conn = idle.popLast()
        if conn == nil && down && DispatchTime.now().uptimeNanoseconds < retryAt {
            lock.unlock()
            return nil  // in an outage, between tries: fail fast
        }
        lock.unlock()
        if conn == nil {
            switch connect() {
            case .success(let c): conn = c
            case .failure(let e):
                broke(e)
                return nil
            }
        }
        let c = conn!
        switch Self.run(c, args) {
        case .success(let reply):
            recovered()
            lock.lock()
            idle.append(c)
            lock.unlock()
            return reply
        case .failure(let e):
            redisFree(c)  // a timed-out or broken connection is never reused
            broke(e)
            return nil
        }
    }

    /// A command from strings.
    func command(_ args: String...) -> RedisReply? { command(args.map { Array($0.utf8) }) }

    private func broke(_ e: RedisError) {
        lock.lock()
        failures += 1
        let first = !down
        down = true
        retryAt = DispatchTime.now().uptimeNanoseconds + backoff
        backoff = min(backoff * 2, 5_000_000_000)
        lock.unlock()
        if first {
            log.warning("Redis at \(endpoint.description) unavailable (\(e.description)); loading without it until it is back")
        }
    }

    private func recovered() {
        lock.lock()
        let was = down
        down = false
        backoff = 250_000_000
        lock.unlock()
        if was { log.notice("Redis at \(endpoint.description) is back") }
    }
}
