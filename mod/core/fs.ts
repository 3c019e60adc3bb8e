/** Small file-system facts shared by the operator commands and the maintenance tasks. */

/** Whether anything (a file, folder or link, even a dangling one) is at `path`. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
