import { assertEquals } from "../../_helpers/assert.ts";
import { isSecretName, maskConfigValue, scrubText } from "../../../mod/core/redact.ts";
import { maskSecrets } from "../../../mod/core/logger.ts";
import { safeEvidence, safeQuery } from "../../../mod/access_log/record.ts";

const SECRET = ["password", "api_key", "X-Auth-Token", "session_id", "dsn", "sig", "totp_secret"];
const PLAIN = ["username", "path", "status", "host", "trace_id", "role"];

Deno.test("isSecretName() is the one rule: config, log fields, query parameters and free text agree", () => {
  for (const name of SECRET) {
    assertEquals(isSecretName(name), true, name);
    assertEquals(maskConfigValue({ [name]: "v" }), { [name]: "[masked]" }, name);
    assertEquals(maskSecrets({ [name]: "v" }), { [name]: "[masked]" }, name);
    assertEquals(safeQuery(`${name}=v`), `${name}=[masked]`, name);
    assertEquals(safeEvidence(`header:${name}`, "v"), "[masked: 1 characters]", name);
    assertEquals(scrubText(`${name}=v1`), `${name}=[masked]`, name);
    assertEquals(scrubText(`{"${name}":"v1"}`), `{"${name}":"[masked]"}`, name);
  }
  for (const name of PLAIN) {
    assertEquals(isSecretName(name), false, name);
    assertEquals(maskConfigValue({ [name]: "v" }), { [name]: "v" }, name);
    assertEquals(maskSecrets({ [name]: "v" }), { [name]: "v" }, name);
    assertEquals(safeQuery(`${name}=v`), `${name}=v`, name);
    assertEquals(scrubText(`${name}=v1`), `${name}=v1`, name);
  }
});

Deno.test("maskConfigValue() keeps flags under secret-looking names readable", () => {
  assertEquals(
    maskConfigValue({ verify_signature: true, public_keys: ["k"], key_file: "" }),
    { verify_signature: true, public_keys: ["[masked]"], key_file: "" },
  );
});
