/**
 * Restricted files: what a web root should never serve, requested by URL or named in a
 * file parameter. Version-control metadata (`.git/`, `.svn/`), environment and server
 * configuration (`.env`, `.htaccess`), editor, IDE and AI-assistant configuration
 * (`.vscode/`, `.idea/`, `.cursorrules`, `.claude/`, `CLAUDE.md`), and leftovers of editing
 * (`index.php.bak`, `config.php~`, `.config.php.swp`, `dump.sql`). Scanners probe for these
 * by the thousand because one hit leaks source code or secrets.
 *
 * Names are matched as whole path segments, so `/blog/env-setup` or `/docs/git-basics` pass;
 * `/.well-known/` is the one dot directory sites serve on purpose.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

/** Dot directories whose content is never public. */
const DOT_DIRS = "git|svn|hg|bzr|cvs|circleci|vscode|idea|settings|vs|fleet|cursor|claude|" +
  "continue|codeium|windsurf|roo|gemini|junie|aider|aws|ssh|kube|docker|gnupg|config|npm|" +
  "composer|terraform|serverless|vagrant|history|local|cache|yarn|pnpm-store|zed|cline|kiro|" +
  "rovodev|codex|opencode|a0proj|plandex|fabric|n8n|azure|password-store|minikube|pki";
/** Dotfiles (exact names, optionally with a suffix such as `.env.production`). */
const DOT_FILES =
  "env(?:\\.[\\w-]+)?|htaccess|htpasswd|htdigest|user\\.ini|ds_store|npmrc|yarnrc(?:\\.yml)?|" +
  "pypirc|netrc|pgpass|my\\.cnf|dockerenv|gitconfig|git-credentials|gitignore|gitmodules|" +
  "gitlab-ci\\.yml|travis\\.yml|" +
  "viminfo|lesshst|bashrc|zshrc|profile|bash_profile|boto|s3cfg|terraformrc|" +
  "cursorrules|cursorignore|windsurfrules|clinerules|roomodes|aider[\\w.-]*|" +
  "copilot-instructions\\.md|project|classpath|buildpath|editorconfig|sublime-[\\w-]+|" +
  "php_cs(?:\\.dist)?|php-cs-fixer[\\w.-]*|phpunit\\.xml|babelrc|eslintrc[\\w.]*|" +
  "idea|vscode|swp|swo|aiignore|aiexclude|geminiignore|codeiumignore|\\w+_history|" +
  // credential stores of a home directory (CRS lfi-os-files.data)
  "credentials|google_authenticator|msmtprc|xauthority|envrc";
/** AI-assistant instruction files that are not dotfiles. */
const ASSISTANT_FILES = /^(?:claude|agents|gemini|copilot-instructions)\.md$/i;
/** Backup, swap and dump files left by editors and administrators. */
const BACKUP =
  /(?:\.(?:bak|backup|bkp|old|orig|save|sav|swp|swo|swn|tmp|copy|dist|sql|sqlite3?|db|mdb|dump)(?:\.(?:gz|zip|bz2|xz|7z|tgz|tar|tar\.gz))?|~)$/i;
/** A backup needs a real file name before its suffix (`index.php.bak`, `config~`). */
const BACKUP_NAME = /^[\w.-]*[A-Za-z0-9][\w-]*\.[\w.]+|^[\w.-]+~$/;
/**
 * Segments after which code-hosting sites (GitHub, GitLab, Gitea, Bitbucket) show a
 * repository's files: `/owner/repo/blob/main/.gitignore` is a page, not the file.
 */
const REPOSITORY_VIEW: ReadonlySet<string> = new Set([
  "blob",
  "tree",
  "raw",
  "src",
  "blame",
  "edit",
  "commits",
  "-",
  "files",
  "browse",
]);
/** Editor lock and recovery files: `#index.php#`, `.#index.php`. */
const EDITOR_LOCK = /^(?:#.+#|\.#.+)$/;

const DOT_DIR = new RegExp(`^\\.(?:${DOT_DIRS})$`, "i");
const DOT_FILE = new RegExp(`^\\.(?:${DOT_FILES})$`, "i");
/** Parameter names that suggest the value is handed to a file API. */
const FILE_PARAM =
  /(?:^|[^a-z])(?:file|path|page|include|inc|template|tpl|doc|document|folder|dir|load|read|view|show|download|filename|src|source|conf|config|layout|module)(?:$|[^a-z])/i;
const CLIMB = /(?:^|[/\\])\.\.[/\\]/;
const SEPARATOR = /[/\\]/;
const SPACE = /\s/;
/** Characters without which a path names none of the files above. */
const HINT = /[.#~]/;
/** A word with a trailing `~` and no extension: a token's end mark as often as a backup. */
const BARE_TILDE = /^[\w-]+~$/;

/**
 * Reports requests for restricted files, in the URL path or in a file parameter.
 *
 * @param value the decoded input
 * @returns an `lfi` finding (rule `lfi.restricted_file`) or undefined
 */
export function restrictedFile(value: DetectorInput): Finding | undefined {
  const source = value.input.source;
  const text = value.decoded;
  if (source === "path") {
    // The whole path only; its segments are the same names again.
    if (value.input.name.length > 0 || !HINT.test(text)) return undefined;
    const hit = restrictedSegment(text, true);
    return hit === undefined
      ? undefined
      : makeFinding(value, "lfi", hit.score, "lfi.restricted_file", text, hit.at);
  }
  if (text.length > 512 || !HINT.test(text) || SPACE.test(text.trim())) return undefined;
  // An uploaded file's name is the name on the user's disk (`backup.sql`, `.gitignore`,
  // `CLAUDE.md`): it asks the server for nothing. The names that reconfigure a server where
  // they land (`.htaccess`, `.user.ini`, `web.config`) are script uploads (upload.ts).
  if (source === "multipart" && value.input.name.endsWith(".filename")) return undefined;
  const trimmed = text.trim();
  const hit = restrictedSegment(trimmed, false);
  if (hit === undefined) return undefined;
  const fileParam = FILE_PARAM.test(value.input.name);
  // `SACAAEABAAAAACAAI~` (Universal Analytics' `_u`) ends like `config~`; outside a URL path
  // and a file parameter nothing says it is a file name (CRS, too, reads `~` in the URL only).
  if (!fileParam && BARE_TILDE.test(trimmed) && !CLIMB.test(text)) return undefined;
  const score = CLIMB.test(text) ? 88 : fileParam ? Math.min(hit.score, 75) : 40;
  return makeFinding(value, "lfi", score, "lfi.restricted_file", text, hit.at);
}

/** The first restricted segment of a path-like text, with its score and offset. */
function restrictedSegment(
  text: string,
  isUrl: boolean,
): { score: number; at: number } | undefined {
  const segments = text.split(SEPARATOR);
  let at = 0;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const last = i === segments.length - 1;
    if (seg.length > 0) {
      const semi = seg.indexOf(";");
      const name = semi < 0 ? seg : seg.slice(0, semi);
      if (name === ".well-known" || (isUrl && REPOSITORY_VIEW.has(name))) return undefined;
      if (DOT_DIR.test(name)) return { score: last && isUrl ? 75 : 85, at };
      if (DOT_FILE.test(name)) return { score: 85, at };
      if (last && ASSISTANT_FILES.test(name)) return { score: 75, at };
      if (last && EDITOR_LOCK.test(name)) return { score: 75, at };
      if (last && BACKUP.test(name) && BACKUP_NAME.test(name)) return { score: 75, at };
    }
    at += seg.length + 1;
  }
  return undefined;
}
