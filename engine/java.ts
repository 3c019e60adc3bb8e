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
import { factorAlternation } from "./regex_factor.ts";

const JAVA_RUNTIME =
  /java\.lang\.(?:Runtime|ProcessBuilder|System|Class|reflect|Thread|ClassLoader)|getRuntime\s*\(\s*\)|\.exec\s*\(\s*["'][^"']*["']\s*\)|new\s+ProcessBuilder\b|ProcessBuilder\s*\(|javax\.script\.ScriptEngineManager|\.getClass\s*\(\s*\)\s*\.forName\s*\(|Class\.forName\s*\(|getDeclaredMethod\s*\(|\.newInstance\s*\(\s*\)\s*\.|org\.apache\.commons\.(?:io|collections)|com\.sun\.org\.apache|javax\.naming\.InitialContext/;
const OGNL =
  /%\{\s*\(?\s*#|#_memberAccess|@ognl\.OgnlContext@|#context\s*\[|\(#[a-z_]\w*\s*=|@java\.lang\.\w+@|#(?:application|session|request|parameters|attr)\s*\[|\bognl\b.{0,256}?#/i;
const STRUTS_PREFIX = /\b(?:redirect|redirectAction|action):\s*\$\{/i;
export const SPRING_CLASSLOADER =
  /\bclass\.(?:module\.)?classLoader\b|\bclass\.protectionDomain\b/i;
/** Groovy's `"cmd".execute()` and escaped EL (`$\\A{...}`) that Nexus-style validators evaluate. */
const GROOVY_HINT = /xecute|\$\\/i;
const GROOVY_EL = /["'][^"'\n]{1,200}["']\s*\.execute\s*\(\s*\)|\$\\+[a-z]?\{[^}$]*[-+*/]/i;
/** Node.js server-side code: reaching `process` or `child_process` from an evaluated string. */
const NODE_CODE =
  /\bchild_process\b|\.constructor\s*\.\s*constructor\s*\(|\bprocess\.mainModule\b|\b(?:execSync|spawnSync|execFileSync)\s*\(|\brequire\s*\(\s*["'](?:child_process|fs|net|vm)["']\s*\)/;
const SPEL = /\bT\s*\(\s*java\.|new\s+java\.(?:lang|io|net|util)\.|#\{\s*T\s*\(/;
/** Classes and packages that run code, load classes, read files or open connections. */
const JAVA_CLASS = new RegExp(
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
);
/** Literals the rules need; a value without any of them holds no Java. */
export const JAVA_HINT = factorAlternation(
  /java|Runtime|ProcessBuilder|[Ll]ass|LASS|[Oo]gnl|OGNL|[#$%]\{|\$\\|@\w+@|\.exec|[Ee]xecute|ObjectInputStream|ScriptEngine|XMLDecoder|getEngineByName|sun\.|jdk\.|groovy|bsh\.|mozilla|apache|springframework|codehaus|opensymphony|mchange|python|hibernate|forName|getClass|#_|#context|#application|#session|#request|#parameters|#attr|child_process|Sync\s*\(|mainModule|constructor|require|[Rr]edirect|[Aa]ction:/,
);

/**
 * Judges a dotted name alone (the inspector skips such values otherwise): a gadget class
 * named as a parameter value is a deserialisation or EL probe.
 *
 * @param value the decoded input
 * @returns a `java` finding or undefined
 */
export function javaClassName(value: DetectorInput): Finding | undefined {
  const m = JAVA_CLASS.exec(value.decoded);
  if (m !== null) return makeFinding(value, "java", 85, "java.class", value.decoded, m.index);
  const cl = SPRING_CLASSLOADER.exec(value.decoded);
  return cl === null
    ? undefined
    : makeFinding(value, "java", 90, "java.classloader", value.decoded, cl.index);
}

/** An EL expression: `${...}` (JSP, Spring) or `#{...}` (JSF, SpEL templates). */
const EL_BLOCK = /[$#]\{([^{}]{1,400})\}/g;
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

export function java(value: DetectorInput, text: string): Finding | undefined {
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
  if (text.indexOf("{") >= 0) best = stronger(best, expressionLanguage(value, text));
  const cl = SPRING_CLASSLOADER.exec(text);
  if (cl !== null) {
    best = stronger(best, makeFinding(value, "java", 90, "java.classloader", text, cl.index));
  }
  return best;
}
