import Dispatch
import Foundation
import SDSync

/// How an `SDCallbackQueue` runs a block (SDWebImage 5.17's `SDCallbackPolicy`).
public enum SDCallbackPolicy: Int, Sendable {
    /// Right away when already on the queue, else asynchronously on it.
    case safeExecute = 0
    /// Always asynchronously on the queue.
    case dispatch = 1
    /// Right away, on whatever thread is calling (the queue is not used).
    case invoke = 2
}

/// Where and how completion and progress blocks run: a dispatch queue plus a
/// policy. The `.callbackQueue` context key takes one (or a plain
/// `DispatchQueue`, which means `.dispatch` on it).
public final class SDCallbackQueue: Sendable {
    /// The dispatch queue blocks go to. For a main-loop queue
    /// (``init(mainLoop:policy:)``) a private serial queue the callbacks do
    /// not run on: use ``async(execute:)`` and ``asyncAfter(deadline:execute:)``.
    public let queue: DispatchQueue
    /// The main loop blocks go to, when made with ``init(mainLoop:policy:)``.
    public let mainLoop: SDMainLoopQueue?
    private let _policy: Locked<SDCallbackPolicy>
    private let isMain: Bool
    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    /// Blocks on `queue` by `policy`.
    public init(dispatchQueue queue: DispatchQueue, policy: SDCallbackPolicy = .safeExecute) {
        self.queue = queue
        mainLoop = nil
        _policy = Locked(policy)
        isMain = queue === DispatchQueue.main
        if policy == .safeExecute { tag() }  // .dispatch (what a plain queue in a context means) never asks
    }

    /// Blocks into your program's main loop (a GLib main context, an SDL
    /// event loop) by `policy`: `.safeExecute` runs a block at once when
    /// called on the loop's thread, else it waits for the loop's
    /// ``SDMainLoopQueue/drain()``.
    public init(mainLoop: SDMainLoopQueue, policy: SDCallbackPolicy = .safeExecute) {
        self.mainLoop = mainLoop
        queue = DispatchQueue(label: "SDCallbackQueue.mainLoop")
        _policy = Locked(policy)
        isMain = false
    }

    /// Tag the queue so a block can tell it is already on it (the main queue
    /// is told by the thread; global queues cannot be tagged, so safeExecute
    /// on them always dispatches).
    private func tag() {
        guard mainLoop == nil else { return }  // told by its thread
        let id = ObjectIdentifier(queue)
        if !isMain, !queue.label.hasPrefix("com.apple.root."), queue.getSpecific(key: Self.key) != id {
            queue.setSpecific(key: Self.key, value: id)
        }
    }

    /// The main queue, safe-execute: only useful in a program that runs the main loop.
    public static let main = SDCallbackQueue(dispatchQueue: .main)
    /// The default global queue (always dispatched to: global queues cannot be told apart).
    public static let global = SDCallbackQueue(dispatchQueue: .global())

    /// How blocks run; changeable at any time.
    public var policy: SDCallbackPolicy {
        get { _policy.current }
        set {
            _policy.set(newValue)
            if newValue == .safeExecute { tag() }
        }
    }

    /// Whether the caller is running on this queue now.
    var isCurrent: Bool {
        if let mainLoop { return mainLoop.isMainLoopThread }
        return isMain ? Thread.isMainThread : DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(queue)
    }

    /// Run `block` by the policy, without waiting when it goes to the queue.
    public func async(execute block: @escaping @Sendable () -> Void) {
        switch policy {
        case .invoke: block()
        case .safeExecute where isCurrent: block()
        default:
            if let mainLoop { mainLoop.enqueue(block) } else { queue.async(execute: block) }
        }
    }

    /// Run `block` on the queue (or its main loop) at `deadline`, whatever the policy.
    public func asyncAfter(deadline: DispatchTime, execute block: @escaping @Sendable () -> Void) {
        if let mainLoop {
            DispatchQueue.global().asyncAfter(deadline: deadline) { mainLoop.enqueue(block) }
        } else {
            queue.asyncAfter(deadline: deadline, execute: block)
        }
    }

    /// Run `block` by the policy and wait for it (never deadlocks on its own queue).
    public func sync(execute block: () -> Void) {
        tag()  // from its own queue it must run inline, whatever the policy
        switch policy {
        case .invoke: block()
        case _ where isCurrent: block()
        default:
            guard let mainLoop else { return queue.sync(execute: block) }
            // from another thread: wait for the loop to run it (the loop must be running)
            withoutActuallyEscaping(block) { escaping in
                // The caller waits below until the loop has run it. The loop
                // lets go of the block it ran only after that block returns,
                // so the block holds `escaping` through a slot it empties
                // before it signals: by then nothing holds `escaping`, which
                // withoutActuallyEscaping checks (seen failing under TSan when
                // the block itself captured it).
                // (set here before the enqueue, whose lock orders it; read
                // and cleared on the loop's thread only)
                nonisolated(unsafe) var slot: (() -> Void)? = escaping
                let done = DispatchSemaphore(value: 0)
                mainLoop.enqueue {
                    slot?()
                    slot = nil
                    done.signal()
                }
                done.wait()
            }
        }
    }
}

extension SDCallbackQueue {
    /// Our default callbacks (`sdDefaultCallbackQueue`), every block dispatched.
    static let defaultCallbacks = SDCallbackQueue(dispatchQueue: sdDefaultCallbackQueue, policy: .dispatch)

    /// What the context says: an `SDCallbackQueue`, or a plain `DispatchQueue`
    /// (every block dispatched to it, as before 5.17).
    static func from(_ value: Any?) -> SDCallbackQueue? {
        if let q = value as? SDCallbackQueue { return q }
        if let q = value as? DispatchQueue { return SDCallbackQueue(dispatchQueue: q, policy: .dispatch) }
        return nil
    }
}
