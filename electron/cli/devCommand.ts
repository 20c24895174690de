import { seedSessions } from '../dev/seedSessions.ts';
import { seedChangesSession } from '../dev/seedChanges.ts';
import { seedStorySession } from '../dev/seedStory.ts';
import { parseCommandArgs, parseCount, UsageError, type Command } from './context.ts';

export const devCommand: Command = {
  name: 'dev',
  summary: 'developer tools: seed sample sessions',
  usage: `capsem dev seed [--sessions N] [--events M] [--seed S] [--story T] [--changes]

Generates realistic ended sessions into CAPSEM_HOME: named and unnamed sessions, agent turns
with model calls, tool loops and tool results, MCP calls, HTTPS requests (one denied now and
then), file events, full bodies, and one crashed session. The same --seed gives the same data.

  --sessions N  how many sessions (default 5)
  --events M    about how many ledger events per session (default 200)
  --seed S      random seed (default 1)
  --story T     also a Claude Code session of about T model calls: subagents in the foreground
                and the background, background commands, their returns and notifications
  --changes     also a Claude Code session named "changes" that changed its workspace folder:
                a baseline, Edit, Write and Bash calls with the changes they made, a file the
                user added afterwards (capsem diff changes, the Files view, capsem revert)`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, {
      sessions: { type: 'string' },
      events: { type: 'string' },
      seed: { type: 'string' },
      story: { type: 'string' },
      changes: { type: 'boolean' },
    });
    if (positionals[0] !== 'seed' || positionals.length > 1)
      throw new UsageError('usage: capsem dev seed [--sessions N] [--events M] [--seed S] [--story T] [--changes]');
    const sessions = parseCount(values.sessions as string | undefined, '--sessions', 5);
    const events = parseCount(values.events as string | undefined, '--events', 200);
    const seed = parseCount(values.seed as string | undefined, '--seed', 1);
    const story = parseCount(values.story as string | undefined, '--story', 0);
    const started = Date.now();
    const created = await seedSessions(ctx.home, {
      sessions,
      events,
      seed,
      onProgress: (done, total) => {
        if (Date.now() - started > 1000 || done === total) ctx.err(`seeding: ${done}/${total} sessions`);
      },
    });
    if (story > 0) created.push(await seedStorySession(ctx.home, { turns: story, seed }));
    if (values.changes) created.push(await seedChangesSession(ctx.home, 'changes'));
    for (const s of created) ctx.out(`${s.id}  ${s.name ?? '-'}`);
    ctx.out(`Seeded ${created.length} sessions into ${ctx.home.root} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return 0;
  },
};
