import { describe, expect, it } from 'vitest';
import { opensGroup, revertQuestion, sourceLabel } from '../../../renderer/views/changes/changeGroups.ts';

// What made each change, and where a turn's changes begin in the Files view's list.

const by = (toolName: string, turn: number, agent = 'main', preview: string | null = null) => ({
  source: { callId: `call-${turn}`, toolName, preview, turn, agent },
});
const outside = { source: null };

describe('change groups', () => {
  it('name the tool and the turn as the Conversation numbers it, the subagent that ran it, or no tool', () => {
    expect(sourceLabel(by('Edit', 11).source)).toBe('Edit in turn 12');
    expect(sourceLabel(by('Bash', 13, 'explore-1').source)).toBe('Bash by explore-1 in turn 14');
    expect(sourceLabel(null)).toBe('outside any tool');
  });

  it("say which command a shell ran, its first line cut short, and not an Edit's file twice", () => {
    expect(sourceLabel(by('Bash', 13, 'main', "sed -i 's/alpha/beta/' notes.txt").source)).toBe(
      "Bash `sed -i 's/alpha/beta/' notes.txt` in turn 14",
    );
    const long = `for f in src/*.ts; do npx prettier --write "$f" --log-level warn; done\necho done`;
    expect(sourceLabel(by('Bash', 0, 'main', long).source)).toBe('Bash `for f in src/*.ts; do npx prettier --write "$f"…` in turn 1');
    expect(sourceLabel(by('Edit', 1, 'main', '/workspace/src/app.ts').source)).toBe('Edit in turn 2');
  });

  it('open a group at the first row and wherever the turn changes, not between two changes of one turn', () => {
    const list = [by('Edit', 2), by('Bash', 2), outside, outside, by('Edit', 3), by('Edit', 2)];
    expect(list.map((change, i) => opensGroup(list[i - 1], change))).toEqual([true, false, true, false, true, true]);
  });

  it('say before a turn revert that it takes back every later turn too', () => {
    expect(revertQuestion({ kind: 'turn', turn: 4 })).toContain('turn 5 and every turn after it');
    expect(revertQuestion({ kind: 'change', seq: 7, path: 'src/a.ts' })).toBe('Put src/a.ts back as it was before change #7?');
  });
});
