/**
 * Registry of the per-class detectors other than SQL injection and XSS.
 *
 * The inspect orchestrator runs every detector of this list on every decoded input; each one
 * starts with a cheap prefilter, so the order only matters for ties.
 */
import type { Detector } from "./types.ts";
import { cmdi } from "./cmdi.ts";
import { crlf } from "./crlf.ts";
import { deserialization } from "./deserialization.ts";
import { jndi } from "./jndi.ts";
import { ldapXpath } from "./ldap_xpath.ts";
import { openRedirect } from "./open_redirect.ts";
import { codeInjection } from "./code_injection.ts";
import { nosqli } from "./nosqli.ts";
import { ssi } from "./ssi.ts";
import { ssrf } from "./ssrf.ts";
import { ssti } from "./ssti.ts";
import { traversal } from "./traversal.ts";
import { xxe } from "./xxe.ts";
import { graphql } from "./graphql.ts";
import { mail } from "./mail.ts";
import { restrictedFile } from "./restricted_files.ts";
import { rfiProbe } from "./rfi.ts";
import { sessionFixation } from "./session_fixation.ts";
import { prototypePollution } from "./prototype_pollution.ts";
import { scriptUpload } from "./upload.ts";

export const DETECTORS: readonly Detector[] = [
  jndi,
  traversal,
  cmdi,
  codeInjection,
  deserialization,
  ssi,
  ldapXpath,
  ssti,
  nosqli,
  crlf,
  ssrf,
  xxe,
  openRedirect,
  graphql,
  mail,
  restrictedFile,
  rfiProbe,
  sessionFixation,
  prototypePollution,
  scriptUpload,
];
