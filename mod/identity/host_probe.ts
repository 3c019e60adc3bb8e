/** What the setup page shows about the host, and the protection level it suggests. */
import type { Random } from "../core/random.ts";
import { randomHex } from "../core/random.ts";

export type ProtectionLevel = "low" | "balanced" | "strict";

export interface HostProbe {
  readonly cpu_cores: number;
  readonly memory_total_bytes: number | null;
  readonly memory_available_bytes: number | null;
  readonly disk_writable: boolean;
  readonly suggested_profile: ProtectionLevel;
}

const GIB = 1024 ** 3;

/**
 * `balanced` blocks high-confidence findings and suits most sites. A host with fewer than two
 * cores or under 1 GiB of memory gets `low` (fewer blocks, fewer false positives to chase on
 * a small box); `strict` is never suggested because it trades false positives for coverage,
 * which is a choice for the operator, not a default.
 */
export function suggestProfile(cores: number, memoryBytes: number | null): ProtectionLevel {
  if (cores < 2 || (memoryBytes !== null && memoryBytes < GIB)) return "low";
  return "balanced";
}

async function diskWritable(dataDir: string, random: Random): Promise<boolean> {
  const path = `${dataDir}/.probe-${randomHex(random, 8)}`;
  try {
    await Deno.writeTextFile(path, "probe", { createNew: true, mode: 0o600 });
    await Deno.remove(path);
    return true;
  } catch {
    return false;
  }
}

export async function probeHost(dataDir: string, random: Random): Promise<HostProbe> {
  const cores = navigator.hardwareConcurrency || 1;
  let total: number | null = null;
  let available: number | null = null;
  try {
    const mem = Deno.systemMemoryInfo();
    total = mem.total;
    available = mem.available;
  } catch { /* not permitted: report unknown */ }
  return {
    cpu_cores: cores,
    memory_total_bytes: total,
    memory_available_bytes: available,
    disk_writable: await diskWritable(dataDir, random),
    suggested_profile: suggestProfile(cores, total),
  };
}
