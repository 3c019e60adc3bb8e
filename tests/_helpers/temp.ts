/** Temporary directories that remove themselves. */
export async function tempDir(prefix = "waf-test-"): Promise<string & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix });
  return Object.assign(path, {
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    },
  }) as string & AsyncDisposable;
}
