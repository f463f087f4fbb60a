import fs from 'node:fs';

/**
 * A file the operator named on the command line, opened for reading (`shown` is the name as typed,
 * for the message). A missing or unreadable file, or a directory, is one line naming it.
 */
export async function openFile(shown: string, resolved: string): Promise<{ stream: fs.ReadStream; size: number }> {
  let handle: fs.promises.FileHandle | undefined;
  try {
    handle = await fs.promises.open(resolved, 'r');
    const stat = await handle.stat();
    if (stat.isDirectory()) throw Object.assign(new Error('it is a directory'), { code: 'EISDIR' });
    return { stream: handle.createReadStream(), size: stat.size };
  } catch (err) {
    await handle?.close();
    const e = err as NodeJS.ErrnoException;
    const reason = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.code === 'EISDIR' ? 'it is a directory' : e.message;
    throw new Error(`cannot read ${shown}: ${reason}`);
  }
}
