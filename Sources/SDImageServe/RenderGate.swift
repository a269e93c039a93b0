#if Serve
import SDSync

/// At most `width` renders at once and `depth` waiting for a turn; past
/// that a request is turned away (503 + Retry-After) instead of queueing
/// without bound. Waiters go first in, first out.
final class RenderGate: Sendable {
    struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var head = 0  // waiting[head...] still wait
    }
    let width: Int, depth: Int
    private let state = Locked(State())

    init(width: Int, depth: Int) {
        self.width = max(1, width)
        self.depth = max(0, depth)
    }

    /// Renders running and waiting now.
    var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count - $0.head) } }

    /// Wait for a turn; false (at once) when `depth` already wait.
    func enter() async -> Bool {
        enum Step { case go, wait, full }
        var step = Step.full
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            step = state.withLock { s in
                if s.running < width { s.running += 1; return .go }
                if s.waiting.count - s.head >= depth { return .full }
                s.waiting.append(c)
                return .wait
            }
            if step != .wait { c.resume() }
        }
        return step != .full
    }

    /// The turn ends: the next waiter takes it.
    func leave() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { s in
            guard s.head < s.waiting.count else { s.running -= 1; return nil }
            let c = s.waiting[s.head]
            s.head += 1
            if s.head > 64 && s.head * 2 > s.waiting.count {  // drop the served prefix now and then
                s.waiting.removeFirst(s.head)
                s.head = 0
            }
            return c  // running stays: the turn passes on
        }
        next?.resume()
    }
}
#endif
