import { ESLint } from 'eslint';

// The repository's own lint config run on one snippet, as if it were the file at filePath.

export const eslint = new ESLint();

export async function lintMessages(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.map((m) => m.message);
}
