/**
 * Mail command injection (SMTP, IMAP, POP3) and mail header injection.
 *
 * An application that passes a value to a mail server or into a message's headers (contact
 * forms, webmail) runs whatever follows a line break as the next command or header. So the
 * detector looks for a line break followed by a line in a mail protocol's grammar: an SMTP
 * verb with its argument shape (`RCPT TO:<a@b>`, `MAIL FROM:`), a bare upper-case verb alone
 * on its line (`QUIT`, `DATA`), an IMAP tagged command (`a1 FETCH 1:*`), or a message header
 * that adds recipients (`Bcc: x@y`). A comment that says "data" or "to: Berlin" on a line of
 * its own is not in that grammar.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

const BREAK = /[\r\n]/;
/** SMTP envelope commands with their argument shape, at a line start (any case). */
const SMTP_ARG =
  /[\r\n][ \t]*(?:MAIL[ \t]+FROM|RCPT[ \t]+TO)[ \t]*:[ \t]*<?[^\s<>]*>?[ \t]*(?:\r?\n|$)/i;
/** SMTP and POP3 commands that take an argument, upper-case as clients send them. */
const VERB_ARG =
  /[\r\n][ \t]*(?:(?:HELO|EHLO|VRFY|EXPN)[ \t]+[\w.@-]+|AUTH[ \t]+(?:LOGIN|PLAIN|CRAM-MD5|XOAUTH2)\b|(?:USER|PASS|RETR|DELE|TOP)[ \t]+\S+)[ \t]*(?:\r?\n|$)/;
/** Bare commands, upper-case, alone on their line. */
const SMTP_BARE =
  /[\r\n][ \t]*(?:QUIT|DATA|RSET|NOOP|STARTTLS|TURN|STAT|CAPA|LOGOUT)[ \t]*(?:\r?\n|$)/;
/** IMAP: a tag, then a command in upper case (`V100 CAPABILITY`, `a1 LOGIN u p`). */
const IMAP =
  /[\r\n][ \t]*[A-Za-z0-9.*]{1,10}[ \t]+(?:CAPABILITY|LOGIN|LOGOUT|SELECT|EXAMINE|FETCH|STORE|LIST|LSUB|APPEND|SEARCH|UID|COPY|CREATE|DELETE|RENAME|AUTHENTICATE|STATUS|EXPUNGE|SUBSCRIBE|STARTTLS|NOOP)\b/;
/** A header that adds recipients or rewrites the message, after a line break. */
const MAIL_HEADER =
  /[\r\n][ \t]*(?:bcc|cc|to|from|reply-to|sender|subject|content-type|mime-version|x-mailer)[ \t]*:[ \t]*\S/i;
const ADDRESS = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/;
const OPENS_WITH_BREAK = /^\s*[\r\n]/;
const LINES = /\r?\n|\r/;

/** Sources whose values are free text that may span lines (comments, messages). */
const TEXT_SOURCES: ReadonlySet<string> = new Set(["form", "json", "multipart", "xml", "body"]);

/**
 * Reports mail protocol commands and recipient headers injected after a line break.
 *
 * @param value the decoded input
 * @returns a `mail` finding or undefined
 */
export function mail(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (!BREAK.test(text)) return undefined;
  // In free text a protocol line only counts when the value opens with it or has several.
  const freeText = TEXT_SOURCES.has(value.input.source);
  const opens = OPENS_WITH_BREAK.test(text);
  const command = SMTP_ARG.exec(text) ?? VERB_ARG.exec(text) ?? SMTP_BARE.exec(text) ??
    IMAP.exec(text);
  if (command !== null) {
    const lines = countCommands(text);
    const score = !freeText || opens || lines >= 2 ? 88 : 55;
    return makeFinding(value, "mail", score, "mail.command", text, command.index);
  }
  const header = MAIL_HEADER.exec(text);
  if (header === null) return undefined;
  // `Bcc: a@b` after a break in a one-line field (a subject, a name) adds a recipient.
  const address = ADDRESS.test(text.slice(header.index));
  const score = freeText ? (opens && address ? 72 : 30) : address ? 85 : 60;
  return makeFinding(value, "mail", score, "mail.header_injection", text, header.index);
}

function countCommands(text: string): number {
  let n = 0;
  for (const line of text.split(LINES)) {
    const l = `\n${line}`;
    if (SMTP_ARG.test(l) || VERB_ARG.test(l) || SMTP_BARE.test(l) || IMAP.test(l)) n++;
    if (n >= 2) break;
  }
  return n;
}
