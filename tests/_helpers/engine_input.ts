/**
 * Builds {@link DetectorInput} values for detector tests, the way the inspector would after
 * extraction and decoding.
 */
import type { DetectorInput, InputSource } from "../../engine/types.ts";

export interface InputOptions {
  readonly source?: InputSource;
  readonly name?: string;
  /** The raw value; defaults to the decoded text. */
  readonly raw?: string;
}

/**
 * Creates a detector input whose decoded text is `decoded`.
 *
 * @param decoded the fully decoded value
 * @param options source (default `query`), name (default `q`) and raw value
 */
export function engineInput(decoded: string, options: InputOptions = {}): DetectorInput {
  const source = options.source ?? "query";
  const name = options.name ?? "q";
  const raw = options.raw ?? decoded;
  return { input: { source, name, value: raw }, location: `${source}:${name}`, decoded, raw };
}
