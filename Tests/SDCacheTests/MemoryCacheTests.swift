import Foundation
import SDCache
import Testing

@Suite("MemoryCache: strict LRU with cost and count limits")
struct MemoryCacheTests {
    @Test("Least recently used goes first; a hit refreshes recency")
    func lru() {
        let c = MemoryCache<String, Int>(countLimit: 3)
        c.setValue(1, forKey: "a")
        c.setValue(2, forKey: "b")
        c.setValue(3, forKey: "c")
        #expect(c.value(forKey: "a") == 1)  // a is now the newest
        c.setValue(4, forKey: "d")          // evicts b
        #expect(c.value(forKey: "b") == nil)
        #expect(c.value(forKey: "a") == 1 && c.value(forKey: "c") == 3 && c.value(forKey: "d") == 4)
        #expect(c.totalCount == 3)
    }

    @Test("Cost limit: replacing updates the cost; a value over the limit is not kept; trims")
    func cost() {
        let c = MemoryCache<Int, String>(costLimit: 100)
        c.setValue("x", forKey: 1, cost: 60)
        c.setValue("y", forKey: 2, cost: 30)
        #expect(c.totalCost == 90)
        c.setValue("x2", forKey: 1, cost: 10)
        #expect(c.totalCost == 40 && c.value(forKey: 1) == "x2")
        c.setValue("big", forKey: 3, cost: 101)
        #expect(c.value(forKey: 3) == nil)
        c.setValue("z", forKey: 4, cost: 50)  // 10 + 30 + 50
        #expect(c.totalCost == 90 && c.totalCount == 3)
        c.trim(toCost: 60)  // oldest first: 2 (30) then 1 (10)... 1 was touched last by the read above
        #expect(c.totalCost <= 60 && c.value(forKey: 4) == "z")
        c.costLimit = 10
        #expect(c.totalCost <= 10)
        #expect(c.removeValue(forKey: 4) == nil || c.totalCost == 0)
        c.removeAll()
        #expect(c.totalCount == 0 && c.totalCost == 0)
    }

    @Test("Many threads reading, writing and evicting keep the totals consistent")
    func concurrent() {
        let c = MemoryCache<Int, Int>(costLimit: 1000, countLimit: 50)
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 0..<5000 {
                let k = (i * 7 + t) % 200
                switch i % 4 {
                case 0, 1: c.setValue(i, forKey: k, cost: k % 30)
                case 2: _ = c.value(forKey: k)
                default: c.removeValue(forKey: k)
                }
            }
        }
        #expect(c.totalCount <= 50 && c.totalCost <= 1000)
        var sum = 0
        for k in 0..<200 { if c.value(forKey: k) != nil { sum += k % 30 } }
        #expect(sum == c.totalCost)
    }

    @Test("Entry cost limit: a value over it is not kept (and drops the old one under its key)")
    func entryCost() {
        let c = MemoryCache<Int, String>(costLimit: 1000)
        c.entryCostLimit = 100
        c.setValue("a", forKey: 1, cost: 100)
        c.setValue("b", forKey: 2, cost: 60)
        #expect(c.value(forKey: 1) == "a" && c.totalCost == 160)
        c.setValue("huge", forKey: 3, cost: 101)
        #expect(c.value(forKey: 3) == nil && c.totalCount == 2)  // nothing else pushed out
        c.setValue("b2", forKey: 2, cost: 500)
        #expect(c.value(forKey: 2) == nil && c.totalCost == 100)
        c.entryCostLimit = 0  // only the whole limit
        c.setValue("huge", forKey: 3, cost: 800)
        #expect(c.value(forKey: 3) == "huge")
    }

    @Test("Age limit: an entry older than it is a miss and goes; a store restarts its age; removeExpired sweeps")
    func ageLimit() {
        // margins of 1 s both ways: a stall under TSan cannot flip an answer
        let c = MemoryCache<Int, Int>()
        c.ageLimit = 1
        c.setValue(1, forKey: 1)
        #expect(c.value(forKey: 1) == 1)
        usleep(2_000_000)
        #expect(c.value(forKey: 1) == nil && c.totalCount == 0)
        for k in 0..<5 { c.setValue(k, forKey: k, cost: 1) }
        usleep(2_000_000)
        c.setValue(9, forKey: 3, cost: 1)  // stored again: young
        c.setValue(10, forKey: 10, cost: 1)
        #expect(c.removeExpired() == 4)
        #expect(c.totalCount == 2 && c.totalCost == 2 && c.value(forKey: 3) == 9 && c.value(forKey: 10) == 10)
        c.ageLimit = 0
        usleep(1_200_000)
        #expect(c.removeExpired() == 0 && c.value(forKey: 3) == 9)
    }
}
