import Dispatch
import Foundation
import SDSync
#if canImport(Glibc)
import Glibc
#endif

/// A queue drained by your program's own main loop — a GLib main context, an
/// SDL event loop — where Linux toolkits want their callbacks, and which
/// libdispatch's main queue does not reach (nothing runs it there). Blocks
/// wait in order until ``drain()`` runs them on the calling thread; the loop
/// learns there is work either by watching ``fileDescriptor`` (one end
/// of a socket pair, close-on-exec, readable while blocks wait: GLib's `g_unix_fd_add`, `poll`) or through
/// the `wakeup` hook (SDL: push an `SDL_USEREVENT`, which wakes
/// `SDL_WaitEvent`), called once per batch. The C core's dispatch mode
/// (`sd_loop_dispatch_fd`) is the same idea for C programs.
///
/// Give it to the view layer and the player as an ``SDCallbackQueue``
/// (`SDCallbackQueue(mainLoop:)`) and an ``SDAnimatedImageDisplayClock``
/// (`SDAnimatedImageDisplayClock(mainLoop:)`): results, transition frames
/// and animation ticks then run inside your loop, and nothing wakes it while
/// nothing loads or moves. Make it on the loop's own thread: that thread is
/// the one `.safeExecute` runs blocks inline on.
public final class SDMainLoopQueue: Sendable {
    private struct State {
        var blocks: [@Sendable () -> Void] = []
        var signalled = false  // the eventfd was written and not yet read
        var drained = 0
    }
    private let state = Locked(State())
    private let wakeup: (@Sendable () -> Void)?
    private let owner: pthread_t
    /// Readable while blocks wait; ``drain()`` reads it. -1 if the system
    /// gave none (then use the `wakeup` hook).
    public let fileDescriptor: Int32
    private let writeEnd: Int32

    /// A queue owned by the calling thread; `wakeup` (optional) is called,
    /// on whatever thread queued a block, when blocks start to wait.
    public init(wakeup: (@Sendable () -> Void)? = nil) {
        self.wakeup = wakeup
        owner = pthread_self()
        var fds: [Int32] = [-1, -1]
        // close-on-exec from the start (a process another thread spawns
        // meanwhile must not inherit either end; Swift's Glibc has no pipe2)
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        if socketpair(AF_UNIX, kind, 0, &fds) != 0 { fds = [-1, -1] }
        fileDescriptor = fds[0]
        writeEnd = fds[1]
    }

    deinit {
        if fileDescriptor >= 0 { close(fileDescriptor) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// Whether the caller is the thread that made the queue (its main loop).
    public var isMainLoopThread: Bool { pthread_equal(pthread_self(), owner) != 0 }

    /// Blocks waiting now.
    public var pendingCount: Int { state.withLock { $0.blocks.count } }
    /// Blocks run so far by ``drain()``.
    public var drainedCount: Int { state.withLock { $0.drained } }

    /// Queue `block`; it runs at the next ``drain()``.
    public func enqueue(_ block: @escaping @Sendable () -> Void) {
        let first = state.withLock { s -> Bool in
            s.blocks.append(block)
            if s.signalled { return false }
            s.signalled = true
            return true
        }
        guard first else { return }
        if writeEnd >= 0 {
            var one: UInt8 = 1
            _ = write(writeEnd, &one, 1)  // one byte per batch: the socket never fills
        }
        wakeup?()
    }

    /// Run every block waiting, in order, on the calling thread (the main
    /// loop's), and those they queue meanwhile; returns how many ran.
    @discardableResult
    public func drain() -> Int {
        if fileDescriptor >= 0 {  // cleared first: a block queued from now on is run below or signals again
            var bytes = [UInt8](repeating: 0, count: 64)
            while read(fileDescriptor, &bytes, bytes.count) > 0 {}
        }
        var ran = 0
        while true {
            let batch = state.withLock { s -> [@Sendable () -> Void] in
                let b = s.blocks
                s.blocks = []
                if b.isEmpty { s.signalled = false }  // the next block signals again
                s.drained += b.count
                return b
            }
            if batch.isEmpty { break }
            for block in batch { block() }
            ran += batch.count
        }
        return ran
    }
}
