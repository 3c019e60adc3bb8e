/**
 * Error reports (Sentry, Bugsnag, Rollbar envelopes) quote the application's own code and name
 * its own classes: the source lines around a stack frame, and each frame's module, class and
 * function. What a detector finds there is medium at most: a Java class name in a frame's
 * `module` is where an error happened, not a class a deserialiser is asked to load.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { confidenceOf } from "./make_finding.ts";

/**
 * JSON paths where error trackers put the source lines around a stack frame (Sentry's
 * `frames[].context_line`, `pre_context`, `post_context`; Bugsnag's `stacktrace[].code`;
 * Rollbar's `frames[].code` and `context.pre`/`post`), and the names of a frame's place
 * (Sentry's `module`, `function`, `package`; Bugsnag's `method`, `file`; Java agents'
 * `className`, `declaringClass`, `methodName`).
 */
const REPORT_PATH = new RegExp(
  "(?:^|\\.)(?:context_line|pre_context|post_context)(?:$|[.[])|" +
    "(?:^|\\.)(?:stacktrace|frames)(?:\\[\\d+\\])?\\.(?:code|context\\.(?:pre|post))(?:$|[.[])|" +
    "(?:stacktrace|stack_trace|stackTrace|frames)(?:\\[\\d+\\])?\\.(?:module|function|" +
    "raw_function|package|method|methodName|className|class_name|declaringClass|file|filename|" +
    "abs_path|symbol)$",
);
/** The most a finding in an error report's quoted code or frame names scores (strict only). */
export const REPORTED_CODE = 45;

/** `found`, capped at {@link REPORTED_CODE} when `value` is a JSON error report's code or frame. */
export function asReported(found: Finding | undefined, value: DetectorInput): Finding | undefined {
  return found !== undefined && found.score > REPORTED_CODE && value.input.source === "json" &&
      REPORT_PATH.test(value.input.name)
    ? { ...found, score: REPORTED_CODE, confidence: confidenceOf(REPORTED_CODE) }
    : found;
}
