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
    /// The dispatch queue blocks go to.
    public let queue: DispatchQueue
    private let _policy: Locked<SDCallbackPolicy>
    private let isMain: Bool
    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    /// Blocks on `queue` by `policy`.
    public init(dispatchQueue queue: DispatchQueue, policy: SDCallbackPolicy = .safeExecute) {
        self.queue = queue
        _policy = Locked(policy)
        isMain = queue === DispatchQueue.main
        if policy == .safeExecute { tag() }  // .dispatch (what a plain queue in a context means) never asks
    }

    /// Tag the queue so a block can tell it is already on it (the main queue
    /// is told by the thread; global queues cannot be tagged, so safeExecute
    /// on them always dispatches).
    private func tag() {
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
        isMain ? Thread.isMainThread : DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(queue)
    }

    /// Run `block` by the policy, without waiting when it goes to the queue.
    public func async(execute block: @escaping @Sendable () -> Void) {
        switch policy {
        case .invoke: block()
        case .safeExecute where isCurrent: block()
        default: queue.async(execute: block)
        }
    }

    /// Run `block` by the policy and wait for it (never deadlocks on its own queue).
    public func sync(execute block: () -> Void) {
        tag()  // from its own queue it must run inline, whatever the policy
        switch policy {
        case .invoke: block()
        case _ where isCurrent: block()
        default: queue.sync(execute: block)
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
