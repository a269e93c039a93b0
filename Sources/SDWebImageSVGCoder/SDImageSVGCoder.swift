import SDWebImage

/// SVG, rendered by librsvg (SDWebImage's `SDWebImageSVGCoder` plugin).
///
/// Linking this module is what adds SVG: its C target (`CSDCoreSVG`, the
/// core's `CSources/decode/svg`) plugs the SVG codec row into the C core's
/// registry when the program starts, so `SDImageCodersManager`, the
/// downloader and `sdimage` decode SVG from then on with no registration
/// call — `ImageFormat.svg.capabilities` says `.decode`. librsvg (with cairo
/// and GLib) is loaded when the first SVG arrives, not linked: a program
/// pays nothing for it at start, and without librsvg installed an SVG fails
/// with `SD_EUNSUPPORTED` naming the library. A program that does not depend
/// on this product fails an SVG as a recognised, unsupported format.
///
/// An SVG renders at the request's size: `.imageThumbnailPixelSize` is the
/// box it is drawn into (larger than the document too — a vector stays
/// sharp), `.imagePreserveAspectRatio` false stretches it to the box;
/// without one, the document's own size at 96 dpi (its width/height, else
/// its viewBox, else the bounds of what it draws), shrunk to fit
/// `DecodeOptions.maxPixels`. No external reference is followed (only inline
/// `data:` images), elements are bounded and rendering has a deadline
/// (`SD_DEC_RENDER_DEADLINE_MS`, 10 s by default).
public enum SDImageSVGCoder {
    /// The coder of SVG, as SDWebImage's `SDImageSVGCoder.sharedCoder`:
    /// already among `SDImageCodersManager.shared`'s built-in coders once this
    /// module is linked; adding it again changes nothing.
    public static var shared: SDImageCoreCoder { SDImageCoreCoder(format: .svg) }

    /// True when SVG decodes in this process (the module is linked and its
    /// codec row plugged in).
    public static var isAvailable: Bool { ImageFormat.svg.capabilities.contains(.decode) }
}
