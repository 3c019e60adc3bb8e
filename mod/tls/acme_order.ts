/**
 * One ACME order for a site's exact host names: each authorised with the HTTP-01 challenge that
 * the data plane answers while the order runs, then finalised with a fresh key and CSR. Throws
 * naming which host failed which challenge, and the CA's reason.
 */
import type * as AcmeClient from "acme-client";
import { AppError } from "../core/errors.ts";
import { loadAcme } from "./acme_agent.ts";

export interface AcmeSite {
  readonly id: string;
  readonly name: string;
  readonly hosts: readonly string[];
}

export interface AcmeFailure {
  readonly host: string;
  readonly challenge: string;
  readonly error: string;
}

/** The data plane's pending HTTP-01 answers. */
export interface ChallengeAnswers {
  add(host: string, token: string, keyAuthorization: string): void;
  remove(host: string, token: string): void;
}

/** Authorises every host over HTTP-01, served while the CA validates; the hosts that failed. */
async function authorize(
  client: AcmeClient.Client,
  order: AcmeClient.Order,
  answers: ChallengeAnswers,
): Promise<AcmeFailure[]> {
  const authorizations = await client.getAuthorizations(order);
  const failures: AcmeFailure[] = [];
  const served: [string, string][] = [];
  try {
    await Promise.all(authorizations.map(async (authz) => {
      const host = authz.identifier.value;
      if (authz.status === "valid") return;
      const challenge = authz.challenges.find((c) => c.type === "http-01");
      if (challenge === undefined) {
        failures.push({
          host,
          challenge: "http-01",
          error: "the CA offers no http-01 challenge",
        });
        return;
      }
      answers.add(host, challenge.token, await client.getChallengeKeyAuthorization(challenge));
      served.push([host, challenge.token]);
      try {
        await client.completeChallenge(challenge);
        await client.waitForValidStatus(challenge);
      } catch (err) {
        failures.push({ host, challenge: "http-01", error: (err as Error).message });
      }
    }));
  } finally {
    for (const [host, token] of served) answers.remove(host, token);
  }
  return failures;
}

/** One order: authorise every host over HTTP-01, then finalise; throws naming what failed. */
export async function orderCertificate(
  client: AcmeClient.Client,
  site: AcmeSite,
  answers: ChallengeAnswers,
): Promise<{ cert: string; key: string }> {
  const hosts = [...site.hosts];
  const o = await client.createOrder({
    identifiers: hosts.map((value) => ({ type: "dns", value })),
  });
  const failures = await authorize(client, o, answers);
  if (failures.length > 0) {
    throw new AppError(
      502,
      "ACME_VALIDATION_FAILED",
      `ACME validation failed: ${
        failures.map((f) => `host "${f.host}" failed the ${f.challenge} challenge: ${f.error}`)
          .join("; ")
      }`,
      { details: { failures } },
    );
  }
  const { acme } = await loadAcme();
  const [key, csr] = await acme.crypto.createCsr(
    { commonName: hosts[0], altNames: hosts },
    await acme.crypto.createPrivateEcdsaKey("P-256"),
  );
  const finalized = await client.finalizeOrder(o, csr);
  const cert = await client.getCertificate(finalized);
  return { cert, key: key.toString() };
}
