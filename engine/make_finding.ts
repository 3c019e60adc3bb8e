/**
 * Builds findings for the per-class detectors, so that every detector derives the confidence
 * band from the score the same way and clips evidence to the contract's 120 characters.
 */
import type { AttackClass, Confidence, DetectorInput, Finding } from "./types.ts";

/** Maps a 0..100 score to its band: low <40, medium 40-69, high 70-89, critical 90+. */
export function confidenceOf(score: number): Confidence {
  if (score >= 90) return "critical";
  if (score >= 70) return "high";
  if (score >= 40) return "medium";
  return "low";
}

/**
 * Creates a finding for one input.
 *
 * @param value the input the finding is about
 * @param cls the attack class
 * @param score 0..100, clamped
 * @param ruleId stable rule identifier such as `cmdi.separator_command`
 * @param text the text the evidence is cut from
 * @param at start of the evidence in `text`
 */
export function makeFinding(
  value: DetectorInput,
  cls: AttackClass,
  score: number,
  ruleId: string,
  text: string,
  at: number,
): Finding {
  const clamped = score < 0 ? 0 : score > 100 ? 100 : score;
  const start = at < 0 ? 0 : at;
  return {
    class: cls,
    confidence: confidenceOf(clamped),
    score: clamped,
    location: value.location,
    evidence: text.slice(start, start + 120),
    ruleId,
  };
}

/** Returns the stronger of two optional findings (the first one on a tie). */
export function stronger(a: Finding | undefined, b: Finding | undefined): Finding | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return b.score > a.score ? b : a;
}
