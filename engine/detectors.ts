/**
 * Registry of the per-class detectors other than SQL injection and XSS.
 *
 * The inspect orchestrator runs every detector of this list on every decoded input; order
 * matters only for ties, so the cheapest detectors come first.
 */
import type { Detector } from "./types.ts";
import { jndi } from "./jndi.ts";

export const DETECTORS: readonly Detector[] = [jndi];
