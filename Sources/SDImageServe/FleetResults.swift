#if Serve
import Foundation
import Metrics
import SDWebImageRedis

/// One render per distinct result across a fleet of servers sharing a
/// Redis (`--redis`): before it renders, a server takes the result's lease
/// (the Redis tier's, as `SDRedisFleetLoader` does for sources); the owner
/// renders, writes the bytes to Redis and lets go, and every server that
/// asked meanwhile waits for those bytes instead of rendering them again.
/// An owner that fails leaves a short mark and the waiters render alone;
/// Redis down or slow costs the coordination, never a request.
struct FleetResults: Sendable {
    let store: SDRedisDiskCache
    /// A lease's life without renewal (the owner renews every third of it).
    let leaseTTL: TimeInterval
    /// The longest a server waits for another's render before it renders itself.
    let maxWait: TimeInterval
    let rendered = Counter(label: "sdimage_serve_fleet_results_total", dimensions: [("outcome", "rendered")])
    let shared = Counter(label: "sdimage_serve_fleet_results_total", dimensions: [("outcome", "shared")])
    let alone = Counter(label: "sdimage_serve_fleet_results_total", dimensions: [("outcome", "alone")])

    enum Turn {
        /// Another server rendered it.
        case result(Rendered)
        /// This server holds the lease: render, then `finish`.
        case owner(token: String)
        /// Render without the fleet (Redis away, an owner failed, waited too long).
        case alone
    }

    /// Redis's calls block (hiredis, at most `SDRedisDiskCache.Options.timeout`
    /// each): they run here, not on Swift's cooperative threads.
    private static let queue = DispatchQueue(label: "sdimage.serve.fleet", attributes: .concurrent)

    private static func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in queue.async { c.resume(returning: body()) } }
    }

    /// What one look at the result and its lease found.
    private enum Look: Sendable { case result(Rendered?), acquired, held, other }

    func turn(forKey key: String) async -> Turn {
        let token = UUID().uuidString
        var delay = 0.005, waited = 0.0
        let store = self.store, ttl = leaseTTL
        while true {
            let look: Look = await Self.onQueue {
                switch store.acquire(forKey: key, token: token, ttl: ttl) {
                case .present:
                    guard let e = store.entry(forKey: key) else { return .result(nil) }
                    return .result(Rendered(data: e.data, extendedData: e.extended))
                case .acquired: return .acquired
                case .held: return .held
                default: return .other
                }
            }
            switch look {
            case .result(let r?):
                shared.increment()
                return .result(r)
            case .result(nil):
                alone.increment()
                return .alone
            case .acquired:
                rendered.increment()
                return .owner(token: token)
            case .held where waited < maxWait:
                try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                waited += delay
                delay = min(delay * 2, 0.1)
            default:
                alone.increment()
                return .alone
            }
        }
    }

    /// Keep the lease while the render runs (cancel the task when it ends).
    func keepAlive(forKey key: String, token: String) -> Task<Void, Never> {
        let store = self.store, ttl = leaseTTL
        return Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(ttl / 3 * 1e9))
                if Task.isCancelled { return }
                guard await Self.onQueue({ store.renew(forKey: key, token: token, ttl: ttl) }) else { return }
            }
        }
    }

    /// The owner's render ended: share the bytes and let go, or mark the
    /// failure so the waiters render alone at once.
    func finish(forKey key: String, token: String, _ result: Rendered?) async {
        let store = self.store
        await Self.onQueue {
            if let result, store.share(result.data, extendedData: result.extendedData, forKey: key) {
                store.release(forKey: key, token: token)
            } else {
                store.markFailed(forKey: key, token: token, ttl: 5)
            }
        }
    }
}
#endif
