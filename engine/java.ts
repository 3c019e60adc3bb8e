/**
 * Java code in a value: the classes that deserialisation gadgets and expression-language
 * exploits reach for (`java.lang.Runtime`, `ProcessBuilder`, `java.io.ByteArrayInputStream`,
 * `javax.script.ScriptEngineManager`, commons-collections functors), OGNL (Struts), Spring
 * EL, JSP/JSF EL (`${pageContext...}`, `#{...getClass()...}`), Groovy, and Node.js code.
 *
 * Class names count only fully qualified and only from that vocabulary: a dotted product
 * name (`com.example.shop`), a code sample's `java.util.List` or the words "java lang
 * courses" are not gadgets.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { asReported } from "./error_report.ts";
import { factorAlternation } from "./regex_factor.ts";
import { CLASS_NAMES, DATA_TYPES, GADGET_WORDS } from "./java_vocabulary.ts";
import { gated } from "./literal_gate.ts";

const JAVA_RUNTIME = gated(
  /java\.lang\.(?:Runtime|ProcessBuilder|System|Class|reflect|Thread|ClassLoader)(?!\w)|getRuntime\s*\(\s*\)|\.exec\s*\(\s*["'][^"']*["']\s*\)|new\s+ProcessBuilder\b|ProcessBuilder\s*\(|javax\.script\.ScriptEngineManager|\.getClass\s*\(\s*\)\s*\.forName\s*\(|Class\.forName\s*\(|getDeclaredMethod\s*\(|\.newInstance\s*\(\s*\)\s*\.|org\.apache\.commons\.(?:io|collections)|com\.sun\.org\.apache|javax\.naming\.InitialContext/,
);
const OGNL = gated(
  /%\{\s*\(?\s*#|#_memberAccess|@ognl\.OgnlContext@|#context\s*\[|\(#[a-z_]\w*\s*=|@java\.lang\.\w+@|#(?:application|session|request|parameters|attr)\s*\[|\bognl\b.{0,256}?#/i,
);
const STRUTS_PREFIX = gated(/\b(?:redirect|redirectAction|action):\s*\$\{/i);
export const SPRING_CLASSLOADER = gated(
  /\bclass\.(?:module\.)?classLoader\b|\bclass\.protectionDomain\b/i,
);
/** Groovy's `"cmd".execute()` and escaped EL (`$\\A{...}`) that Nexus-style validators evaluate. */
const GROOVY_HINT = gated(/xecute|\$\\/i);
const GROOVY_EL = /["'][^"'\n]{1,200}["']\s*\.execute\s*\(\s*\)|\$\\+[a-z]?\{[^}$]*[-+*/]/i;
/** Node.js server-side code: reaching `process` or `child_process` from an evaluated string. */
const NODE_CODE = gated(
  /\bchild_process\b|\.constructor\s*\.\s*constructor\s*\(|\bprocess\.mainModule\b|\b(?:execSync|spawnSync|execFileSync)\s*\(|\brequire\s*\(\s*["'](?:child_process|fs|net|vm)["']\s*\)/,
);
const SPEL = gated(/\bT\s*\(\s*java\.|new\s+java\.(?:lang|io|net|util)\.|#\{\s*T\s*\(/);
/** Classes and packages that run code, load classes, read files or open connections. */
const JAVA_CLASS = gated(
  new RegExp(
    "\\b(?:java\\.(?:lang\\.(?:Runtime|ProcessBuilder|ProcessImpl|UNIXProcess|System|Class|ClassLoader|" +
      "Thread|reflect\\.\\w+|invoke\\.\\w+)|io\\.(?:ByteArrayInputStream|ObjectInputStream|" +
      "ObjectOutputStream|FileInputStream|FileOutputStream|FileReader|FileWriter|RandomAccessFile)|" +
      "net\\.(?:URLClassLoader|Socket|ServerSocket)|nio\\.file\\.Files|beans\\.(?:XMLDecoder|" +
      "Expression)|rmi\\.(?:registry|server)\\.\\w+)|javax\\.(?:script\\.ScriptEngine(?:Manager)?|" +
      "naming\\.(?:InitialContext|Context)|management\\.(?:BadAttributeValueExpException|remote\\.\\w+)|" +
      "el\\.(?:ELProcessor|ExpressionFactory)|xml\\.transform\\.Templates)|sun\\.misc\\.(?:Unsafe|" +
      "BASE64Decoder)|jdk\\.jshell\\.JShell|groovy\\.lang\\.GroovyShell|bsh\\.Interpreter|" +
      "org\\.mozilla\\.javascript\\.\\w+|org\\.apache\\.commons\\.(?:collections\\d?\\.(?:functors|" +
      "keyvalue|map)|beanutils)\\.\\w+|com\\.sun\\.(?:rowset\\.JdbcRowSetImpl|jndi\\.\\w+)|" +
      "org\\.springframework\\.(?:expression|context\\.support|beans\\.factory\\.config)\\.\\w+|" +
      "org\\.codehaus\\.groovy\\.runtime\\.\\w+|com\\.opensymphony\\.xwork2\\.\\w+|" +
      "com\\.mchange\\.v2\\.c3p0\\.\\w+|org\\.python\\.util\\.PythonInterpreter|" +
      "org\\.hibernate\\.(?:engine|tuple)\\.\\w+)(?![\\w])|" +
      "\\b(?:ObjectInputStream|ScriptEngineManager|URLClassLoader|XMLDecoder)\\s*\\(|" +
      "\\bgetEngineByName\\s*\\(",
  ),
);
/** Literals the rules need; a value without any of them holds no Java. */
export const JAVA_HINT = factorAlternation(
  /java|Runtime|ProcessBuilder|[Ll]ass|LASS|[Oo]gnl|OGNL|[#$%]\{|\$\\|@\w+@|\.exec|[Ee]xecute|ObjectInputStream|ScriptEngine|XMLDecoder|getEngineByName|sun\.|jdk\.|groovy|bsh\.|mozilla|apache|springframework|codehaus|opensymphony|mchange|python|hibernate|forName|getClass|#_|#context|#application|#session|#request|#parameters|#attr|child_process|Sync\s*\(|mainModule|constructor|require|[Rr]edirect|[Aa]ction:|JAVA|untime|UNTIME|rocess[Bb]uilder|ROCESSBUILDER|omg\.|OMG\.|[Tt]ransformer|[Cc]losure|[Ff]actory|[Dd]ecoder|[Ww]riter|[Pp]roperty/,
);

const escapeName = (name: string) => name.replaceAll(".", "\\.");
/** A listed class or package as a whole name (`java.io.File`, not `java.io.FileDescriptor`). */
const LISTED_CLASS = gated(
  new RegExp(
    `(?<![\\w.$])(?:${CLASS_NAMES.map(escapeName).join("|")})(?![\\w])`,
    "i",
  ),
);
const LISTED_DATA_TYPE = new RegExp(`^(?:${DATA_TYPES.map(escapeName).join("|")})$`, "i");
/** What may follow a class name that is the whole value: members, an inner class, `[]`. */
const NAME_REST = /^(?:[.$][\w$]+)*(?:\[\])?["']?\s*$/;
const NAME_LEAD = /^\s*["']?$/;
/**
 * `Runtime` or `ProcessBuilder` as a word (not `RuntimeException`, not the system property
 * `java.runtime.version`), beside a Java package or an unmarshaller's field (CRS 944110): what
 * XStream and XMLDecoder payloads spawn a process with.
 */
const PROCESS_WORD = /\b(?:runtime(?!\.(?:version|name)\b)|processbuilder)\b/i;
const PROCESS_CONTEXT = /\bjava\.|unmarshaller|base64data/i;
const PROCESS_HINT = /untime|UNTIME|rocess[Bb]uilder|ROCESSBUILDER/;
const GADGET_WORD = new RegExp(GADGET_WORDS.join("|"), "i");
const GADGET_HINT = factorAlternation(
  /[Tt]ransformer|[Cc]losure|[Ff]actory|[Dd]ecoder|[Ww]riter|[Pp]roperty|TRANSFORMER|CLOSURE|FACTORY|DECODER|WRITER|PROPERTY/,
);
/** Literals every name rule below needs. */
const NAME_HINT = gated(
  /[Jj]ava|JAVA|apache|APACHE|omg\.|OMG\.|sun\.|SUN\.|opensymphony|OPENSYMPHONY/,
);
/** Sources whose text is a name, whole by construction. */
const NAME_SOURCES: ReadonlySet<string> = new Set([
  "query_name",
  "form_name",
  "cookie_name",
  "json_key",
]);

/**
 * Java class and gadget names by what surrounds them. A listed class that is the whole value
 * or a parameter's name is what CRS paranoia level 1 blocks (a probe or a gadget field); the
 * same name inside a longer text (a stack trace, a code sample) is a medium signal, and a
 * plain data type in a JSON value (an API's type descriptor) too. `Runtime` or
 * `ProcessBuilder` beside a Java package, and a gadget functor beside them, block.
 */
function javaNames(value: DetectorInput, text: string): Finding | undefined {
  let best: Finding | undefined;
  const process = PROCESS_HINT.test(text) ? PROCESS_WORD.exec(text) : null;
  if (process !== null && GADGET_HINT.test(text)) {
    const gadget = GADGET_WORD.exec(text);
    if (gadget !== null) {
      return makeFinding(value, "java", 90, "java.gadget_chain", text, gadget.index);
    }
  }
  if (process !== null && PROCESS_CONTEXT.test(text)) {
    best = makeFinding(value, "java", 85, "java.process_class", text, process.index);
  } else if (process === null && GADGET_HINT.test(text)) {
    // A functor's name alone is what CRS paranoia level 2 flags (944240).
    const gadget = GADGET_WORD.exec(text);
    if (gadget !== null) {
      best = makeFinding(value, "java", 55, "java.gadget_name", text, gadget.index);
    }
  }
  const m = NAME_HINT.test(text) ? LISTED_CLASS.exec(text) : null;
  if (m === null) return best;
  // A name is whole by construction, but `org.apache.struts:struts2-core` (a dependency's
  // coordinate, as error reports list installed modules) names a package, not a class.
  const whole = (NAME_SOURCES.has(value.input.source) || NAME_LEAD.test(text.slice(0, m.index))) &&
    NAME_REST.test(text.slice(m.index + m[0].length));
  const dataType = value.input.source === "json" && LISTED_DATA_TYPE.test(m[0]);
  const score = !whole ? 50 : dataType ? 60 : 80;
  return stronger(
    best,
    makeFinding(
      value,
      "java",
      score,
      whole ? "java.class_name" : "java.class_mention",
      text,
      m.index,
    ),
  );
}

/**
 * Judges a dotted name alone (the inspector skips such values otherwise): a gadget class
 * named as a parameter value is a deserialisation or EL probe.
 *
 * @param value the decoded input
 * @returns a `java` finding or undefined
 */
export function javaClassName(value: DetectorInput): Finding | undefined {
  // A stack frame's module or class in an error report names where an error happened.
  return asReported(className(value), value);
}

/**
 * A class named for Fastjson's autotype under its `@type` key (`{"@type":"java.lang.
 * AutoCloseable"}`): the parser instantiates it, whatever class it is, so any package counts
 * (JSON-LD's `@type` holds a word, protobuf's a URL).
 */
const AUTOTYPE_CLASS = /^(?:com|org|java|javax|sun|net|ch|jdk|oracle)\.[\w$.]+$/;

function className(value: DetectorInput): Finding | undefined {
  const m = JAVA_CLASS.exec(value.decoded);
  if (m !== null) return makeFinding(value, "java", 85, "java.class", value.decoded, m.index);
  // A class of the list keeps its own finding; any other class under `@type` is autotype's.
  const input = value.input;
  if (
    input.source === "json" && input.name.endsWith("@type") &&
    (input.name.length === 5 || input.name.charCodeAt(input.name.length - 6) === 46) &&
    AUTOTYPE_CLASS.test(value.decoded)
  ) {
    return makeFinding(
      value,
      "deserialization",
      92,
      "deserialization.fastjson_type",
      value.decoded,
      0,
    );
  }
  const cl = SPRING_CLASSLOADER.exec(value.decoded);
  return cl === null
    ? javaNames(value, value.decoded)
    : makeFinding(value, "java", 90, "java.classloader", value.decoded, cl.index);
}

/**
 * A stack trace's frame (`at java.lang.reflect.Method.invoke(Method.java:498)`, `(Native
 * Method)`, `(Unknown Source)`), as error reports and logs carry them.
 */
const FRAME =
  "\\bat\\s+[\\w$.<>/]+\\((?:[\\w$]+\\.(?:java|kt|scala|groovy):\\d+|Native Method|Unknown Source)\\)";
const STACK_FRAME = new RegExp(FRAME);
const STACK_FRAMES = new RegExp(FRAME, "g");

/** An EL expression: `${...}` (JSP, Spring) or `#{...}` (JSF, SpEL templates). */
const EL_BLOCK = gated(/[$#]\{([^{}]{1,400})\}/g);
/** Reflection and command calls inside an expression: `''.getClass().forName(...)`. */
const EL_REFLECTION =
  /\.getClass\s*\(|\bforName\s*\(|\.getMethod\s*\(|\.getDeclaredMethods?\s*\(|\.invoke\s*\(|\.newInstance\s*\(|\bgetRuntime\s*\(|\.exec\s*\(|\.class\b|\.getClassLoader\s*\(|\.loadClass\s*\(/;
/** JSP and JSF implicit objects, read through a member or an index. */
const EL_IMPLICIT =
  /^\s*!?\s*(?:pageContext|applicationScope|sessionScope|requestScope|facesContext|initParam|headerValues|paramValues|servletContext)\s*[.[]/;

function expressionLanguage(value: DetectorInput, text: string): Finding | undefined {
  EL_BLOCK.lastIndex = 0;
  let m: RegExpExecArray | null;
  for (let n = 0; n < 16 && (m = EL_BLOCK.exec(text)) !== null; n++) {
    const body = m[1]!;
    if (EL_REFLECTION.test(body)) {
      return makeFinding(value, "java", 90, "java.el_reflection", text, m.index);
    }
    if (EL_IMPLICIT.test(body)) {
      return makeFinding(value, "java", 80, "java.el_object", text, m.index);
    }
  }
  return undefined;
}

export function java(value: DetectorInput, source: string): Finding | undefined {
  // The frames of a stack trace name classes that ran, not classes a payload asks for.
  const text = source.indexOf("at ") >= 0 && STACK_FRAME.test(source)
    ? source.replace(STACK_FRAMES, " ")
    : source;
  let best: Finding | undefined;
  const rt = JAVA_RUNTIME.exec(text);
  if (rt !== null) best = makeFinding(value, "java", 90, "java.runtime", text, rt.index);
  if (text.indexOf("#") >= 0 || text.indexOf("@") >= 0) {
    const ognl = OGNL.exec(text);
    if (ognl !== null) {
      best = stronger(best, makeFinding(value, "java", 92, "java.ognl", text, ognl.index));
    }
  }
  const struts = STRUTS_PREFIX.exec(text);
  if (struts !== null) {
    best = stronger(best, makeFinding(value, "java", 90, "java.struts_prefix", text, struts.index));
  }
  const groovy = GROOVY_HINT.test(text) ? GROOVY_EL.exec(text) : null;
  if (groovy !== null) {
    best = stronger(best, makeFinding(value, "java", 88, "java.groovy_el", text, groovy.index));
  }
  const node = NODE_CODE.exec(text);
  if (node !== null) {
    best = stronger(best, makeFinding(value, "rce", 90, "rce.node_code", text, node.index));
  }
  const spel = SPEL.exec(text);
  if (spel !== null) {
    best = stronger(best, makeFinding(value, "java", 92, "java.spel", text, spel.index));
  }
  const cls = JAVA_CLASS.exec(text);
  if (cls !== null) {
    best = stronger(best, makeFinding(value, "java", 85, "java.class", text, cls.index));
  }
  if (best === undefined || best.score < 90) best = stronger(best, javaNames(value, text));
  if (text.indexOf("{") >= 0) best = stronger(best, expressionLanguage(value, text));
  const cl = SPRING_CLASSLOADER.exec(text);
  if (cl !== null) {
    best = stronger(best, makeFinding(value, "java", 90, "java.classloader", text, cl.index));
  }
  return best;
}

/** A Java serialisation stream's magic (`AC ED 00 05`) in base64 at its three alignments. */
const STREAM_BASE64 = /^rO0AB[A-Za-z0-9_-]{8,}/;
const STREAM_MARKER = /rO0ABQ|KztAAU|Cs7QAF/;
/** The same stream written in hex (`aced0005` then a type code, `7372` for an object). */
const STREAM_HEX = /^aced0005[0-9a-f]{6,}$/i;
/** A whole value in the base64 alphabet, long enough to hide a class name. */
const BASE64_TOKEN = /^[A-Za-z0-9_-]{8,2048}={0,2}$/;
/** Words an exploit spells in base64 to pass a filter (CRS 944300, paranoia level 3). */
const PROCESS_WORD_ANY = /runtime|processbuilder|classloader/i;
const PRINTABLE = /^[\x20-\x7e]+$/;
const PADDING = /=+$/;
/** Gadget names are words; a longer token is an identifier or data. */
const MAX_NAME = 128;

/** Index of a base64 digit (standard or URL-safe alphabet), -1 for anything else. */
function digit(c: number): number {
  if (c >= 65 && c <= 90) return c - 65;
  if (c >= 97 && c <= 122) return c - 71;
  if (c >= 48 && c <= 57) return c + 4;
  return c === 43 || c === 45 ? 62 : c === 47 || c === 95 ? 63 : -1;
}

/** Whether the first three bytes `text` encodes are printable: most tokens fail here. */
function printableStart(text: string): boolean {
  const d0 = digit(text.charCodeAt(0));
  const d1 = digit(text.charCodeAt(1));
  const d2 = digit(text.charCodeAt(2));
  const d3 = digit(text.charCodeAt(3));
  const b0 = (d0 << 2) | (d1 >> 4);
  const b1 = ((d1 & 15) << 4) | (d2 >> 2);
  const b2 = ((d2 & 3) << 6) | d3;
  return b0 >= 0x20 && b0 <= 0x7e && b1 >= 0x20 && b1 <= 0x7e && b2 >= 0x20 && b2 <= 0x7e;
}

/**
 * Judges a value of letters and digits alone (the inspector skips such values otherwise): a
 * Java object stream in base64 (`rO0AB...`, what a cookie or a view state carries to a
 * deserialiser), its magic bytes at another alignment, and a class or gadget name spelled in
 * base64 (`amF2YS5sYW5nLlJ1bnRpbWU`), which is decoded and judged as a name, and a gadget
 * functor's name (`InvokerTransformer`).
 *
 * @param value the decoded input, made of word characters only
 * @returns a `deserialization` or `java` finding, or undefined
 */
export function javaToken(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (text.length < 6) return undefined;
  const magic = text.indexOf("rO0AB") >= 0 || text.indexOf("KztAA") >= 0 ||
    text.indexOf("Cs7QA") >= 0;
  if (magic) {
    if (STREAM_BASE64.test(text)) {
      return makeFinding(value, "deserialization", 92, "deserialization.java_base64", text, 0);
    }
    // The magic alone is what CRS paranoia level 2 flags (944210): a probe, or chance.
    const marker = STREAM_MARKER.exec(text);
    if (marker !== null) {
      return makeFinding(value, "deserialization", 55, "deserialization.java_marker", text, 0);
    }
  }
  if ((text.charCodeAt(0) | 0x20) === 97 && STREAM_HEX.test(text)) {
    return makeFinding(value, "deserialization", 92, "deserialization.java_hex", text, 0);
  }
  if (text.length <= MAX_NAME && GADGET_HINT.test(text)) {
    const gadget = javaNames(value, text);
    if (gadget !== undefined) return gadget;
  }
  if (!BASE64_TOKEN.test(text) || !printableStart(text)) return undefined;
  const bare = text.replace(PADDING, "").replaceAll("-", "+").replaceAll("_", "/");
  // A length atob refuses would throw, and a throw costs more than the whole check.
  if (bare.length % 4 === 1) return undefined;
  const decoded = atob(bare.padEnd(bare.length + ((4 - (bare.length % 4)) % 4), "="));
  if (!PRINTABLE.test(decoded)) return undefined;
  const inner = javaNames({ ...value, decoded }, decoded);
  if (inner !== undefined) return { ...inner, ruleId: `${inner.ruleId}_base64` };
  const word = PROCESS_WORD_ANY.exec(decoded);
  return word === null
    ? undefined
    : makeFinding(value, "java", 45, "java.process_word_base64", text, 0);
}
