#if Serve
import Dispatch
import SDSync

/// At most `width` renders at once and `depth` waiting for a turn; past
/// that a request is turned away (503 + Retry-After) instead of queueing
/// without bound. Waiters go first in, first out. A waiter whose task is
/// cancelled (its client went away) leaves the queue at once: its place
/// goes to the next request, and it never renders.
final class RenderGate: Sendable {
    enum Turn: Sendable { case go, full, cancelled, timedOut }
    struct Waiter {
        let id: UInt64
        var resume: CheckedContinuation<Turn, Never>?  // nil: left (cancelled)
    }
    struct State {
        var running = 0
        var waiting: [Waiter] = []
        var head = 0  // waiting[head...] are still queued, some of them left
        var count = 0  // queued and not left
        var lastID: UInt64 = 0
    }
    let width: Int, depth: Int
    /// The longest a request waits for a turn (nil: as long as it takes).
    let maxWait: Double?
    private let state = Locked(State())
    private let changed: @Sendable (_ running: Int, _ waiting: Int) -> Void

    /// `changed` hears every new (running, waiting) pair (the gauges), in
    /// order: it is called under the gate's lock and must not call the gate.
    init(width: Int, depth: Int, maxWait: Double? = nil,
         changed: @escaping @Sendable (_ running: Int, _ waiting: Int) -> Void = { _, _ in }) {
        self.width = max(1, width)
        self.depth = max(0, depth)
        self.maxWait = maxWait.flatMap { $0 > 0 ? $0 : nil }
        self.changed = changed
    }

    /// `body` on the state under the lock, then `changed` with the result.
    private func update<R>(_ body: (inout State) -> R) -> R {
        state.withLock { s in
            let r = body(&s)
            changed(s.running, s.count)
            return r
        }
    }

    /// Renders running and waiting now.
    var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.count) } }

    /// The waiter `id` leaves the queue (if it still waits), told `turn`.
    private func leaveQueue(_ id: UInt64, _ turn: Turn) {
        let c: CheckedContinuation<Turn, Never>? = update { s in
            guard let i = s.waiting[s.head...].firstIndex(where: { $0.id == id }), let c = s.waiting[i].resume else {
                return nil  // not queued (yet, or any more: its turn came)
            }
            s.waiting[i].resume = nil
            s.count -= 1
            return c
        }
        c?.resume(returning: turn)
    }

    /// Wait for a turn: `.go` (call `leave()` when done), `.full` at once
    /// when `depth` already wait, `.cancelled` when the task was cancelled
    /// before its turn came, `.timedOut` after `maxWait` seconds in the queue.
    func enter() async -> Turn {
        let id = state.withLock { s in s.lastID += 1; return s.lastID }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Turn, Never>) in
                let now: Turn? = update { s in
                    if s.running < width { s.running += 1; return .go }
                    if s.count >= depth { return .full }
                    // the cancellation handler may have run before we queued: it found nothing to remove
                    if Task.isCancelled { return .cancelled }
                    s.waiting.append(Waiter(id: id, resume: c))
                    s.count += 1
                    return nil
                }
                if let now {
                    c.resume(returning: now)
                } else if let maxWait {
                    DispatchQueue.global().asyncAfter(deadline: .now() + maxWait) { [self] in leaveQueue(id, .timedOut) }
                }
            }
        } onCancel: {
            leaveQueue(id, .cancelled)
        }
    }

    /// The turn ends: the next waiter still waiting takes it.
    func leave() {
        let next: CheckedContinuation<Turn, Never>? = update { s in
            var found: CheckedContinuation<Turn, Never>?
            while found == nil && s.head < s.waiting.count {
                found = s.waiting[s.head].resume
                s.head += 1
            }
            if s.head > 64 && s.head * 2 > s.waiting.count {  // drop the served prefix now and then
                s.waiting.removeFirst(s.head)
                s.head = 0
            }
            guard let found else { s.running -= 1; return nil }
            s.count -= 1
            return found  // running stays: the turn passes on
        }
        next?.resume(returning: .go)
    }
}
#endif
