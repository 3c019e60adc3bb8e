/**
 * Java vocabulary as facts: the classes and packages that Java remote-code-execution exploits
 * name (Struts OGNL, WebLogic and XStream XMLDecoder payloads, deserialisation gadgets), and
 * the commons-collections functor names gadget chains are built from.
 *
 * Sources: the OWASP Core Rule Set's `rules/java-classes.data` (rule 944130, Apache-2.0) for
 * {@link CLASS_NAMES}, CRS rule 944120's word list for {@link GADGET_WORDS} (the functors of
 * Apache Commons Collections, `java.beans.XMLDecoder`, `FileWriter`, `getProperty`), and
 * ysoserial's gadget chains for the classes that already were in `java.ts`.
 */

/**
 * Classes and packages a value names in a Java exploit: `java.lang.Runtime`, the streams a
 * payload reads a command's output with, reflection, OGNL's and CORBA's packages. A package
 * covers its classes (`org.apache.commons` covers `org.apache.commons.collections.map`).
 */
export const CLASS_NAMES: readonly string[] = [
  "com.opensymphony.xwork2",
  "com.sun.org.apache",
  "java.io.BufferedInputStream",
  "java.io.BufferedReader",
  "java.io.ByteArrayInputStream",
  "java.io.ByteArrayOutputStream",
  "java.io.CharArrayReader",
  "java.io.DataInputStream",
  "java.io.File",
  "java.io.FileOutputStream",
  "java.io.FilePermission",
  "java.io.FileWriter",
  "java.io.FilterInputStream",
  "java.io.FilterOutputStream",
  "java.io.FilterReader",
  "java.io.InputStream",
  "java.io.InputStreamReader",
  "java.io.LineNumberReader",
  "java.io.ObjectOutputStream",
  "java.io.OutputStream",
  "java.io.PipedOutputStream",
  "java.io.PipedReader",
  "java.io.PrintStream",
  "java.io.PushbackInputStream",
  "java.io.Reader",
  "java.io.StringReader",
  "java.lang.Class",
  "java.lang.Integer",
  "java.lang.Number",
  "java.lang.Object",
  "java.lang.Process",
  "java.lang.ProcessBuilder",
  "java.lang.reflect",
  "java.lang.Runtime",
  "java.lang.String",
  "java.lang.StringBuilder",
  "java.lang.System",
  "javax.script.ScriptEngineManager",
  "org.apache.commons",
  "org.apache.struts",
  "org.apache.struts2",
  "org.omg.CORBA",
  "java.beans.XMLDecoder",
];

/**
 * Of {@link CLASS_NAMES}, the plain data types an API schema or a type descriptor names
 * (`{"type": "java.lang.String"}`): in a JSON value they are weaker evidence.
 */
export const DATA_TYPES: readonly string[] = [
  "java.lang.Integer",
  "java.lang.Number",
  "java.lang.Object",
  "java.lang.String",
  "java.lang.StringBuilder",
];

/**
 * Names of the commons-collections functors and the sinks gadget chains end in (CRS 944120):
 * `InvokerTransformer`, `InstantiateFactory`, `ForClosure`... A chain that ends in a process
 * also names `Runtime` or `ProcessBuilder`.
 */
export const GADGET_WORDS: readonly string[] = [
  "clonetransformer",
  "xmldecoder",
  "forclosure",
  "filewriter",
  "instantiatefactory",
  "instantiatetransformer",
  "invokertransformer",
  "prototypeclonefactory",
  "prototypeserializationfactory",
  "getproperty",
  "whileclosure",
];
