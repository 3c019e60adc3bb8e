/**
 * Over-the-air update settings. This build has no updater worker, so OTA cannot be enabled:
 * the keys of `update.ota` are reported, and every change to them is refused without effect.
 */
import type { Config } from "../config/config.ts";
import { AppError } from "../core/errors.ts";

export const OTA_RESERVED_KEYS = [
  "server",
  "channel",
  "check_interval",
  "auto_update_rules",
  "auto_update_binary",
  "verify_signature",
] as const;

export type OtaSettings = Config["update"]["ota"];

export interface OtaView {
  readonly settings: Omit<OtaSettings, "public_keys"> & { public_keys: number };
  /** Whether an updater exists in this runtime (never, in this build). */
  readonly available: false;
  readonly reserved_keys: readonly string[];
  readonly message: string;
}

export function createOta(settings: OtaSettings) {
  return {
    view(): OtaView {
      return {
        settings: { ...settings, public_keys: settings.public_keys.length },
        available: false,
        reserved_keys: OTA_RESERVED_KEYS,
        message:
          "OTA updates are unavailable in this build: there is no updater worker. The keys are reserved.",
      };
    },
    /**
     * Validates a requested change. Enabling OTA is refused with OTA_UPDATES_UNAVAILABLE; any
     * other change to a reserved key is refused with OTA_SETTING_RESERVED; nothing is changed.
     */
    update(patch: Partial<Omit<OtaSettings, "public_keys">>): OtaView {
      if (patch.enabled === true) {
        throw new AppError(
          501,
          "OTA_UPDATES_UNAVAILABLE",
          "OTA updates cannot be enabled: this build has no updater worker",
        );
      }
      const changed = OTA_RESERVED_KEYS.filter((k) =>
        patch[k] !== undefined && patch[k] !== settings[k]
      );
      if (changed.length > 0) {
        throw new AppError(
          409,
          "OTA_SETTING_RESERVED",
          `These update.ota keys are reserved and cannot be changed through the API: ${
            changed.join(", ")
          }`,
          { details: { reserved_keys: changed } },
        );
      }
      return this.view();
    },
  };
}

export type Ota = ReturnType<typeof createOta>;
