/**
 * Where a JSON text stands at a byte offset, followed a byte at a time: the open objects and
 * arrays (with the key each object is at) and whether a string is open. The body tail
 * (`body_tail.ts`) judges a long JSON body in windows; a window that starts inside the document
 * gets {@link JsonTrack.prefix} in front, so the lenient scanner reads the strings in it as strings,
 * under their keys, instead of taking the middle of the document for text.
 */

/** Open containers followed; deeper ones are counted, not kept. */
const MAX_DEPTH = 32;
/** Characters of a key kept for the path. */
const MAX_KEY = 64;

interface Frame {
  readonly array: boolean;
  key: string;
  /** In an object: after `:` until the value ends. */
  value: boolean;
}

export class JsonTrack {
  readonly #frames: Frame[] = [];
  #overflow = 0;
  #inString = false;
  #escape = false;
  #isKey = false;
  #key = "";

  /** Follows `bytes[from..to)` (UTF-8 or any ASCII-compatible charset). */
  feed(bytes: Uint8Array, from: number, to: number): void {
    const frames = this.#frames;
    for (let i = from; i < to; i++) {
      const b = bytes[i]!;
      if (this.#inString) {
        if (this.#escape) this.#escape = false;
        else if (b === 0x5c) this.#escape = true;
        else if (b === 0x22) {
          this.#inString = false;
          if (this.#isKey) frames[frames.length - 1]!.key = this.#key;
          continue;
        }
        if (this.#isKey && this.#key.length < MAX_KEY) this.#key += String.fromCharCode(b);
        continue;
      }
      const top = frames[frames.length - 1];
      switch (b) {
        case 0x22: // "
          this.#inString = true;
          this.#isKey = top !== undefined && !top.array && !top.value && this.#overflow === 0;
          this.#key = "";
          break;
        case 0x7b: // {
        case 0x5b: // [
          if (frames.length < MAX_DEPTH && this.#overflow === 0) {
            frames.push({ array: b === 0x5b, key: "", value: false });
          } else this.#overflow++;
          break;
        case 0x7d: // }
        case 0x5d: // ]
          if (this.#overflow > 0) this.#overflow--;
          else {
            frames.pop();
            const parent = frames[frames.length - 1];
            if (parent !== undefined && !parent.array) parent.value = false;
          }
          break;
        case 0x2c: // ,
          if (top !== undefined && !top.array && this.#overflow === 0) top.value = false;
          break;
        case 0x3a: // :
          if (top !== undefined && !top.array && this.#overflow === 0) top.value = true;
          break;
      }
    }
  }

  /**
   * JSON that reopens the containers open here (`{"user":{"roles":[`), and a quote when a string
   * is open, so what follows reads as it does in the whole document.
   */
  prefix(): string {
    let out = "";
    for (const f of this.#frames) {
      out += f.array ? "[" : f.value ? `{${JSON.stringify(f.key)}:` : "{";
    }
    return this.#inString ? `${out}"` : out;
  }
}
