import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkProjectFolder, ProjectFolderError } from '../../../electron/vm/projectFolder.ts';

// Which folders a session may share at /workspace, decided on real paths. The refusals as a user
// meets them (capsem run from their folder) are in test/integration/vmWorkspace.test.ts.

const root = mkdtempSync(join(tmpdir(), 'capsem-folders-'));
const home = join(root, 'home', 'ada');
const capsemHome = join(home, '.capsem');
const project = join(home, 'code', 'app');
mkdirSync(project, { recursive: true });
mkdirSync(join(capsemHome, 'run'), { recursive: true });
writeFileSync(join(project, 'README.md'), 'hi');
symlinkSync(home, join(root, 'home-link'));
symlinkSync(project, join(root, 'app-link'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const rules = { home, capsemHome, wholeHomeConfirmed: false, confirmHint: 'add --yes-whole-home' };
function refusal(path: string, confirmed = false): ProjectFolderError {
  try {
    checkProjectFolder(path, { ...rules, wholeHomeConfirmed: confirmed });
  } catch (err) {
    if (err instanceof ProjectFolderError) return err;
    throw err;
  }
  throw new Error(`${path} was accepted`);
}

describe('project folders', () => {
  it('shares a project folder by its real path, also through a symlink', () => {
    expect(checkProjectFolder(project, rules)).toBe(project);
    expect(checkProjectFolder(join(root, 'app-link'), rules)).toBe(project);
  });

  it('refuses the home folder, also through a symlink, and a folder holding it, unless the user confirmed', () => {
    expect(refusal(home)).toMatchObject({
      code: 'whole_home',
      message: expect.stringMatching(/is your whole home folder.*or add --yes-whole-home if you mean it$/),
    });
    expect(refusal(join(root, 'home-link')).code).toBe('whole_home');
    expect(refusal(join(root, 'home')).message).toMatch(/is a folder that holds your whole home/);
    expect(refusal('/').message).toMatch(/^\/ is the whole computer/);
    expect(checkProjectFolder(home, { ...rules, wholeHomeConfirmed: true })).toBe(home);
  });

  it("never shares Capsem's own data, nor a folder that holds it short of the whole home", () => {
    expect(refusal(join(capsemHome, 'run'), true)).toMatchObject({
      code: 'capsem_data',
      message: expect.stringMatching(/is inside Capsem's own data/),
    });
    const elsewhere = join(root, 'data');
    mkdirSync(join(elsewhere, 'capsem'), { recursive: true });
    expect(() => checkProjectFolder(elsewhere, { ...rules, capsemHome: join(elsewhere, 'capsem') })).toThrow(/holds Capsem's own data/);
  });

  it('says what is wrong with a missing folder, a file and a relative path', () => {
    expect(refusal(join(home, 'nope'))).toMatchObject({
      code: 'not_found',
      message: `the project folder ${join(home, 'nope')} does not exist; create it (mkdir -p ${join(home, 'nope')}) or name another folder`,
    });
    expect(refusal(join(project, 'README.md'))).toMatchObject({
      code: 'not_a_folder',
      message: `${join(project, 'README.md')} is a file, not a folder; share the folder that holds it (${project})`,
    });
    expect(refusal('code/app').message).toMatch(/must be an absolute path/);
  });
});
