/**
 * Size limits shared by the inspector and the detectors.
 *
 * The inspector never hands a detector more than {@link MAX_TEXT} characters: longer values
 * are judged in overlapping windows of that size, so a detector's cost per call is bounded
 * and a request's cost grows linearly with its size.
 */

/** Characters one detector call reads at most; also the window size for long values. */
export const MAX_TEXT = 16384;
/** Overlap between consecutive windows: any fragment this long lies whole in one window. */
export const WINDOW_OVERLAP = 4096;
