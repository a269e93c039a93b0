#if Serve
import Foundation
import SDWebImage

/// A request the URL does not describe (400) or does not sign (403).
public struct ProcessingURLError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable { case malformed, forbidden }
    public let kind: Kind
    public let reason: String
    public var description: String { reason }
    static func bad(_ reason: String) -> Self { Self(kind: .malformed, reason: reason) }
}

/// One processing URL, parsed: `/%signature/%options/plain/%url@%ext` or
/// `/%signature/%options/%base64url_url.%ext` (imgproxy's formats).
/// imgproxy's presets: named lists of processing options (`IMGPROXY_PRESETS`,
/// `--preset name=opt:arg/opt:arg`); `pr:name:name` applies them where it
/// stands, and the one named `default` comes before every URL's options.
public struct Presets: Sendable {
    var options: [String: [Substring]] = [:]

    public init() {}

    /// `name=options` (options as in a URL, `/`-separated); each option is
    /// checked now, so a bad preset stops the server from starting.
    public mutating func add(_ definition: String) throws(ProcessingURLError) {
        guard let eq = definition.firstIndex(of: "="), eq != definition.startIndex else {
            throw .bad("a preset is name=options, not \"\(definition)\"")
        }
        let name = String(definition[..<eq]).trimmingCharacters(in: .whitespaces)
        let segments = definition[definition.index(after: eq)...].split(separator: "/")
        var probe = ProcessingOptions()
        for seg in segments where !seg.isEmpty {
            guard !seg.hasPrefix("pr:"), !seg.hasPrefix("preset:") else { throw .bad("preset \(name): presets do not nest") }
            try ProcessingRequest.apply(seg, to: &probe)
        }
        options[name] = segments.filter { !$0.isEmpty }
    }

    func apply(_ names: [String], to o: inout ProcessingOptions, skipMissing: Bool = false) throws(ProcessingURLError) {
        for name in names where !name.isEmpty {
            guard let segments = options[name] else {
                if skipMissing { continue }
                throw .bad("unknown preset \"\(name)\"")
            }
            for seg in segments { try ProcessingRequest.apply(seg, to: &o) }
        }
    }
}

public struct ProcessingRequest: Sendable, Equatable {
    public var options: ProcessingOptions
    /// The source image's URL.
    public var source: String

    /// Parse `path` (the request's path, percent-encoded as it came). With
    /// a `signer`, the first segment must be the path's signature (else
    /// `.forbidden`); without, it is not checked ("insecure" by custom).
    public init(path: Substring, signer: URLSigner?, presets: Presets = Presets()) throws(ProcessingURLError) {
        guard path.hasPrefix("/") else { throw .bad("the path must start with /") }
        let afterRoot = path.dropFirst()
        guard let slash = afterRoot.firstIndex(of: "/") else { throw .bad("no processing options or source after the signature") }
        let signature = afterRoot[afterRoot.startIndex..<slash]
        let signed = afterRoot[slash...]
        if let signer, !signer.verify(signature, path: signed) {
            throw ProcessingURLError(kind: .forbidden, reason: "invalid signature")
        }
        var options = ProcessingOptions()
        try presets.apply(["default"], to: &options, skipMissing: true)  // imgproxy's default preset, first
        // Walked in place, segment by segment (no split and join: a hit's
        // whole answer costs less than parsing did that way).
        var rest = signed.dropFirst()
        func segment() -> (Substring, after: Substring) {
            guard let slash = rest.firstIndex(of: "/") else { return (rest, rest[rest.endIndex...]) }
            return (rest[..<slash], rest[rest.index(after: slash)...])
        }
        // options until "plain" or a segment without ":" (the base64 source)
        while case let (seg, after) = segment(), seg != "plain", seg.contains(":") {
            if seg.hasPrefix("pr:") || seg.hasPrefix("preset:") {
                try presets.apply(seg.split(separator: ":", omittingEmptySubsequences: false).dropFirst().map(String.init),
                                  to: &options)
            } else {
                try Self.apply(seg, to: &options)
            }
            rest = after
        }
        let (first, afterFirst) = segment()
        guard !first.isEmpty else { throw .bad("no source URL") }
        var source: String
        var ext: Substring?
        if first == "plain" {
            var plain = afterFirst  // the rest of the path, its slashes kept
            if let at = plain.lastIndex(of: "@") {
                ext = plain[plain.index(after: at)...]
                plain = plain[..<at]
            }
            guard let decoded = Self.percentDecoded(plain), !decoded.isEmpty else {
                throw .bad("the plain source URL is not valid percent-encoding")
            }
            source = decoded
        } else {
            var encoded = String(rest.filter { $0 != "/" })  // the segments joined
            if let dot = encoded.lastIndex(of: ".") {
                ext = Substring(encoded[encoded.index(after: dot)...])
                encoded = String(encoded[..<dot])
            }
            var b64 = encoded.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 }
            while b64.count % 4 != 0 { b64.append("=") }
            guard let data = Data(base64Encoded: String(b64)), let s = String(data: data, encoding: .utf8), !s.isEmpty else {
                throw .bad("the source URL is not URL-safe base64")
            }
            source = s
        }
        if let ext, !ext.isEmpty {
            guard let f = OutputFormat(name: String(ext)) else { throw .bad("unknown output format \"\(ext)\"") }
            options.format = f
        }
        guard Self.isHTTPURL(source) else { throw .bad("the source must be an absolute http or https URL") }
        self.options = options
        self.source = source
    }

    /// `s` with its %XX escapes decoded; nil when an escape is broken or the
    /// bytes are not UTF-8 (as Foundation's `removingPercentEncoding`).
    static func percentDecoded(_ s: Substring) -> String? {
        guard s.utf8.contains(UInt8(ascii: "%")) else { return String(s) }
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        var it = s.utf8.makeIterator()
        while let b = it.next() {
            guard b == UInt8(ascii: "%") else { bytes.append(b); continue }
            guard let h = it.next().flatMap(hex), let l = it.next().flatMap(hex) else { return nil }
            bytes.append(h << 4 | l)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// An absolute http or https URL with a host (checked by hand: the
    /// render parses it with Foundation before it loads anything; a hit
    /// needs no more than this).
    static func isHTTPURL(_ s: String) -> Bool {
        let scheme = s.prefix(8).lowercased()
        let afterScheme: Substring
        if scheme.hasPrefix("http://") {
            afterScheme = s.dropFirst(7)
        } else if scheme.hasPrefix("https://") {
            afterScheme = s.dropFirst(8)
        } else {
            return false
        }
        var host = afterScheme.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = host.lastIndex(of: "@") { host = host[host.index(after: at)...] }  // after any user:password
        if host.hasPrefix("[") { return host.count > 2 && host.contains("]") }  // an IPv6 literal
        if let colon = host.lastIndex(of: ":") { host = host[..<colon] }  // before the port
        return !host.isEmpty
    }

    /// A gravity and its offsets, `type:x:y` (missing: the centre, 0, 0);
    /// a focus point's x and y are fractions, 0...1.
    static func gravity(_ args: [Substring], _ name: Substring, smart: Bool = false) throws(ProcessingURLError) -> (Gravity, Double, Double) {
        guard let first = args.first, !first.isEmpty else { return (.ce, 0, 0) }
        guard let g = Gravity(rawValue: String(first)) else { throw .bad("\(name): unknown gravity \"\(first)\"") }
        // a smart cut needs the decoded pixels: the box's cut has them, a
        // source crop or an extend is placed before
        if g == .sm && !smart { throw .bad("\(name): gravity sm (smart) is for the box's cut (g) only") }
        var (x, y) = (0.0, 0.0)
        if args.count > 1, !args[1].isEmpty { guard let v = Double(args[1]), v.isFinite else { throw .bad("\(name): bad x offset") }; x = v }
        if args.count > 2, !args[2].isEmpty { guard let v = Double(args[2]), v.isFinite else { throw .bad("\(name): bad y offset") }; y = v }
        if g == .fp, !(0...1).contains(x) || !(0...1).contains(y) { throw .bad("\(name): a focus point's x and y are 0...1") }
        return (g, x, y)
    }

    /// One `name:arg:arg` option (a preset's too).
    static func apply(_ seg: Substring, to o: inout ProcessingOptions) throws(ProcessingURLError) {
        let parts = seg.split(separator: ":", omittingEmptySubsequences: false)
        let name = parts[0], args = Array(parts.dropFirst())
        func int(_ i: Int, _ what: String) throws(ProcessingURLError) -> Int? {
            guard i < args.count, !args[i].isEmpty else { return nil }
            guard let v = Int(args[i]), v >= 0, v <= 1 << 16 else { throw .bad("\(name): \(what) must be 0...65536, not \"\(args[i])\"") }
            return v
        }
        func bool(_ i: Int) throws(ProcessingURLError) -> Bool? {
            guard i < args.count, !args[i].isEmpty else { return nil }
            switch args[i].lowercased() {
            case "1", "t", "true": return true
            case "0", "f", "false": return false
            default: throw .bad("\(name): \"\(args[i])\" is not a boolean (1, t, true, 0, f, false)")
            }
        }
        func type(_ s: Substring) throws(ProcessingURLError) -> ResizingType {
            guard let t = ResizingType(rawValue: String(s)) else {
                throw .bad("unknown resizing type \"\(s)\" (fit, fill, fill-down, force, auto)")
            }
            return t
        }
        switch name {
        case "resize", "rs":
            if let t = args.first, !t.isEmpty { o.resizingType = try type(t) }
            if let w = try int(1, "width") { o.width = w }
            if let h = try int(2, "height") { o.height = h }
            if let e = try bool(3) { o.enlarge = e }
            if let e = try bool(4) { o.extend = e ? try gravity(Array(args.dropFirst(5)), "\(name): extend") : nil }
        case "size", "s":
            if let w = try int(0, "width") { o.width = w }
            if let h = try int(1, "height") { o.height = h }
            if let e = try bool(2) { o.enlarge = e }
            if let e = try bool(3) { o.extend = e ? try gravity(Array(args.dropFirst(4)), "\(name): extend") : nil }
        case "resizing_type", "rt":
            guard let t = args.first else { throw .bad("\(name): a resizing type is required") }
            o.resizingType = try type(t)
        case "width", "w":
            guard let w = try int(0, "width") else { throw .bad("\(name): a width is required") }
            o.width = w
        case "height", "h":
            guard let h = try int(0, "height") else { throw .bad("\(name): a height is required") }
            o.height = h
        case "dpr":
            guard let s = args.first, let d = Double(s), d > 0, d <= 8 else { throw .bad("dpr must be in (0, 8]") }
            o.dpr = d
        case "enlarge", "el":
            o.enlarge = try bool(0) ?? false
        case "gravity", "g":
            guard let g = args.first, !g.isEmpty else { throw .bad("\(name): a gravity type is required") }
            (o.gravity, o.gravityX, o.gravityY) = try gravity(args, name, smart: true)
        case "extend", "ex":
            o.extend = try bool(0) == true ? try gravity(Array(args.dropFirst()), name) : nil
        case "extend_aspect_ratio", "extend_ar", "exar":
            o.extendAspectRatio = try bool(0) == true ? try gravity(Array(args.dropFirst()), name) : nil
        case "padding", "pd":
            // CSS's shorthand: top, then right (else top), bottom (else top), left (else right)
            let t = try int(0, "top") ?? 0, r = try int(1, "right") ?? t
            o.padding = (t, r, try int(2, "bottom") ?? t, try int(3, "left") ?? r)
        case "min-width", "min_width", "mw":
            o.minWidth = try int(0, "min width") ?? 0
        case "min-height", "min_height", "mh":
            o.minHeight = try int(0, "min height") ?? 0
        case "zoom", "z":
            func factor(_ i: Int) throws(ProcessingURLError) -> Double? {
                guard i < args.count, !args[i].isEmpty else { return nil }
                guard let v = Double(args[i]), v > 0, v <= 64 else { throw .bad("\(name): a zoom must be above 0, at most 64") }
                return v
            }
            guard let x = try factor(0) else { throw .bad("\(name): a zoom is required") }
            o.zoom = (x, try factor(1) ?? x)
        case "quality", "q":
            guard let s = args.first, let q = Int(s), (0...100).contains(q) else { throw .bad("quality must be 0...100") }
            o.quality = q == 0 ? nil : q  // 0: the default, as imgproxy
        case "format", "f", "ext":
            guard let s = args.first else { throw .bad("\(name): a format is required") }
            if s == "auto" { o.format = nil; break }
            guard let f = OutputFormat(name: String(s)) else { throw .bad("unknown output format \"\(s)\"") }
            o.format = f
        case "background", "bg":
            if args.count == 3 {
                guard let r = UInt8(args[0]), let g = UInt8(args[1]), let b = UInt8(args[2]) else {
                    throw .bad("background: r:g:b, each 0...255")
                }
                o.background = (r, g, b)
            } else if args.count == 1, args[0].count == 6, let v = UInt32(args[0], radix: 16) {
                o.background = (UInt8(v >> 16), UInt8(v >> 8 & 0xff), UInt8(v & 0xff))
            } else if args.count == 1, args[0].isEmpty {
                o.background = nil
            } else {
                throw .bad("background: r:g:b or a hex colour (RRGGBB)")
            }
        case "auto_rotate", "ar":
            o.autoRotate = try bool(0) ?? true
        case "rotate", "rot":
            guard let s = args.first, let a = Int(s), a % 90 == 0 else { throw .bad("rotate: 0, 90, 180 or 270 degrees") }
            o.rotate = ((a % 360) + 360) % 360
        case "flip", "fl":
            o.flipHorizontal = try bool(0) ?? false
            o.flipVertical = try bool(1) ?? false
        case "crop", "c":
            func side(_ i: Int) throws(ProcessingURLError) -> Double {
                guard i < args.count, !args[i].isEmpty else { return 0 }
                guard let v = Double(args[i]), v >= 0, v <= 65536 else { throw .bad("crop: a side must be 0...65536") }
                return v
            }
            var c = (width: try side(0), height: try side(1), gravity: Gravity?.none, x: 0.0, y: 0.0)
            if args.count > 2, !args[2].isEmpty {
                let (g, x, y) = try gravity(Array(args.dropFirst(2)), "crop")
                (c.gravity, c.x, c.y) = (g, x, y)
            }
            o.crop = c
        case "cachebuster", "cb":
            break  // changes the URL, not the image (imgproxy's rule)
        case "expires", "exp":
            guard let s = args.first, let t = Int64(s) else { throw .bad("expires: a Unix timestamp") }
            o.expires = t
        case "filename", "fn":
            guard let s = args.first, !s.isEmpty else { throw .bad("filename: a name is required") }
            if try bool(1) == true {
                var b64 = String(s).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                b64 += String(repeating: "=", count: (4 - b64.count % 4) % 4)
                guard let d = Data(base64Encoded: b64), let name = String(data: d, encoding: .utf8) else {
                    throw .bad("filename: not URL-safe base64 of UTF-8")
                }
                o.filename = name
            } else {
                o.filename = String(s).removingPercentEncoding ?? String(s)
            }
        case "return_attachment", "att":
            o.attachment = try bool(0) ?? false
        case "strip_metadata", "sm":
            if try bool(0) == false { throw .bad("strip_metadata:0 cannot be honoured: results never carry the source's metadata") }
        case "keep_copyright", "kcr":
            if try bool(0) == true { throw .bad("keep_copyright:1 cannot be honoured: results never carry the source's metadata") }
        case "max_bytes", "mb":
            guard let s = args.first, let n = Int(s), n >= 0 else { throw .bad("max_bytes: a number of bytes") }
            o.maxBytes = n == 0 ? nil : n
        case "format_quality", "fq":
            guard !args.isEmpty, args.count % 2 == 0 else { throw .bad("format_quality: format:quality pairs") }
            for i in stride(from: 0, to: args.count, by: 2) {
                guard let f = OutputFormat(name: String(args[i])), let q = Int(args[i + 1]), (0...100).contains(q) else {
                    throw .bad("format_quality: \"\(args[i]):\(args[i + 1])\" is not a format and a quality 0...100")
                }
                o.formatQuality[f] = q == 0 ? nil : q
            }
        case "sharpen", "sh":
            guard let s = args.first, let sigma = Double(s), sigma >= 0, sigma <= 100 else { throw .bad("sharpen: a sigma in 0...100") }
            o.sharpenSigma = sigma
        case "pixelate", "pix":
            guard let s = args.first, let n = Int(s), n >= 0, n <= 4096 else { throw .bad("pixelate: a block size in 0...4096") }
            o.pixelate = n
        case "blur", "bl":
            guard let s = args.first, let sigma = Double(s), sigma >= 0, sigma <= 100 else { throw .bad("blur: a sigma in 0...100") }
            o.blurSigma = sigma
        default:
            throw .bad("unknown processing option \"\(name)\"")
        }
    }
}
#endif
