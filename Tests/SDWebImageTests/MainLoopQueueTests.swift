import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a lock, for the tests' counters.
final class LockedBox<T>: @unchecked Sendable {
    // @unchecked: `value` is read and written under `lock` only.
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    var current: T { lock.lock(); defer { lock.unlock() }; return value }
    func withLock<R>(_ body: (inout T) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) }
}

/// A program's own main loop on a thread of its own, as GLib's or SDL's
/// would be: it sleeps in poll(2) on the queue's file descriptor and drains
/// the queue when it becomes readable — nothing else wakes it.
final class LoopThread: @unchecked Sendable {
    // @unchecked: `queue` is written once before `ready` is signalled; `wakes` and `stopping` under `lock`.
    private(set) var queue: SDMainLoopQueue!
    private let lock = NSLock()
    private var _wakes = 0
    private var stopping = false
    private let ready = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init() {
        let t = Thread { [self] in
            queue = SDMainLoopQueue()
            ready.signal()
            var pfd = pollfd(fd: queue.fileDescriptor, events: Int16(POLLIN), revents: 0)
            while true {
                lock.lock(); let stop = stopping; lock.unlock()
                if stop { break }
                pfd.revents = 0
                if poll(&pfd, 1, 200) > 0 {  // 200 ms only to notice `stop`; wakes counted when readable
                    lock.lock(); _wakes += 1; lock.unlock()
                    queue.drain()
                }
            }
            done.signal()
        }
        t.start()
        ready.wait()
    }

    var wakes: Int { lock.lock(); defer { lock.unlock() }; return _wakes }

    func stop() {
        lock.lock(); stopping = true; lock.unlock()
        done.wait()
    }
}

@Suite("Callbacks on the program's own main loop: SDMainLoopQueue")
struct MainLoopQueueTests {
    let servers = TestServers.shared

    @Test("Blocks wait in order until drain, on the draining thread; the descriptor is readable exactly while they wait, and close-on-exec")
    func drainOrderAndDescriptor() throws {
        let wakeups = LockedBox(0)
        let q = SDMainLoopQueue(wakeup: { wakeups.withLock { $0 += 1 } })
        #expect(q.fileDescriptor >= 0 && q.isMainLoopThread)
        // a program that spawns processes must not hand them the queue's descriptor
        #expect(fcntl(q.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)
        func readable() -> Bool {
            var p = pollfd(fd: q.fileDescriptor, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, 0) > 0
        }
        #expect(!readable())
        let order = LockedBox([Int]())
        let group = DispatchGroup()
        for i in 0..<3 {  // queued from other threads, one after another
            DispatchQueue.global().async(group: group) { q.enqueue { order.withLock { $0.append(i) } } }
            group.wait()
        }
        #expect(readable() && q.pendingCount == 3 && order.current.isEmpty)
        #expect(wakeups.current == 1, "one wakeup for the batch")
        #expect(q.drain() == 3)
        #expect(order.current == [0, 1, 2] && !readable() && q.pendingCount == 0)
        // a block that queues another: run in the same drain
        q.enqueue { q.enqueue { order.withLock { $0.append(9) } } }
        #expect(wakeups.current == 2)
        #expect(q.drain() == 2 && order.current.last == 9 && !readable())
    }

    @Test("SDCallbackQueue(mainLoop:): inline on the loop's thread, queued from others; sync waits for the loop; asyncAfter lands in it")
    func callbackQueueOnTheLoop() async throws {
        let loop = LoopThread()
        defer { loop.stop() }
        let cq = SDCallbackQueue(mainLoop: loop.queue)
        let onLoop = LockedBox([Bool]())
        // from this (another) thread: queued, then run by the loop on its thread
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            cq.async {
                onLoop.withLock { $0.append(loop.queue.isMainLoopThread) }
                // on the loop: safeExecute runs inline, before this block returns
                let inline = LockedBox(false)
                cq.async { inline.withLock { $0 = true } }
                onLoop.withLock { $0.append(inline.current) }
                c.resume()
            }
        }
        #expect(onLoop.current == [true, true])
        var ran = false
        cq.sync { ran = loop.queue.isMainLoopThread }
        #expect(ran)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            cq.asyncAfter(deadline: .now() + 0.01) {
                onLoop.withLock { $0.append(loop.queue.isMainLoopThread) }
                c.resume()
            }
        }
        #expect(onLoop.current == [true, true, true])
    }

    @Test("A view on a main-loop queue: the placeholder, the image and the completion all run inside the loop")
    func viewOnTheLoop() async throws {
        let s = try #require(servers)
        let loop = LoopThread()
        defer { loop.stop() }
        final class LoopView: SDWebImageView, @unchecked Sendable {
            // @unchecked: `shown` is touched on the loop's thread only
            let sd_webImageState = SDWebImageViewState()
            let sd_viewQueue: SDCallbackQueue
            let loop: SDMainLoopQueue
            var shown: [(Int?, Bool)] = []
            init(_ loop: SDMainLoopQueue) { self.loop = loop; sd_viewQueue = SDCallbackQueue(mainLoop: loop) }
            func sd_display(_ image: SDImage?) { shown.append((image?.width, loop.isMainLoopThread)) }
        }
        let view = LoopView(loop.queue)
        let (m, _) = makeManager()
        let url = s.url(s.http, "/img/n4.jpg")
        let result = await withCheckedContinuation { (c: CheckedContinuation<(Bool, [(Int?, Bool)]), Never>) in
            view.sd_viewQueue.async {  // sd_setImage is called on the view's queue: the loop
                view.sd_setImage(with: url, context: [.customManager: m], completed: { image, _, _, _ in
                    c.resume(returning: (loop.queue.isMainLoopThread && image != nil, view.shown))
                })
            }
        }
        #expect(result.0)
        #expect(result.1.map { $0.0 } == [nil, 20] && result.1.allSatisfy { $0.1 }, "\(result.1)")
        #expect(loop.wakes >= 1)
    }

    @Test("The display clock on a main loop ticks inside it, and not once stopped")
    func clockOnTheLoop() async throws {
        let q = SDMainLoopQueue()  // drained by hand here: this thread is its loop
        let clock = SDAnimatedImageDisplayClock(mainLoop: q, framesPerSecond: 100)
        let ticks = LockedBox(0)
        clock.start { ticks.withLock { $0 += 1 } }
        // the timer queues a tick (one at a time) for the loop to run
        var waited = 0
        while q.pendingCount == 0 && waited < 60_000 { try await Task.sleep(nanoseconds: 1_000_000); waited += 1 }
        #expect(q.pendingCount == 1)
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(q.pendingCount == 1, "an undrained tick is not queued twice")
        q.drain()
        #expect(ticks.current == 1)
        while q.pendingCount == 0 && waited < 120_000 { try await Task.sleep(nanoseconds: 1_000_000); waited += 1 }
        clock.stop()
        q.drain()  // the tick queued before stop does not run
        #expect(ticks.current == 1)
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(q.pendingCount == 0, "stopped: nothing wakes the loop")
    }
}
